"""behavior: limits on how the agent worked: tool calls, tokens, time, required and forbidden tools.

Each configured limit is one check; score = passed checks / all checks, pass =
all passed. A limit of 0 (or less) means "not set", as in the original, so
``max_tool_calls: 0`` checks nothing (use tool_calls ``max_calls: 0`` to forbid
every call). ``required_tools`` / ``forbidden_tools`` compare
tool names exactly (case-sensitive; no patterns: use tool_calls or
tool_constraint for those), one check per name. Tokens are the result's
``usage.totalTokens``, else input + output tokens; duration is
``timing.total`` (ms). When the agent reported no usage (or the result has no
timing), the token (duration) check counts as passed with the note "not
checked", as in the original; the details say which checks were not made.
"""

from __future__ import annotations

import sys
from typing import Any

from waza.protocol.errors import ConfigError
from waza.protocol.records import GraderRequest, GraderResult

from ._checks import Check, from_checks
from ._example import Example
from ._trajectory import tool_names

SUMMARY = "Limits on tool calls, tokens and duration; tools that must or must not be called (exact names)."

KEYS = ("max_tool_calls", "max_tokens", "max_duration_ms", "required_tools", "forbidden_tools")

EXAMPLE = Example(
    config={"max_tool_calls": 10, "max_tokens": 5000, "required_tools": ["view"], "forbidden_tools": ["bash", "edit"]},
    request={
        "output": "sample.py defines a greet function.",
        "trajectory": [{"type": "tool_call", "stepId": "s1", "timestamp": 5, "name": "view", "input": {"path": "sample.py"}}],
        "usage": {"inputTokens": 1200, "outputTokens": 80},
    },
    result={"pass": True, "score": 1.0},
)


def check_config(config: dict[str, Any]) -> None:
    if not any(config.get(k, 0) > 0 for k in KEYS[:3]) and not config.get("required_tools") and not config.get("forbidden_tools"):
        raise ConfigError("grader 'behavior' config: give at least one rule (a limit above 0, required_tools or forbidden_tools)")


def tokens_used(usage: dict[str, Any] | None) -> int | None:
    if not usage:
        return None
    if usage.get("totalTokens") is not None:
        return int(usage["totalTokens"])
    parts = [usage.get("inputTokens"), usage.get("outputTokens")]
    if all(p is None for p in parts):
        return None
    return sum(int(p) for p in parts if p is not None)


def _limit(name: str, limit: int, value: int | None, unit: str, missing: str) -> Check:
    if value is None:
        return Check(f"{name} {limit} (not checked: {missing})", True)
    return Check(f"{name} {limit}", value <= limit, f"{value} {unit}")


def grade(request: GraderRequest) -> GraderResult:
    config = request.config
    names = tool_names(request.trajectory)
    checks = []
    if config.get("max_tool_calls", 0) > 0:
        checks.append(_limit("max_tool_calls", config["max_tool_calls"], len(names), "tool calls", ""))
    if config.get("max_tokens", 0) > 0:
        used = tokens_used(request.usage)
        checks.append(_limit("max_tokens", config["max_tokens"], used, "tokens", "the agent reported no token usage"))
    if config.get("max_duration_ms", 0) > 0:
        total = (request.timing or {}).get("total")
        checks.append(_limit("max_duration_ms", config["max_duration_ms"], total, "ms", "the result has no timing"))
    for tool in config.get("required_tools", []):
        checks.append(Check(f"required tool {tool!r}", tool in names, "never called"))
    for tool in config.get("forbidden_tools", []):
        count = names.count(tool)
        checks.append(Check(f"forbidden tool {tool!r}", count == 0, f"called {count} time(s)"))
    return from_checks(checks, details={"tool_calls": len(names), "tokens": tokens_used(request.usage)})


def main() -> None:
    from ._standalone import main as run

    run(sys.modules[__name__], "behavior")


if __name__ == "__main__":
    main()
