"""action_sequence: the agent's tool calls against an expected sequence of tool names.

Modes (``matching_mode``, required, as in the original): ``exact_match`` needs
the same names in the same order and number; ``in_order_match`` needs the
expected names as a subsequence (extras anywhere allowed); ``any_order_match``
needs each expected name at least as often as expected.
Names are compared exactly with each tool call's name.

Score = F1 of precision = TP / len(actual) and recall = TP / len(expected),
where TP counts expected names found, with multiplicity; pass depends on the
mode only. Example: expected [bash, edit], actual [bash, view, edit,
report_progress] in order: pass, precision 0.5, recall 1, score 0.667.
"""

from __future__ import annotations

import sys
from typing import Any

from waza.protocol.records import GraderRequest, GraderResult

from ._example import Example
from ._sequences import ACTION_MODES, match, metrics, mode_of
from ._trajectory import tool_names

SUMMARY = "Tool-call names against an expected sequence (exact / in_order / any_order); score = F1."

EXAMPLE = Example(
    config={"matching_mode": "in_order_match", "expected_actions": ["bash", "edit"]},
    request={
        "output": "Done.",
        "trajectory": [
            {"type": "tool_call", "stepId": f"s{i}", "timestamp": i, "name": name}
            for i, name in enumerate(["bash", "view", "edit", "report_progress"], 1)
        ],
    },
    result={"pass": True, "score": 0.666667},
)


def check_config(config: dict[str, Any]) -> None:
    mode_of(config, "matching_mode", ACTION_MODES)


def grade(request: GraderRequest) -> GraderResult:
    mode = mode_of(request.config, "matching_mode", ACTION_MODES)
    expected = list(request.config["expected_actions"])
    actual = tool_names(request.trajectory)
    m = match(expected, actual, mode)
    verdict = "matches" if m.matched else "does not match"
    return GraderResult(
        passed=m.matched,
        score=round(m.f1, 6),
        reasoning=f"tool calls {actual} {verdict} expected {expected} ({mode}); "
        f"precision {m.precision:.2f}, recall {m.recall:.2f}, F1 {m.f1:.2f}",
        details={"mode": mode, "expected": expected, "actual": actual, **metrics(m)},
    )


def main() -> None:
    from ._standalone import main as run

    run(sys.modules[__name__], "action_sequence")


if __name__ == "__main__":
    main()
