#!/usr/bin/env node
// Pass when the output contains the hint. Works one-shot and as a worker (worker:./contains_hint.js).
const lines = require("readline").createInterface({ input: process.stdin });

lines.on("line", (line) => {
  if (!line.trim()) return;
  const request = JSON.parse(line);
  const hint = (request.hint || "").toLowerCase();
  let answer;
  if (!hint) {
    answer = { error: "the prompt has no hint to look for" }; // an error grade; the worker goes on
  } else {
    const found = (request.output || "").toLowerCase().includes(hint);
    answer = { pass: found, score: found ? 1 : 0, reasoning: `hint ${found ? "found" : "missing"}` };
  }
  process.stdout.write(JSON.stringify(answer) + "\n"); // exactly one line per request
});
