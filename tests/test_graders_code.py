"""The code grader: assertions over the result context, isolated from the runner; plus script and program.

Every case runs in-process and in the grader's own process. The escape cases
are the classic ways out of an ``eval`` sandbox; each must fail (or be refused
as config) without doing what it tried.
"""

from __future__ import annotations

import shutil
import sys
from typing import Any

import pytest

from waza.graders import code
from waza.protocol.errors import ConfigError

from .graders_support import grade_both, step

CONTEXT: dict[str, Any] = {
    "output": "Deployed to Azure: 2 files changed",
    "trajectory": [step("bash", 1, input={"command": "azd up"}), step("view", 2, input={"path": "a.py"})],
    "timing": {"start": 0, "end": 1500, "total": 1500},
    "errors": [],
}

# (assertion, passes)
PYTHON: list[tuple[str, bool]] = [
    ("len(output) > 0", True),
    ("'azure' in output.lower()", True),
    # generator expressions and comprehensions see the context (the reference's NameError is fixed)
    ("any(kw in output.lower() for kw in ['azure', 'deploy'])", True),
    ("all(c['status'] == 'completed' for c in tool_steps)", True),
    ("[c['name'] for c in tool_calls] == ['bash', 'view']", True),
    # the original's shapes (internal/models/events.go ToolCall, TranscriptEvent; data/eval_wrapper.py errors)
    ("tool_calls[0]['arguments']['command'] == 'azd up' and tool_calls[1]['arguments']['path'] == 'a.py'", True),
    ("all(c['success'] for c in tool_calls)", True),
    ("[t['tool_name'] for t in transcript if t['type'] == 'tool.execution_start'] == ['bash', 'view']", True),
    ("[s['name'] for s in trajectory] == ['bash', 'view']", True),
    ("len(errors) == 0 and len(agent_errors) == 0", True),
    ("duration_ms < 30000", True),
    ("re.search(r'(\\d+) files', output).group(1) == '2'", True),
    ("sum(1 for c in tool_calls if c['name'] == 'bash') == 2", False),
    ("output.startswith('Failed')", False),
    # an exception fails the assertion, with the exception in the reasoning
    ("undefined_name > 1", False),
    ("1 / 0", False),
]


@pytest.mark.parametrize("assertion,passes", PYTHON)
def test_python_assertions(assertion, passes):
    grade = grade_both("code", {"assertions": [assertion]}, **CONTEXT)
    assert grade.passed is passes and grade.score == float(passes)


def test_score_is_passed_over_total_and_failures_name_the_exception():
    grade = grade_both("code", {"assertions": ["len(output) > 0", "missing_thing", "output == 'x'", "True"]}, **CONTEXT)
    assert (grade.passed, grade.score) == (False, 0.5)
    assert "missing_thing: NameError: name 'missing_thing' is not defined" in grade.reasoning
    assert "output == 'x': was false" in grade.reasoning


def test_duration_is_none_without_timing():
    grade = grade_both("code", {"assertions": ["duration_ms is None"]}, output="x")
    assert grade.passed


# Escapes: each must fail, never succeed. (assertion, what the failure says)
ESCAPES: list[tuple[str, str]] = [
    ("open('/etc/passwd').read()", "NameError"),
    ("__import__('os').system('touch /tmp/waza-escaped')", "not allowed"),
    ("().__class__.__base__.__subclasses__()", "not allowed"),
    ("output.__class__", "not allowed"),
    ("[c for c in ().__class__.__mro__]", "not allowed"),
    ("(x for x in []).gi_frame.f_back.f_globals", "not allowed"),
    ("'{0.__class__}'.format(output)", "not allowed"),
    ("re.enum", "has no attribute"),
    ("eval('1')", "NameError"),
    ("getattr(output, 'upper')", "NameError"),
    ("output.encode('idna')", "import is not allowed"),
]


@pytest.mark.parametrize("assertion,why", ESCAPES)
def test_escapes_fail_in_the_sandbox(tmp_path, assertion, why):
    # The in-process path refuses what the AST check catches before anything runs ...
    try:
        code.check_config({"assertions": [assertion]})
    except ConfigError as exc:
        assert why in str(exc)
        return
    # ... and the rest fails inside the isolated evaluator.
    grade = grade_both("code", {"assertions": [assertion]}, output="x")
    assert grade.passed is False and why in grade.reasoning


def test_assertions_that_pass_the_ast_check_still_cannot_touch_files_or_processes(tmp_path):
    target = tmp_path / "escaped"
    # these need names that do not exist in the namespace; the audit hook is the second wall
    grade = grade_both("code", {"assertions": [f"str(open('{target}', 'w'))", "str(compile('1', 'x', 'eval'))"]}, output="x")
    assert grade.score == 0.0 and not target.exists()


def test_a_runaway_assertion_is_a_grader_error_not_a_hang():
    grade = grade_both("code", {"assertions": ["sum(range(10 ** 12)) > 0"], "timeout": 0.2}, output="x")
    assert grade.status == "error"


