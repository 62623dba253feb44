"""skill_invocation: the skills the agent invoked against a required sequence.

Skills come from the trajectory: ``event`` steps of kind ``skill.invoked``
(name in ``data.name``) when there are any, else tool calls named ``skill``
(name in ``input.skill``); agents that report both for one invocation are not
counted twice; a ``skill.invoked`` event with an empty name but a ``path``
counts (as the original does) as an invocation named ``""``. Modes
(``mode``, required, as in the original): ``exact_match``, ``in_order``
(required skills as a subsequence) and ``any_order`` (each required skill at
least as often as required).

Score = F1 of precision = TP / len(invoked) and recall = TP / len(required)
(TP = required skills found, with multiplicity). ``allow_extra`` (default
true): when false and more skills were invoked than required, the score is
F1 x (1 - 0.6 x extra / invoked), where extra = invoked - required counts, as
in the original; the verdict is the mode's alone, so extras lower the score
but never fail the grade.

``forbidden_skills`` (the original's current key; a config may have only
these): any of them invoked fails the grade, and the score is multiplied by
the share of forbidden skills that were not invoked (a forbidden-only config
scores that share alone).
"""

from __future__ import annotations

import sys
from typing import Any

from waza.protocol.records import GraderRequest, GraderResult

from ._example import Example
from ._sequences import SKILL_MODES, match, metrics, mode_of
from ._trajectory import skills

SUMMARY = "Invoked skills (skill events or skill tool calls) against a required sequence; score = F1, extras penalised."

#: The largest share of the score extras can take when ``allow_extra`` is false.
EXTRA_PENALTY = 0.6

EXAMPLE = Example(
    config={"mode": "in_order", "required_skills": ["azure-prepare", "azure-deploy"], "allow_extra": True},
    request={
        "output": "Deployed.",
        "trajectory": [
            {
                "type": "event",
                "stepId": f"s{i}",
                "timestamp": i,
                "name": "skill.invoked",
                "extra": {"kind": "skill.invoked", "data": {"name": name}},
            }
            for i, name in enumerate(["azure-prepare", "azure-validate", "azure-deploy"], 1)
        ],
    },
    result={"pass": True, "score": 0.8},
)


def check_config(config: dict[str, Any]) -> None:
    if config.get("required_skills"):
        mode_of(config, "mode", SKILL_MODES)


def _forbidden(result: GraderResult, forbidden: list[str], invoked: list[str]) -> GraderResult:
    """``result`` with the forbidden skills applied: failed if one was invoked, score scaled by those not invoked."""
    hit = [s for s in forbidden if s in invoked]
    share = 1 - len(hit) / len(forbidden)
    why = f"forbidden skills invoked: {hit}" if hit else f"no forbidden skill {forbidden} invoked"
    return GraderResult(
        passed=result.passed and not hit,
        score=round((result.score or 0.0) * share, 6),
        reasoning=f"{result.reasoning}; {why}" if result.reasoning else why,
        details={**(result.details or {}), "forbidden": forbidden, "forbidden_invoked": hit},
    )


def grade(request: GraderRequest) -> GraderResult:
    forbidden = list(request.config.get("forbidden_skills", []))
    if not request.config.get("required_skills"):
        invoked, source = skills(request.trajectory)
        base = GraderResult(passed=True, score=1.0, reasoning="", details={"invoked": invoked, "source": source})
        return _forbidden(base, forbidden, invoked)
    result = _required(request)
    return _forbidden(result, forbidden, (result.details or {}).get("invoked", [])) if forbidden else result


def _required(request: GraderRequest) -> GraderResult:
    mode = mode_of(request.config, "mode", SKILL_MODES)
    required = list(request.config["required_skills"])
    allow_extra = request.config.get("allow_extra", True)
    invoked, source = skills(request.trajectory)
    m = match(required, invoked, mode)
    extra = len(invoked) - len(required)
    score = m.f1
    if not allow_extra and extra > 0:
        score = m.f1 * (1 - EXTRA_PENALTY * extra / len(invoked))
    passed = m.matched
    why = "matches" if m.matched else "does not match"
    if not allow_extra and extra > 0:
        why += f" with {extra} extra invocation(s) (allow_extra is false: score reduced)"
    return GraderResult(
        passed=passed,
        score=round(score, 6),
        reasoning=f"skills {invoked} {why} required {required} ({mode}); F1 {m.f1:.2f}, score {score:.2f}",
        details={
            "mode": mode,
            "required": required,
            "invoked": invoked,
            "source": source,
            "extra": max(extra, 0),
            "missing": m.missing,
            **metrics(m),
        },
    )


def main() -> None:
    from ._standalone import main as run

    run(sys.modules[__name__], "skill_invocation")


if __name__ == "__main__":
    main()
