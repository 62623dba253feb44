"""program: run a command with the agent's output on stdin; exit code 0 passes.

``command`` is an argv list or a string (split without a shell), resolved like
the script grader's; with the original waza's ``args`` list, ``command`` is the
program alone (not split) and ``args`` its arguments. It gets the output on
stdin and ``WAZA_ID``, ``WAZA_HINT``, ``WAZA_WORKSPACE`` and the original's
``WAZA_WORKSPACE_DIR`` (the same directory) in its environment (no
secret-like variables), and runs in the workspace. Exit 0: pass, score 1; any
other exit code: fail, score 0, with the last line of its stderr (or stdout)
as the reason. Killed by a signal or running past ``timeout`` (default 30 s,
as the original): fail, score 0, as in the original, with the reason.
"""

from __future__ import annotations

import sys
from typing import Any

from waza.protocol.errors import ConfigError
from waza.protocol.records import GraderRequest, GraderResult

from ._commands import command_argv, last_line, run_command
from ._example import Example

SUMMARY = "Run a command with the output on stdin; exit code 0 passes (score 1), anything else fails."

DEFAULT_TIMEOUT = 30.0

EXAMPLE = Example(
    config={"command": ["grep", "-q", "-i", "hello"]},
    request={"output": "Hello, world!"},
    result={"pass": True, "score": 1.0},
)


def argv_of(config: dict[str, Any]) -> list[str]:
    """The command line: ``command`` (+ ``args``, the original's form, where ``command`` is one program)."""
    if "args" in config:
        if not isinstance(config["command"], str):
            raise ConfigError("command: with args, give command as one program name or path")
        return command_argv([config["command"], *config["args"]], config, "command")
    return command_argv(config["command"], config, "command")


def check_config(config: dict[str, Any]) -> None:
    argv_of(config)


async def grade(request: GraderRequest) -> GraderResult:
    timeout = float(request.config.get("timeout") or DEFAULT_TIMEOUT)
    workspace = request.cwd or ""
    env = {
        "WAZA_ID": request.id,
        "WAZA_HINT": request.hint or request.expected or "",
        "WAZA_WORKSPACE": workspace,
        "WAZA_WORKSPACE_DIR": workspace,
    }
    out = await run_command(argv_of(request.config), request, request.output.encode(), timeout, env)
    if out.timed_out:
        return GraderResult(
            passed=False, score=0.0, reasoning=f"program timed out after {timeout:g}s", details={"timedOut": True}
        )
    if out.signal is not None:
        return GraderResult(
            passed=False, score=0.0, reasoning=f"program killed by signal {out.signal}", details={"signal": out.signal}
        )
    said = last_line(out.stderr_tail) or last_line(out.stdout.decode("utf-8", "replace"))
    passed = out.code == 0
    reason = f"program exited with code {out.code}" + (f": {said}" if said and not passed else "")
    return GraderResult(passed=passed, score=1.0 if passed else 0.0, reasoning=reason, details={"exitCode": out.code})


def main() -> None:
    from ._standalone import main as run

    run(sys.modules[__name__], "program")


if __name__ == "__main__":
    main()
