"""Hostile or careless input: bounded, refused in one line with exit 2, never a traceback or a hang.

Each test runs the real ``waza`` command on real files, pipes and FIFOs.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import read_jsonl, run_waza

AGENT = [sys.executable, str(Path(__file__).parent / "agents" / "exec_agent.py")]


def _prompts(tmp_path: Path, n: int = 2) -> Path:
    path = tmp_path / "p.jsonl"
    path.write_bytes(b"".join(b'{"id": "p%d", "input": "say %d"}\n' % (i, i) for i in range(n)))
    return path


def _no_traceback(proc: subprocess.CompletedProcess[bytes]) -> str:
    err = proc.stderr.decode()
    assert "Traceback" not in err, err
    return err


@pytest.mark.parametrize(
    "option",
    [
        ["--grader-timeout", "nan"], ["--grader-timeout", "-1"], ["--grader-timeout", "0"], ["--grader-timeout", "inf"],
        ["--timeout", "nan"], ["--timeout", "-5"], ["--timeout", "0"], ["--timeout", "inf"],
        ["--fail-under", "pass_rate=nan"], ["--fail-under", "score=inf"],
    ],
)
def test_durations_and_thresholds_reject_nan_inf_and_non_positive(tmp_path, option):
    out = tmp_path / "r.jsonl"
    proc = run_waza("capture", _prompts(tmp_path), "--adapter", "exec", "-g", "builtin:hint", *option, "-o", out, "--", *AGENT)
    assert proc.returncode == 2
    err = _no_traceback(proc)
    assert option[0] in err or "fail-under" in err, err
    assert not out.exists()


@pytest.mark.parametrize("option", [["--level", "nan"], ["--level", "inf"]])
def test_other_number_options_reject_nan(tmp_path, option):
    results = tmp_path / "r.jsonl"
    results.write_bytes(b'{"id": "a", "input": "x", "output": "y", "status": "passed"}\n')
    proc = run_waza("compare", results, results, *option)
    assert proc.returncode == 2
    _no_traceback(proc)


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        (b'{"id": "a", "input": "x", "timeout": -1}\n', "field 'timeout': must be a number of seconds greater than 0"),
        (b'{"id": "a", "input": "x", "timeout": 0}\n', "field 'timeout'"),
        (b'{"id": "a\\u0000b", "input": "x"}\n', "field 'id': must not contain a NUL character"),
        (b'{"id": "a", "input": "x", "metadata": {"n": 123456789012345678901234567890}}\n', "does not fit in 64 bits"),
    ],
)
def test_bad_prompt_values_are_one_line_errors(tmp_path, line, expected):
    prompts = tmp_path / "p.jsonl"
    prompts.write_bytes(line)
    proc = run_waza("capture", prompts, "--adapter", "exec", "--", *AGENT)
    assert proc.returncode == 2
    err = _no_traceback(proc)
    assert err.count("\n") == 1 and f"{prompts}:1:" in err and expected in err, err


def test_integers_of_64_bits_stay_exact(tmp_path):
    prompts = tmp_path / "p.jsonl"
    prompts.write_bytes(b'{"id": "12345678901234567890123", "input": "x", "metadata": {"n": 18446744073709551615, "m": -9223372036854775808}}\n')
    proc = run_waza("capture", prompts, "--adapter", "exec", "--", *AGENT)
    assert proc.returncode == 0, proc.stderr
    assert b'"n":18446744073709551615' in proc.stdout and b'"m":-9223372036854775808' in proc.stdout


@pytest.mark.parametrize(
    ("output", "expected", "code"),
    [
        (lambda d: d, "Is a directory", 2),
        (lambda d: d / "missing" / "r.jsonl", "No such file or directory", 2),
        (lambda d: Path("/dev/full"), "No space left on device", 1),
    ],
)
def test_unwritable_outputs_are_one_line_errors(tmp_path, output, expected, code):
    proc = run_waza("capture", _prompts(tmp_path), "--adapter", "exec", "-o", output(tmp_path), "--", *AGENT)
    assert proc.returncode == code
    err = _no_traceback(proc)
    assert expected in err and err.startswith("waza: cannot write"), err


def test_stdout_full_is_a_one_line_error(tmp_path):
    with open("/dev/full", "wb") as full:
        proc = subprocess.run(
            [sys.executable, "-m", "waza", "capture", str(_prompts(tmp_path)), "--adapter", "exec", "--", *AGENT],
            stdout=full, stderr=subprocess.PIPE, timeout=60,
        )
    assert proc.returncode == 1
    assert "No space left on device" in _no_traceback(proc)


def test_a_reader_that_goes_away_ends_waza_quietly(tmp_path):
    shell = f"{sys.executable} -m waza capture {_prompts(tmp_path, 400)} --adapter exec -- {' '.join(AGENT)} | head -1"
    proc = subprocess.run(["bash", "-c", shell + "; echo \"status ${PIPESTATUS[0]}\" >&2"], capture_output=True, timeout=120)
    assert read_jsonl(proc.stdout)[0]["id"] == "p0"
    err = _no_traceback(proc)
    assert "BrokenPipe" not in err and "status 141" in err, err
