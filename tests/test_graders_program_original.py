"""The program grader in the original waza's form (internal/graders/program_grader_test.go, docs/graders/program.md).

``command`` + ``args``, the output on stdin, ``WAZA_WORKSPACE_DIR`` in the
environment; a non-zero exit and a program past its timeout both grade as
failed with score 0 (the original's verdicts), never as an error.
"""

from __future__ import annotations

import sys

from .graders_support import grade_both


def test_command_and_args_get_the_output_on_stdin(tmp_path):
    check = "import sys; sys.exit(0 if 'hello' in sys.stdin.read() else 1)"
    config = {"command": sys.executable, "args": ["-c", check]}
    assert grade_both("program", config, output="hello world").passed
    failed = grade_both("program", config, output="bye")
    assert (failed.passed, failed.score) == (False, 0.0)


def test_the_workspace_is_in_waza_workspace_dir(tmp_path):
    check = "import os, sys; sys.exit(0 if os.environ['WAZA_WORKSPACE_DIR'] == os.environ['WAZA_WORKSPACE'] != '' else 1)"
    grade = grade_both("program", {"command": sys.executable, "args": ["-c", check]}, cwd=tmp_path, output="x")
    assert grade.passed


def test_a_program_past_its_timeout_fails_with_score_0():
    config = {"command": sys.executable, "args": ["-c", "import time; time.sleep(30)"], "timeout": 0.5}
    grade = grade_both("program", config, output="x")
    assert (grade.status, grade.passed, grade.score) == ("failed", False, 0.0) and "timed out" in grade.reasoning
