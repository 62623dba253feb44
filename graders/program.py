"""program: run a command with the agent's output on stdin; exit code 0 passes.

``command`` is an argv list or a string (split without a shell), resolved like
the script grader's. It gets the output on stdin and ``WAZA_ID``, ``WAZA_HINT``
and ``WAZA_WORKSPACE`` in its environment (no secret-like variables), and runs
in the workspace. Exit 0: pass, score 1; any other exit code: fail, score 0,
with the last line of its stderr (or stdout) as the reason. Killed by a signal
or running past ``timeout`` (default 60 s): a grader error, since a checker
that never answers has judged nothing.
"""

from __future__ import annotations

import sys
from typing import Any

from waza.protocol.records import GraderRequest, GraderResult

from ._commands import command_argv, last_line, run_command
from ._example import Example

SUMMARY = "Run a command with the output on stdin; exit code 0 passes (score 1), anything else fails."

DEFAULT_TIMEOUT = 60.0

EXAMPLE = Example(
    config={"command": ["grep", "-q", "-i", "hello"]},
    request={"output": "Hello, world!"},
    result={"pass": True, "score": 1.0},
)


class ProgramFailed(RuntimeError):
    """The program did not finish: the grade is an error."""


def check_config(config: dict[str, Any]) -> None:
    command_argv(config["command"], config, "command")


async def grade(request: GraderRequest) -> GraderResult:
    timeout = float(request.config.get("timeout", DEFAULT_TIMEOUT))
    env = {"WAZA_ID": request.id, "WAZA_HINT": request.hint or request.expected or "", "WAZA_WORKSPACE": request.cwd or ""}
    argv = command_argv(request.config["command"], request.config, "command")
    out = await run_command(argv, request, request.output.encode(), timeout, env)
    if out.timed_out:
        raise ProgramFailed(f"program timed out after {timeout:g}s")
    if out.signal is not None:
        raise ProgramFailed(f"program killed by signal {out.signal}")
    said = last_line(out.stderr_tail) or last_line(out.stdout.decode("utf-8", "replace"))
    passed = out.code == 0
    reason = f"program exited with code {out.code}" + (f": {said}" if said and not passed else "")
    return GraderResult(passed=passed, score=1.0 if passed else 0.0, reasoning=reason, details={"exitCode": out.code})


def main() -> None:
    from ._standalone import main as run

    run(sys.modules[__name__], "program")


if __name__ == "__main__":
    main()
