"""tool_calls: required and forbidden tool calls, by pattern, and a cap on their number.

Each ``required`` / ``forbidden`` entry is a regex (``{pattern: ...}`` or a
bare string), searched case-insensitively in each tool call's text: its name,
title and kind and every string or number in its input, joined by spaces (so
``"azd up"`` finds a shell call whose input is ``{"command": "azd up --no-prompt"}``
and ``"^bash"`` a call named bash). A required pattern passes when some call
matches, a forbidden one when none does; ``max_calls`` (0 means none allowed)
is one more check. Score = passed checks / all checks; pass = all passed.
Tool calls are the trajectory's ``tool_call`` steps, whatever their status.

The original waza's keys are read as it reads them: ``required_tools`` and
``forbidden_tools`` are exact tool names; ``min_calls`` / ``max_calls`` bound
the number of calls; each ``expect`` entry passes when one call's name matches
its ``tool`` regex (case-insensitive search) and every ``args`` matcher holds
on that same call (:mod:`._arg_matchers`). Each is one check.
"""

from __future__ import annotations

import re
import sys
from typing import Any

from waza.protocol.errors import ConfigError
from waza.protocol.records import GraderRequest, GraderResult

from ._arg_matchers import check_args, failures
from ._checks import Check, from_checks
from ._example import Example
from ._patterns import compile_one, require_any
from ._trajectory import ToolCall, tool_calls

SUMMARY = "Required / forbidden tool calls (patterns or exact names), min/max_calls, expected calls with argument matchers."

EXAMPLE = Example(
    config={"required": [{"pattern": "git commit"}], "forbidden": [{"pattern": "rm -rf"}, "sudo"], "max_calls": 5},
    request={
        "output": "Committed.",
        "trajectory": [
            {"type": "tool_call", "stepId": "s1", "timestamp": 1, "name": "bash", "input": {"command": "git add -A"}},
            {"type": "tool_call", "stepId": "s2", "timestamp": 2, "name": "bash", "input": {"command": "git commit -m fix"}},
        ],
    },
    result={"pass": True, "score": 1.0},
)


def _patterns(config: dict[str, Any], key: str) -> list[re.Pattern[str]]:
    out = []
    for i, entry in enumerate(config.get(key, [])):
        text = entry if isinstance(entry, str) else entry["pattern"]
        out.append(compile_one(text, f"{key}[{i}]", re.IGNORECASE))
    return out


KEYS = ("required", "forbidden", "required_tools", "forbidden_tools", "min_calls", "max_calls", "expect")


def check_config(config: dict[str, Any]) -> None:
    require_any(config, KEYS, "tool_calls")
    _patterns(config, "required")
    _patterns(config, "forbidden")
    if config.get("min_calls", 0) > config.get("max_calls", float("inf")):
        raise ConfigError(f"tool_calls: min_calls ({config['min_calls']}) is more than max_calls ({config['max_calls']})")
    for i, entry in enumerate(config.get("expect", [])):
        compile_one(entry["tool"], f"expect[{i}].tool", re.IGNORECASE)
        check_args(entry.get("args", {}), f"expect[{i}].args")


def _expectation(entry: dict[str, Any], calls: list[ToolCall]) -> Check:
    """One ``expect`` entry: some call named like ``tool`` with all its ``args`` matchers holding."""
    name = re.compile(entry["tool"], re.IGNORECASE)
    args = entry.get("args", {})
    named = [c for c in calls if name.search(c.name)]
    why = "no tool call with a matching name"
    for call in named:
        failed = failures(args, call.input)
        if not failed:
            return Check(f"expect {entry['tool']!r}", True, "")
        why = "; ".join(failed)
    return Check(f"expect {entry['tool']!r}", False, why)


def grade(request: GraderRequest) -> GraderResult:
    calls = tool_calls(request.trajectory)
    texts = [c.text() for c in calls]
    checks = []
    for p in _patterns(request.config, "required"):
        checks.append(Check(f"required {p.pattern!r}", any(p.search(t) for t in texts), "no tool call matches"))
    for p in _patterns(request.config, "forbidden"):
        hits = [calls[i].name for i, t in enumerate(texts) if p.search(t)]
        checks.append(Check(f"forbidden {p.pattern!r}", not hits, f"called by {', '.join(hits[:5])}"))
    names = {c.name for c in calls}
    for tool in request.config.get("required_tools", []):
        checks.append(Check(f"required tool {tool!r}", tool in names, "was not called"))
    for tool in request.config.get("forbidden_tools", []):
        checks.append(Check(f"forbidden tool {tool!r}", tool not in names, "was called"))
    if "min_calls" in request.config:
        least = request.config["min_calls"]
        checks.append(Check(f"min_calls {least}", len(calls) >= least, f"{len(calls)} tool calls"))
    if "max_calls" in request.config:
        limit = request.config["max_calls"]
        checks.append(Check(f"max_calls {limit}", len(calls) <= limit, f"{len(calls)} tool calls"))
    checks += [_expectation(entry, calls) for entry in request.config.get("expect", [])]
    return from_checks(checks, details={"tool_calls": len(calls), "tools": sorted(names)})


def main() -> None:
    from ._standalone import main as run

    run(sys.modules[__name__], "tool_calls")


if __name__ == "__main__":
    main()
