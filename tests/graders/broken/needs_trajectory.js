#!/usr/bin/env node
// Broken on purpose (optional-absent): assumes every request has a trajectory, and crashes without one.
let data = "";
process.stdin.on("data", (c) => (data += c)).on("end", () => {
  const request = JSON.parse(data);
  const steps = request.trajectory.length;
  console.log(JSON.stringify({ pass: steps > 0, score: steps > 0 ? 1 : 0 }));
});
