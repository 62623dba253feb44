"""tool_constraint: tool calls that must happen (``expect_tools``) or must not (``reject_tools``).

An entry names a ``tool`` (a regex searched in the tool name or kind,
case-insensitively and unanchored, as in the original: ``bash`` also matches
``run_bash``; write ``^bash$`` for the exact name, ``.*`` for any) and may
narrow it with ``command_pattern`` (searched in the input's command:
``command``/``cmd``/``commandLine``/``script``/``args``), ``path_pattern``
(the input's path keys such as ``path``/``file_path``/``filePath`` and the
step's locations) and ``skill_pattern`` (``skill``/``name``); all given parts
must match the same call; a call without the field is matched as empty text,
as in the original (``.*`` matches it, ``pytest`` does not). Each
entry is one check: an expect entry passes when some call matches, a reject
entry when none does. Score = passed checks / all checks; pass = all passed.

An entry may also carry ``args``, the original's argument matchers
(:mod:`._arg_matchers`), which must all hold on the same call. ``allow_only``
(the original's allow-list) is one more check: every call must match one of
its entries, whose ``tool`` is an exact name (case-insensitive, not a regex:
``bash`` does not allow ``bashful``); an empty list allows no call at all.
"""

from __future__ import annotations

import re
import sys
from typing import Any

import msgspec

from waza.protocol.records import GraderRequest, GraderResult

from ._arg_matchers import check_args, failures
from ._checks import Check, from_checks
from ._example import Example
from ._patterns import compile_one, require_any
from ._trajectory import COMMAND_KEYS, SKILL_KEYS, ToolCall, tool_calls

SUMMARY = "Tools that must / must not / only may be called, narrowed by command, path, skill patterns and argument matchers."

EXAMPLE = Example(
    config={
        "expect_tools": [{"tool": "bash", "command_pattern": "pytest"}],
        "reject_tools": [{"tool": "edit|write", "path_pattern": r"^tests/"}],
    },
    request={
        "output": "Tests pass.",
        "trajectory": [
            {"type": "tool_call", "stepId": "s1", "timestamp": 1, "name": "edit", "input": {"path": "src/app.py"}},
            {"type": "tool_call", "stepId": "s2", "timestamp": 2, "name": "bash", "input": {"command": "python -m pytest -q"}},
        ],
    },
    result={"pass": True, "score": 1.0},
)


class Constraint(msgspec.Struct):
    """One ``expect_tools`` or ``reject_tools`` entry with its patterns compiled."""

    label: str
    tool: re.Pattern[str]
    command: re.Pattern[str] | None
    path: re.Pattern[str] | None
    skill: re.Pattern[str] | None
    args: dict[str, Any] = msgspec.field(default_factory=dict)
    #: allow_only: ``tool`` is the whole name, not a search.
    exact: bool = False

    def _named(self, call: ToolCall) -> bool:
        if self.exact:
            return self.tool.fullmatch(call.name) is not None
        return bool(self.tool.search(call.name) or (call.kind and self.tool.search(call.kind)))

    def matches(self, call: ToolCall) -> bool:
        if not self._named(call) or failures(self.args, call.input):
            return False
        parts = (
            (self.command, call.input_field(COMMAND_KEYS)),
            (self.path, call.paths()),
            (self.skill, call.input_field(SKILL_KEYS)),
        )
        # a call without the field is searched as empty text, as in the original (so ".*" matches it)
        return all(p is None or any(p.search(v) for v in values or [""]) for p, values in parts)


def _constraints(config: dict[str, Any], key: str) -> list[Constraint]:
    out = []
    for i, entry in enumerate(config.get(key, [])):
        where = f"{key}[{i}]"
        label = ", ".join(f"{k}={v!r}" for k, v in entry.items())
        exact = key == "allow_only"
        check_args(entry.get("args", {}), f"{where}.args")
        out.append(
            Constraint(
                label,
                re.compile(re.escape(entry["tool"]), re.IGNORECASE)
                if exact
                else compile_one(entry["tool"], f"{where}.tool", re.IGNORECASE),
                _optional(entry, where, "command_pattern"),
                _optional(entry, where, "path_pattern"),
                _optional(entry, where, "skill_pattern"),
                args=entry.get("args", {}),
                exact=exact,
            )
        )
    return out


def _optional(entry: dict[str, Any], where: str, name: str) -> re.Pattern[str] | None:
    """The pattern of an optional field of a constraint, or None when the field is absent."""
    return compile_one(entry[name], f"{where}.{name}", re.IGNORECASE) if name in entry else None


def check_config(config: dict[str, Any]) -> None:
    if "allow_only" not in config:  # an empty allow-list is a constraint: no call allowed
        require_any(config, ("expect_tools", "reject_tools", "allow_only"), "tool_constraint")
    for key in ("expect_tools", "reject_tools", "allow_only"):
        _constraints(config, key)


def grade(request: GraderRequest) -> GraderResult:
    calls = tool_calls(request.trajectory)
    checks = []
    for c in _constraints(request.config, "expect_tools"):
        checks.append(Check(f"expect {c.label}", any(c.matches(call) for call in calls), "no tool call matches"))
    for c in _constraints(request.config, "reject_tools"):
        hits = [call.text()[:80] for call in calls if c.matches(call)]
        checks.append(Check(f"reject {c.label}", not hits, f"matched {hits[0]!r}" if hits else ""))
    if "allow_only" in request.config:
        allowed = _constraints(request.config, "allow_only")
        outside = [call.text()[:80] for call in calls if not any(c.matches(call) for c in allowed)]
        checks.append(
            Check("allow_only", not outside, f"{len(outside)} call(s) not allowed, first {outside[0]!r}" if outside else "")
        )
    return from_checks(checks, details={"tool_calls": len(calls)})


def main() -> None:
    from ._standalone import main as run

    run(sys.modules[__name__], "tool_constraint")


if __name__ == "__main__":
    main()
