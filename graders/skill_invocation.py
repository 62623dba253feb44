"""skill_invocation: the skills the agent invoked against a required sequence.

Skills come from the trajectory: ``event`` steps of kind ``skill.invoked``
(name in ``data.name``) when there are any, else tool calls named ``skill``
(name in ``input.skill``); agents that report both for one invocation are not
counted twice. Modes (``mode``, also spelled ``matching_mode``): ``exact_match``,
``in_order`` (required skills as a subsequence) and ``any_order`` (each
required skill at least as often as required); the ``*_match`` spellings are
accepted too. Default: ``in_order``.

Score = F1 of precision = TP / len(invoked) and recall = TP / len(required)
(TP = required skills found, with multiplicity). ``allow_extra`` (default
true): when false, invocations beyond the required ones fail the grade and
cost 0.1 of the score each (score = max(0, F1 - 0.1 x extras)). Pass = the
mode matches (and no extras when they are not allowed).
"""

from __future__ import annotations

import sys
from typing import Any

from waza.protocol.records import GraderRequest, GraderResult

from ._example import Example
from ._sequences import match, metrics, mode_of
from ._trajectory import skills

SUMMARY = "Invoked skills (skill events or skill tool calls) against a required sequence; score = F1, extras penalised."

EXTRA_PENALTY = 0.1

EXAMPLE = Example(
    config={"mode": "in_order", "required_skills": ["azure-prepare", "azure-deploy"], "allow_extra": True},
    request={
        "output": "Deployed.",
        "trajectory": [
            {"type": "event", "stepId": f"s{i}", "timestamp": i, "name": "skill.invoked",
             "extra": {"kind": "skill.invoked", "data": {"name": name}}}
            for i, name in enumerate(["azure-prepare", "azure-validate", "azure-deploy"], 1)
        ],
    },
    result={"pass": True, "score": 0.8},
)


def check_config(config: dict[str, Any]) -> None:
    mode_of(config, "mode", "matching_mode")


def grade(request: GraderRequest) -> GraderResult:
    mode = mode_of(request.config, "mode", "matching_mode")
    required = list(request.config["required_skills"])
    allow_extra = request.config.get("allow_extra", True)
    invoked, source = skills(request.trajectory)
    m = match(required, invoked, mode)
    score = m.f1 if allow_extra else max(0.0, m.f1 - EXTRA_PENALTY * m.extra)
    passed = m.matched and (allow_extra or m.extra == 0)
    why = "matches" if m.matched else "does not match"
    if m.matched and not passed:
        why = f"has {m.extra} extra invocation(s), not allowed"
    return GraderResult(
        passed=passed,
        score=round(score, 6),
        reasoning=f"skills {invoked} {why} required {required} ({mode}); F1 {m.f1:.2f}, score {score:.2f}",
        details={"mode": mode, "required": required, "invoked": invoked, "source": source, "extra": m.extra,
                 "missing": m.missing, **metrics(m)},
    )


def main() -> None:
    from ._standalone import main as run

    run(sys.modules[__name__], "skill_invocation")


if __name__ == "__main__":
    main()
