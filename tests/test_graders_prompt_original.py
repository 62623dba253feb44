"""The prompt grader in the original waza's form: ``prompt`` instructions, the judge's pass/fail calls.

From the original's docs/graders/prompt.md ("Result semantics") and
internal/graders/prompt_grader_test.go: score = passes / (passes + fails);
pass only with at least one pass call and no fail call; no call at all fails
with score 0. The judge here is a real program (``command``) printing a reply.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from waza.protocol.errors import ConfigError
from waza.protocol.records import GraderRequest
from waza.runner.grading.build import make_runner
from waza.runner.grading.grader_specs import Builtin

from .conftest import read_jsonl, run_waza
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
        ({"prompt": "x", "threshold": 0.5}, "belongs to the rubric form"),
        ({"model": "m"}, "'rubric' is a required property"),
    ],
)
def test_prompt_and_rubric_forms_do_not_mix(config, message):
    with pytest.raises(ConfigError) as info:
        make_runner(Builtin(name="prompt", grader="prompt", config=config))
    assert message in str(info.value)


def test_a_suite_prompt_grader_with_both_prompt_and_rubric_follows_prompt_as_the_original(tmp_path):
    """The original's schema allows ``rubric`` beside the prompt grader's ``config.prompt``; its prompt grader
    reads only ``prompt``. waza accepts the pair, says rubric is unused, and the judge is given the prompt."""
    seen = tmp_path / "judge-stdin.txt"
    reply = json.dumps({"reasoning": "ok", "calls": [{"tool": P, "description": "done", "reason": "said done"}]})
    script = tmp_path / "judge.py"
    script.write_text(f"import sys\nopen({str(seen)!r}, 'w').write(sys.stdin.read())\nprint({reply!r})\n")
    (tmp_path / "tasks").mkdir()
    (tmp_path / "tasks" / "t.yaml").write_text("id: t\ninputs:\n  prompt: Say done.\n")
    (tmp_path / "eval.yaml").write_text(
        "name: both\ntasks: ['tasks/*.yaml']\ngraders:\n  - type: prompt\n    name: judged\n"
        "    rubric: RUBRIC-TEXT score 1-5 on style\n"
        f"    config:\n      prompt: PROMPT-TEXT call set_waza_grade_pass if it says done\n      command: [{sys.executable!r}, {str(script)!r}]\n"
    )
    check = run_waza("check", tmp_path / "eval.yaml")
    assert check.returncode == 0, check.stderr
    assert b"rubric: not supported by waza, ignored (prompt is given too" in check.stderr
    agent = Path(__file__).parent / "agents" / "exec_agent.py"
    done = run_waza("run", tmp_path / "eval.yaml", "--adapter", "exec", "--", sys.executable, agent)
    [line] = read_jsonl(done.stdout)
    assert line["grades"][0]["status"] == "passed" and line["grades"][0]["details"]["passes"] == 1, done.stderr
    assert "prompt is given too" in line["grades"][0]["details"]["unused"]["rubric"]
    asked = seen.read_text()
    assert "PROMPT-TEXT" in asked and "RUBRIC-TEXT" not in asked
