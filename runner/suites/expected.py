"""A task's ``expected:`` block as built-in graders, so no key of it is dead config.

The reference format carries these keys, but its own runner never checked
them. Here each becomes one grader named ``expected_<key>`` that shows up in
the trial's grades like any other:

- ``output_contains``: a ``text`` grader, every string must appear (case-insensitive).
- ``output_not_contains``: a ``text`` grader, no string may appear (case-insensitive).
- ``output_contains_any``: a ``regex`` grader, at least one must appear (case-insensitive).
- ``outcomes: [{type: task_completed}]``: a ``code`` grader, the agent reported no
  error and gave a non-empty answer; other outcome types of the original are
  reported as unsupported (see ``unsupported``), and only when a
  ``task_completed`` entry is present is the grader added.
- ``behavior``: a ``behavior`` grader; ``max_response_time_ms`` is its ``max_duration_ms``.
"""

from __future__ import annotations

import re
from typing import Any

from waza.runner.grading.grader_specs import Builtin

#: expected.behavior key -> behavior grader config key.
BEHAVIOR_KEYS = {
    "max_tool_calls": "max_tool_calls",
    "max_response_time_ms": "max_duration_ms",
    "max_tokens": "max_tokens",
    "required_tools": "required_tools",
    "forbidden_tools": "forbidden_tools",
}

TASK_COMPLETED = ["len(agent_errors) == 0", "len(output.strip()) > 0"]


def expected_graders(expected: dict[str, Any]) -> list[tuple[str, Builtin]]:
    """(the expected key it came from, the grader) for each key present, in a fixed order."""
    out: list[tuple[str, Builtin]] = []
    if "output_contains" in expected:
        out.append(("output_contains", _spec("output_contains", "text", {"contains": list(expected["output_contains"])})))
    if "output_not_contains" in expected:
        out.append(
            ("output_not_contains", _spec("output_not_contains", "text", {"not_contains": list(expected["output_not_contains"])}))
        )
    if "output_contains_any" in expected:
        either = "|".join(re.escape(s) for s in expected["output_contains_any"])
        out.append(
            ("output_contains_any", _spec("output_contains_any", "regex", {"must_match": [f"(?:{either})"], "flags": "i"}))
        )
    if any(o.get("type") == "task_completed" for o in expected.get("outcomes", [])):
        out.append(("outcomes", _spec("outcomes", "code", {"assertions": list(TASK_COMPLETED)})))
    if "behavior" in expected:
        config = {BEHAVIOR_KEYS[k]: v for k, v in expected["behavior"].items() if k in BEHAVIOR_KEYS}
        if config:
            out.append(("behavior", _spec("behavior", "behavior", config)))
    return out


def _spec(key: str, kind: str, config: dict[str, Any]) -> Builtin:
    return Builtin(name=f"expected_{key}", grader=kind, config=config)