def test_an_assertion_out_of_memory_is_a_grader_error_not_a_fail():
    grade = grade_both("code", {"assertions": ["len(output) > 0", "len('x' * (10 ** 10)) > 0"]}, output="x")
    assert grade.status == "error" and grade.passed is None
    assert "ran out of memory" in (grade.error or "")


@pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")
def test_a_javascript_assertion_out_of_time_is_a_grader_error_not_a_fail():
    config = {"assertions": ["output.length > 0", "(() => { while (true) {} })()"], "language": "javascript", "timeout": 1}
    grade = grade_both("code", config, **CONTEXT)
    assert grade.status == "error" and grade.passed is None, grade
    # (On a starved machine the evaluator's own setup can be the part that runs out of time.)
    assert "did not finish within 1s" in (grade.error or "") or "evaluator exited" in (grade.error or "")


def test_an_unsafe_assertion_is_a_config_error_before_anything_runs():
    with pytest.raises(ConfigError, match=r"assertions\[1\].*'__class__' is not allowed"):
        code.check_config({"assertions": ["True", "output.__class__"]})


def test_original_semantics_syntax_error_fails_its_assertion_and_no_assertions_pass():
    """The original's inline_script_grader_test: a syntax error is a failed assertion; no assertions pass with 1.0."""
    code.check_config({"assertions": ["len(output) >"]})  # not a config error
    grade = grade_both("code", {"assertions": ["len(output) >", "len(output) > 0"]}, output="x")
    assert (grade.passed, grade.score) == (False, 0.5) and "syntax error" in grade.reasoning
    grade = grade_both("code", {}, output="x")
    assert (grade.passed, grade.score) == (True, 1.0)


@pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")
@pytest.mark.parametrize(
    "assertion,passes",
    [
        ("output.toLowerCase().includes('azure')", True),
        ("tool_calls.some(c => c.name === 'bash')", True),
        ("/(\\d+) files/.exec(output)[1] === '2'", True),
        ("duration_ms < 1000", False),
        ("this.constructor.constructor('return process')().exit(3)", False),
        ("require('fs').readFileSync('/etc/passwd')", False),
        ("process.exit(0)", False),
        ("Function('return 1')()", False),
        ("1 +", False),
    ],
)
def test_javascript_assertions(assertion, passes):
    grade = grade_both("code", {"assertions": [assertion], "language": "javascript", "timeout": 60}, **CONTEXT)
    assert grade.passed is passes


# --- script and program --------------------------------------------------------------------------------
REFERENCE_SCRIPT = """#!/usr/bin/env python3
import json, sys

def grade(context):
    output = context.get("output", "")
    score = 1.0 if "success" in output else 0.0
    return {"score": score, "passed": score >= 0.5, "message": f"{len(context['tool_calls'])} tool calls", "details": {"n": 1}}

if __name__ == "__main__":
    print(json.dumps(grade(json.load(sys.stdin))))
"""


@pytest.mark.parametrize("output,passed", [("it was a success", True), ("it broke", False)])
def test_script_runs_a_reference_style_grader(tmp_path, output, passed):
    (tmp_path / "graders").mkdir()
    (tmp_path / "graders" / "quality.py").write_text(REFERENCE_SCRIPT)
    config = {"script": "graders/quality.py", "base_dir": str(tmp_path)}
    grade = grade_both("script", config, output=output, trajectory=CONTEXT["trajectory"])
    assert (grade.passed, grade.reasoning, grade.details) == (passed, "2 tool calls", {"n": 1})


@pytest.mark.parametrize(
    "body,why,timeout",
    [  # a generous budget for scripts that end at once, a short one for the one that hangs
        ("import sys; sys.exit(3)", "exited with code 3", 60),
        ("print('not json')", "not one JSON document", 60),
        ('print(\'{"pass": true, "score": 7}\')', "[0, 1]", 60),
        ("import time; time.sleep(30)", "timed out", 1),
    ],
)
def test_script_faults_are_errors(tmp_path, body, why, timeout):
    (tmp_path / "bad.py").write_text(body)
    grade = grade_both("script", {"script": "bad.py", "base_dir": str(tmp_path), "timeout": timeout}, output="x")
    assert grade.status == "error" and why in (grade.error or "")


@pytest.mark.parametrize(
    "command,passed,reason",
    [
        (["grep", "-q", "-i", "hello"], True, "code 0"),
        ("grep -q goodbye", False, "code 1"),
        ([sys.executable, "-c", "import sys; print('too short', file=sys.stderr); sys.exit(4)"], False, "code 4: too short"),
    ],
)
def test_program_exit_code_decides(command, passed, reason):
    grade = grade_both("program", {"command": command}, output="Hello, world")
    assert (grade.passed, grade.score) == (passed, float(passed))
    assert reason in grade.reasoning


def test_program_sees_the_hint_and_runs_in_the_workspace(tmp_path):
    (tmp_path / "marker").write_text("here")
    command = ["sh", "-c", 'test -f marker && grep -q "$WAZA_HINT"']
    assert grade_both("program", {"command": command}, cwd=tmp_path, output="answer: 42", hint="42").passed
