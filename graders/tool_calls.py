"""tool_calls: required and forbidden tool calls, by pattern, and a cap on their number.

Each ``required`` / ``forbidden`` entry is a regex (``{pattern: ...}`` or a
bare string), searched case-insensitively in each tool call's text: its name,
title and kind and every string or number in its input, joined by spaces (so
``"azd up"`` finds a shell call whose input is ``{"command": "azd up --no-prompt"}``
and ``"^bash"`` a call named bash). A required pattern passes when some call
matches, a forbidden one when none does; ``max_calls`` (0 means none allowed)
is one more check. Score = passed checks / all checks; pass = all passed.
Tool calls are the trajectory's ``tool_call`` steps, whatever their status.
"""

from __future__ import annotations

import re
import sys
from typing import Any

from waza.protocol.records import GraderRequest, GraderResult

from ._checks import Check, from_checks
from ._example import Example
from ._patterns import compile_one, require_any
from ._trajectory import tool_calls

SUMMARY = "Required / forbidden tool-call patterns (name and arguments) and max_calls."

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


def check_config(config: dict[str, Any]) -> None:
    require_any(config, ("required", "forbidden", "max_calls"), "tool_calls")
    _patterns(config, "required")
    _patterns(config, "forbidden")


def grade(request: GraderRequest) -> GraderResult:
    calls = tool_calls(request.trajectory)
    texts = [c.text() for c in calls]
    checks = []
    for p in _patterns(request.config, "required"):
        checks.append(Check(f"required {p.pattern!r}", any(p.search(t) for t in texts), "no tool call matches"))
    for p in _patterns(request.config, "forbidden"):
        hits = [calls[i].name for i, t in enumerate(texts) if p.search(t)]
        checks.append(Check(f"forbidden {p.pattern!r}", not hits, f"called by {', '.join(hits[:5])}"))
    if "max_calls" in request.config:
        limit = request.config["max_calls"]
        checks.append(Check(f"max_calls {limit}", len(calls) <= limit, f"{len(calls)} tool calls"))
    return from_checks(checks, details={"tool_calls": len(calls)})


def main() -> None:
    from ._standalone import main as run

    run(sys.modules[__name__], "tool_calls")


if __name__ == "__main__":
    main()
