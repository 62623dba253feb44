// Runs an acp-harness-style grader module (`export const grade = async (input) => result`) as a
// stdin/stdout grader: one JSON request in, the module's result as one JSON object out.
// Started by waza under Bun, Node or tsx (whichever can load the module); a throw or a missing
// `grade` export is a grader error (exit 1, the reason on stderr).
import { pathToFileURL } from "node:url";

const chunks = [];
for await (const chunk of process.stdin) chunks.push(chunk);
const request = JSON.parse(Buffer.concat(chunks).toString("utf8"));
const mod = await import(pathToFileURL(process.argv[2]).href);
const grade = typeof mod.grade === "function" ? mod.grade : mod.default?.grade ?? mod.default;
if (typeof grade !== "function") {
  process.stderr.write(`${process.argv[2]} exports no grade function\n`);
  process.exit(1);
}
const result = await grade(request);
process.stdout.write(JSON.stringify(result) + "\n");
