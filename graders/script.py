"""script: run an external grader script that speaks the JSON protocol.

``script`` is a file (relative to ``base_dir``, else the current directory; a
``.py`` file runs with waza's Python, anything else must be executable) or a
command on PATH; ``args`` are appended. The script gets the request on stdin
(every GraderRequest field plus the waza reference's context names:
``transcript``, ``tool_calls``, ``duration_ms``, ``outcome``, ``errors``) and
must print one result: ``{pass, score, reasoning}`` or the reference's
``{passed, score, message, details}``. It runs in the workspace without
secret-like environment variables. A non-zero exit, no or bad JSON, a score
outside [0, 1], or running past ``timeout`` (default 60 s) is a grader error.
"""

from __future__ import annotations

import sys
from typing import Any

import orjson

from waza.protocol.grader_protocol import parse_result_bytes
from waza.protocol.records import GraderRequest, GraderResult

from ._commands import command_argv, last_line, run_command
from ._context import context
from ._example import Example

SUMMARY = "Run an external grader script: request JSON on stdin, result JSON on stdout."

DEFAULT_TIMEOUT = 60.0

EXAMPLE = Example(
    config={
        "script": "python3",
        "args": [
            "-c",
            "import json,sys; c=json.load(sys.stdin); ok='success' in c['output']; "
            "print(json.dumps({'passed': ok, 'score': float(ok), 'message': 'checked'}))",
        ],
    },
    request={"output": "Deployment success."},
    result={"pass": True, "score": 1.0},
)


class ScriptFailed(RuntimeError):
    """The script did not give a usable answer: the grade is an error."""


def _argv(config: dict[str, Any]) -> list[str]:
    return command_argv([config["script"], *config.get("args", [])], config, "script")


def check_config(config: dict[str, Any]) -> None:
    _argv(config)


async def grade(request: GraderRequest) -> GraderResult:
    timeout = float(request.config.get("timeout", DEFAULT_TIMEOUT))
    payload = orjson.dumps({**request.to_dict(), **context(request)})
    out = await run_command(_argv(request.config), request, payload, timeout)
    if out.timed_out:
        raise ScriptFailed(f"script timed out after {timeout:g}s")
    if out.code != 0:
        why = f"signal {out.signal}" if out.signal is not None else f"code {out.code}"
        raise ScriptFailed(f"script exited with {why}: {last_line(out.stderr_tail)}".rstrip(": "))
    return parse_result_bytes(out.stdout)


def main() -> None:
    from ._standalone import main as run

    run(sys.modules[__name__], "script")


if __name__ == "__main__":
    main()
