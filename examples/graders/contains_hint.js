#!/usr/bin/env node
// Pass when the output contains the hint. Works one-shot and as a worker (worker:./contains_hint.js).
function grade(request) {
  const hint = (request.hint || "").toLowerCase();
  if (!hint) return { error: "the prompt has no hint to look for" }; // an error grade; a worker goes on
  const found = (request.output || "").toLowerCase().includes(hint);
  return { pass: found, score: found ? 1 : 0, reasoning: `hint ${found ? "found" : "missing"}` };
}

require("readline").createInterface({ input: process.stdin }).on("line", (line) => {
  let answer;
  try {
    const request = JSON.parse(line);
    answer = { ...grade(request), requestId: request.requestId }; // worker mode: every answer echoes requestId
  } catch (e) { answer = { error: `bad request: ${e.message}` }; }
  process.stdout.write(JSON.stringify(answer) + "\n"); // exactly one line per request
});
