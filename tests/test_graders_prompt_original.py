"""The prompt grader in the original waza's form: ``prompt`` instructions, the judge's pass/fail calls.

From the original's docs/graders/prompt.md ("Result semantics") and
internal/graders/prompt_grader_test.go: score = passes / (passes + fails);
pass only with at least one pass call and no fail call; no call at all fails
with score 0. The judge here is a real program (``command``) printing a reply.
"""

from __future__ import annotations

import json
import sys

import pytest

from waza.protocol.errors import ConfigError
from waza.protocol.records import GraderRequest
from waza.runner.grading.build import make_runner
from waza.runner.grading.grader_specs import GraderSpec

from .graders_support import in_process


def judge(*tools: str) -> list[str]:
    calls = [{"tool": t, "description": "check", "reason": "seen"} for t in tools]
    reply = json.dumps({"reasoning": "looked at the answer", "calls": calls})
    return [sys.executable, "-c", f"import sys; sys.stdin.read(); print({reply!r})"]


P, F = "set_waza_grade_pass", "set_waza_grade_fail"


@pytest.mark.parametrize(
    "calls,passed,score",
    [
        ((P,), True, 1.0),  # one final pass call
        ((F,), False, 0.0),  # one final fail call
        ((P, P, F), False, 2 / 3),  # one call per criterion: partial credit, any fail fails
        ((), False, 0.0),  # no call: fail, score 0
    ],
)
def test_the_judges_calls_decide(calls, passed, score):
    config = {
        "prompt": "If the answer says done, call set_waza_grade_pass, else set_waza_grade_fail.",
        "model": "judge-model",
        "continue_session": False,
        "mode": "independent",
        "command": judge(*calls),
    }
    grade = in_process("prompt", config, GraderRequest(input="Say done.", output="done"))
    assert (grade.passed, grade.score) == (passed, pytest.approx(score))
    assert grade.details["passes"] + grade.details["fails"] == len(calls)


@pytest.mark.parametrize(
    "config,message",
    [
        ({"prompt": "x", "rubric": "y"}, "is valid under each of"),
        ({"prompt": "x", "threshold": 0.5}, "belongs to the rubric form"),
        ({"model": "m"}, "is not valid under any of the given schemas"),
    ],
)
def test_prompt_and_rubric_forms_do_not_mix(config, message):
    with pytest.raises(ConfigError) as info:
        make_runner(GraderSpec(name="prompt", kind="builtin", target="prompt", config=config))
    assert message in str(info.value)
