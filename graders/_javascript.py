"""The isolated evaluator of the ``code`` grader's JavaScript assertions (``language: javascript``).

Node runs the evaluator below with ``-e`` under its permission model (no file
system, no child processes, no workers) and with code generation from strings
disabled (no ``eval``/``Function`` in any realm, which closes the usual
``this.constructor.constructor`` escape). The context is parsed from JSON
*inside* a fresh ``vm`` context with a null-prototype global, so assertions
never touch an object of the evaluator's realm; each assertion runs with a vm
timeout, and error messages are formatted inside the context too. An
assertion that runs out of time stops the evaluator with ``{"error": "why"}``:
a timeout says nothing about the agent's output, so it is an *error* grade.
"""

from __future__ import annotations

import functools
import shutil
import subprocess

from waza.protocol.errors import ConfigError

EVALUATOR = r"""
const vm = require('vm');
const chunks = [];
process.stdin.on('data', (c) => chunks.push(c));
process.stdin.on('end', () => {
  const req = JSON.parse(Buffer.concat(chunks).toString('utf8'));
  const sandbox = Object.create(null);
  sandbox.__json = JSON.stringify(req.context);
  const ctx = vm.createContext(sandbox, { codeGeneration: { strings: false, wasm: false } });
  const ms = Math.max(1, Math.floor(req.timeout * 1000));
  vm.runInContext(
    'for (const [k, v] of Object.entries(JSON.parse(__json))) globalThis[k] = v;' +
    'globalThis.__fmt = (e) => { try { return (e && e.name ? e.name + ": " : "") + String(e && e.message !== undefined ? e.message : e); } catch (_) { return "error"; } };',
    ctx, { timeout: ms });
  const results = [];
  for (const text of req.assertions) {
    const began = process.hrtime.bigint();
    try {
      // Truthiness is decided inside the context (under the timeout); a Promise is truthy but decides nothing.
      const value = vm.runInContext(
        '((v) => (v !== null && (typeof v === "object" || typeof v === "function") && typeof v.then === "function") ? "promise" : !!v)((' + text + '\n))',
        ctx, { timeout: ms, filename: 'assertion' });
      if (value === 'promise') results.push({ pass: false, error: 'assertion returned a Promise; assertions must be synchronous' });
      else results.push({ pass: value === true, error: null });
    } catch (err) {
      // Told by the clock, not by the error: what an assertion throws is its own object (a getter or
      // a Proxy would run its code here), and vm's timeout error is not one of this realm's Errors.
      // vm's watchdog runs on its own loop, whose cached clock can fire it a few ms before our own
      // clock reads ms (seen on a loaded machine): some slack (a tenth, at most 50 ms), so a timeout is never a plain fail.
      if (Number(process.hrtime.bigint() - began) / 1e6 >= ms - Math.min(50, ms / 10)) {
        process.stdout.write(JSON.stringify({ error: `assertion ${JSON.stringify(text.slice(0, 200))} did not finish within ${req.timeout}s` }));
        return;
      }
      let message = 'error';
      try {
        sandbox.__err = err;
        message = String(vm.runInContext('__fmt(__err)', ctx, { timeout: ms }));
      } catch (_) { message = 'assertion timed out or failed'; }
      results.push({ pass: false, error: message.slice(0, 500) });
    }
  }
  process.stdout.write(JSON.stringify({ results }));
});
"""


@functools.cache
def argv() -> list[str]:
    """The node command line; ConfigError when node is not installed."""
    node = shutil.which("node")
    if node is None:
        raise ConfigError("language 'javascript' needs node on PATH")
    version = subprocess.run([node, "--version"], capture_output=True, text=True, check=False).stdout.strip()
    major, minor = (int(x) for x in version.lstrip("v").split(".")[:2])
    permission = "--permission" if (major, minor) >= (23, 5) else "--experimental-permission"
    return [node, permission, "--disallow-code-generation-from-strings", "--max-old-space-size=256", "-e", EVALUATOR]
