"""code: assertions (Python expressions, or JavaScript) over the result context; score = passed / total.

Each assertion is an expression over ``output``, ``outcome``, ``transcript``,
``tool_calls``, ``errors`` and ``duration_ms`` in the original waza's shapes (see
``_context``), waza's own ``trajectory``, ``tool_steps`` and ``agent_errors``,
and ``input``, ``hint``, ``reference``, ``usage``, ``metadata`` and ``tool_errors``, with the
builtins ``len any all str int float bool list dict set tuple min max sum sorted
reversed enumerate zip range abs round map filter isinstance repr`` and ``re``
(its functions and flags). Generator expressions and comprehensions work
(``any(kw in output for kw in ['azure', 'deploy'])``). An assertion passes
when its value is truthy; one that raises fails with the exception in the
reasoning, and so does a Python assertion that does not parse (as the
original's evaluator grades it). Score = passed / total; pass = all passed;
no assertions at all pass with 1.0, as in the original.

Isolation: assertions never run in the runner's process. Python ones run in a
separate ``python -I`` process (see ``_sandbox``): no names or attributes
starting with ``_`` (a config error, found before anything runs), no file access, no imports, no new processes, 1 GiB of memory, and a
time limit (``timeout``, default 10 s, for all assertions together); running
out of time (Python or JavaScript) or memory is a grader *error*, not a fail. ``language: javascript`` runs
them in node (see ``_javascript``) with the same context (no ``re``: use
regex literals); JavaScript syntax errors are reported per assertion.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path
from typing import Any

import orjson

from waza.protocol.errors import ConfigError
from waza.protocol.io.process import run_once
from waza.protocol.records import GraderRequest, GraderResult

from . import _javascript
from ._checks import Check, from_checks
from ._context import context
from ._example import Example
from ._sandbox import problem

SUMMARY = "Python (or JavaScript) assertions over output, tool_calls, errors...; run isolated; score = passed / total."

DEFAULT_TIMEOUT = 10.0
#: Extra wall-clock time for the evaluator process to start and answer.
STARTUP_GRACE = 2.0
SANDBOX = str(Path(__file__).with_name("_sandbox.py"))

EXAMPLE = Example(
    config={
        "assertions": [
            "len(output) > 0",
            "any(kw in output.lower() for kw in ['azure', 'deploy'])",
            "len([c for c in tool_calls if c['name'] == 'bash']) == 1",
            "len(errors) == 0",
        ]
    },
    request={
        "output": "Deployed to Azure.",
        "trajectory": [{"type": "tool_call", "stepId": "s1", "timestamp": 3, "name": "bash", "input": {"command": "azd up"}}],
    },
    result={"pass": True, "score": 1.0},
)


class AssertionsFailedToRun(RuntimeError):
    """The evaluator did not answer (time limit, memory, crash): the grade is an error."""


def check_config(config: dict[str, Any]) -> None:
    if config.get("language", "python") == "javascript":
        _javascript.argv()
        return
    for i, text in enumerate(config.get("assertions", [])):
        why = None if _syntax_error(text) else problem(text)
        if why:
            raise ConfigError(f"assertions[{i}] {text!r}: {why}")


def _syntax_error(text: str) -> str | None:
    """Why a Python assertion does not parse (it then fails, as in the original), or None."""
    try:
        ast.parse(text.strip(), mode="eval")
    except SyntaxError as exc:
        return f"syntax error: {exc.msg}"
    return None


def _argv(language: str) -> list[str]:
    if language == "javascript":
        return _javascript.argv()
    return [sys.executable, "-I", SANDBOX]


async def grade(request: GraderRequest) -> GraderResult:
    language = request.config.get("language", "python")
    broken: dict[int, str] = {}
    if language == "python":
        broken = {i: why for i, text in enumerate(request.config.get("assertions", [])) if (why := _syntax_error(text))}
    assertions = [t for i, t in enumerate(request.config.get("assertions", [])) if i not in broken]
    if not assertions:
        return from_checks([Check(t, False, broken[i]) for i, t in enumerate(request.config.get("assertions", []))])
    timeout = float(request.config.get("timeout", DEFAULT_TIMEOUT))
    payload = orjson.dumps({"assertions": assertions, "context": context(request), "timeout": timeout})
    out = await run_once(
        _argv(language), stdin=payload, env={"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"}, timeout=timeout + STARTUP_GRACE
    )
    if out.timed_out or out.signal is not None:
        raise AssertionsFailedToRun(f"assertions did not finish within {timeout:g}s (or ran out of memory)")
    try:
        answer = orjson.loads(out.stdout)
        if isinstance(answer, dict) and isinstance(answer.get("error"), str):  # timed out or out of memory
            raise AssertionsFailedToRun(answer["error"])
        results = answer["results"]
    except (orjson.JSONDecodeError, KeyError, TypeError):
        tail = out.stderr_tail.strip().splitlines()[-1:] or ["no output"]
        raise AssertionsFailedToRun(f"the {language} evaluator exited with code {out.code}: {tail[0]}") from None
    answers = iter(zip(assertions, results, strict=True))
    checks = []
    for i, text in enumerate(request.config.get("assertions", [])):
        if i in broken:
            checks.append(Check(text, False, broken[i]))
        else:
            _, r = next(answers)
            checks.append(Check(text, r["pass"], r["error"] or "was false"))
    return from_checks(checks)


def main() -> None:
    from ._standalone import main as run

    run(sys.modules[__name__], "code")


if __name__ == "__main__":
    main()
