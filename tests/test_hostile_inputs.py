"""Hostile or careless input: bounded, refused in one line with exit 2, never a traceback or a hang.

Each test runs the real ``waza`` command on real files, pipes and FIFOs.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
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
        ["--grader-timeout", "nan"],
        ["--grader-timeout", "-1"],
        ["--grader-timeout", "0"],
        ["--grader-timeout", "inf"],
        ["--timeout", "nan"],
        ["--timeout", "-5"],
        ["--timeout", "0"],
        ["--timeout", "inf"],
        ["--fail-under", "pass_rate=nan"],
        ["--fail-under", "score=inf"],
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
        (b'{"id": "a", "input": "x", "timeout": -1}\n', "field 'timeout': must be a number greater than 0"),
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
    prompts.write_bytes(
        b'{"id": "12345678901234567890123", "input": "x", "metadata": {"n": 18446744073709551615, "m": -9223372036854775808}}\n'
    )
    proc = run_waza("capture", prompts, "--adapter", "exec", "--", *AGENT)
    assert proc.returncode == 0, proc.stderr
    assert b'"n":18446744073709551615' in proc.stdout and b'"m":-9223372036854775808' in proc.stdout


@pytest.mark.parametrize(
    ("output", "start", "expected", "code"),
    [
        (lambda d: d, "waza: -o ", "is a directory", 2),  # found before anything runs
        (lambda d: d / "missing" / "r.jsonl", "waza: -o ", "missing' does not exist", 2),  # found before anything runs
        (lambda d: Path("/dev/full"), "waza: cannot write", "No space left on device", 1),
    ],
)
def test_unwritable_outputs_are_one_line_errors(tmp_path, output, start, expected, code):
    proc = run_waza("capture", _prompts(tmp_path), "--adapter", "exec", "-o", output(tmp_path), "--", *AGENT)
    assert proc.returncode == code
    err = _no_traceback(proc)
    assert expected in err and err.startswith(start), err


def test_stdout_full_is_a_one_line_error(tmp_path):
    with open("/dev/full", "wb") as full:
        proc = subprocess.run(
            [sys.executable, "-m", "waza", "capture", str(_prompts(tmp_path)), "--adapter", "exec", "--", *AGENT],
            stdout=full,
            stderr=subprocess.PIPE,
            timeout=60,
        )
    assert proc.returncode == 1
    assert "No space left on device" in _no_traceback(proc)


def test_a_reader_that_goes_away_ends_waza_quietly(tmp_path):
    shell = f"{sys.executable} -m waza capture {_prompts(tmp_path, 400)} --adapter exec -- {' '.join(AGENT)} | head -1"
    proc = subprocess.run(["bash", "-c", shell + '; echo "status ${PIPESTATUS[0]}" >&2'], capture_output=True, timeout=120)
    assert read_jsonl(proc.stdout)[0]["id"] == "p0"
    err = _no_traceback(proc)
    assert "BrokenPipe" not in err and "status 141" in err, err


def _bash(script: str, timeout: float = 120) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(["bash", "-c", script], capture_output=True, timeout=timeout)


@pytest.mark.parametrize("command", [["capture"], ["trials", "-k", "2", "-g", "builtin:text"]])
def test_a_prompts_pipe_is_read_once_and_fully(tmp_path, command):
    prompts = _prompts(tmp_path, 3)
    agent = " ".join(AGENT)
    proc = _bash(f"{sys.executable} -m waza {command[0]} <(cat {prompts}) {' '.join(command[1:])} --adapter exec -- {agent}")
    assert proc.returncode in (0, 1), proc.stderr
    assert sorted(r["id"] for r in read_jsonl(proc.stdout)) == ["p0", "p1", "p2"]


def _blocked_in_open(pid: int) -> bool:
    """Some thread of ``pid`` sits in openat(2) (syscall 257 on x86-64), as on a FIFO with no writer."""
    tasks = Path(f"/proc/{pid}/task")
    try:
        return any((t / "syscall").read_text().startswith("257 ") for t in tasks.iterdir())
    except OSError:
        return False


@pytest.mark.skipif(
    not sys.platform.startswith("linux") or os.uname().machine != "x86_64", reason="reads /proc syscall numbers of x86-64 Linux"
)
def test_sigterm_ends_a_read_from_a_fifo_no_one_writes(tmp_path):
    fifo = tmp_path / "prompts.fifo"

    os.mkfifo(fifo)
    proc = subprocess.Popen(
        [sys.executable, "-m", "waza", "capture", str(fifo), "--adapter", "exec", "--", *AGENT],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 60
        while not _blocked_in_open(proc.pid) and time.monotonic() < deadline:  # waza is waiting for a writer
            time.sleep(0.05)
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=30)
    finally:
        proc.kill()
    assert proc.returncode == 143, err
    assert b"interrupted by SIGTERM" in err and b"Traceback" not in err


@pytest.mark.parametrize("source", ["file", "stdin"])
def test_an_endless_line_is_an_error_at_the_line_limit(tmp_path, source):
    if source == "file":
        proc = run_waza("capture", "/dev/zero", "--max-line-mb", "1", "--adapter", "exec", "--", *AGENT, timeout=60)
        where = "/dev/zero:1:"
    else:
        agent = " ".join(AGENT)
        proc = _bash(f"head -c 5000000 /dev/zero | {sys.executable} -m waza capture - --max-line-mb 1 --adapter exec -- {agent}")
        where = "<stdin>:1:"
    assert proc.returncode == 2
    err = _no_traceback(proc)
    assert where in err and "longer than 1 MB" in err and "--max-line-mb" in err, err


def test_a_line_under_a_raised_limit_is_read(tmp_path):
    prompts = tmp_path / "p.jsonl"
    prompts.write_bytes(b'{"id": "big", "input": "' + b"x" * (2 << 20) + b'"}\n')
    small = run_waza("capture", prompts, "--max-line-mb", "1", "--adapter", "exec", "--", *AGENT)
    assert small.returncode == 2 and f"{prompts}:1:" in small.stderr.decode()
    raised = run_waza("capture", prompts, "--max-line-mb", "3", "--adapter", "exec", "--", *AGENT)
    assert raised.returncode == 0, raised.stderr
    assert read_jsonl(raised.stdout)[0]["id"] == "big"


def test_resume_refuses_an_output_of_another_prompts_file(tmp_path):
    out = tmp_path / "r.jsonl"
    stray = b'{"id": "not-a-prompt", "input": "x", "output": "x", "status": "passed"}\n'
    out.write_bytes(stray)
    proc = run_waza("capture", _prompts(tmp_path), "--adapter", "exec", "-o", out, "--resume", "--", *AGENT)
    assert proc.returncode == 2
    err = _no_traceback(proc)
    assert "not-a-prompt" in err and str(out) in err, err
    assert out.read_bytes() == stray


@pytest.mark.parametrize("command", [["grade", "-g", "builtin:text"], ["summarize"]])
@pytest.mark.parametrize("source", ["file", "stdin"])
def test_an_empty_results_file_is_an_error(tmp_path, command, source):
    empty = tmp_path / "empty.jsonl"
    empty.write_bytes(b"\n\n")
    proc = run_waza(command[0], empty, *command[1:]) if source == "file" else run_waza(command[0], "-", *command[1:], input=b"")
    assert proc.returncode == 2
    assert "holds no results" in _no_traceback(proc)


BOMB = "name: bomb\na: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"{n}: &{n} [{', '.join([f'*{p}'] * 9)}]\n" for p, n in zip("abcdefg", "bcdefgh", strict=True)
)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (BOMB, "refused as an alias bomb"),
        ("a: " + "[" * 20000 + "]" * 20000 + "\n", "nested too deeply"),
        ("name: n\nconfig:\n  timeout_seconds: .nan\n", "field 'config.timeout_seconds': must be a finite number"),
        (
            "name: n\nmetrics:\n  - name: task_completion\n    threshold: .nan\n",
            "field 'metrics[0].threshold': must be a finite number",
        ),
        (
            "name: n\nconfig:\n  trials_per_task: " + str(10**30) + "\n",
            "field 'config.trials_per_task': integer does not fit in 64 bits",
        ),
    ],
)
def test_hostile_suite_files_are_one_line_errors(tmp_path, text, expected):
    suite = tmp_path / "eval.yaml"
    suite.write_text(text)
    proc = run_waza("check", suite, timeout=60)
    assert proc.returncode == 2
    err = _no_traceback(proc)
    assert err.count("\n") == 1 and str(suite) in err and expected in err, err
