"""Bad input: one line naming file, line and field; exit 2; nothing already written is lost."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from .conftest import executable, read_jsonl, run_waza, write_jsonl

AGENT = [sys.executable, str(Path(__file__).parent / "agents" / "exec_agent.py")]
PREVIOUS = b'{"id": "kept", "note": "results of an earlier run"}\n'


@pytest.mark.parametrize(
    ("lines", "expected"),
    [
        (b'{"id": "a", "input": "x"}\n{"id": "b", "input": "y"\n', ":2: invalid JSON"),
        (b'{"id": "a", "input": "x"}\n{"input": "y"}\n', ":2: field 'id': is required"),
        (b'{"id": "a", "input": "x"}\n\n{"id": "a", "input": "y"}\n', ":3: field 'id': duplicate id 'a' (first on line 1)"),
        (b'{"id": "a", "input": 42}\n', ":1: field 'input': must be string or array"),
        (b'{"id": "a", "input": ["ok", 3]}\n', ":1: field 'input[1]': must be string"),
        (b'{"id": "a", "input": "x", "timeout": "soon"}\n', ":1: field 'timeout': must be number or null"),
        (b'{"id": "a", "input": "x", "metadata": []}\n', ":1: field 'metadata': must be an object"),
        (b'["not", "an", "object"]\n', ":1: must be an object"),
        (b'{"id": "a", "input": "x"}\n{"id": "b", "input": "\x80"}\n', ":2: invalid JSON (str is not valid UTF-8"),
        (b'"\x80"\n', ":1: invalid JSON (str is not valid UTF-8"),
        (b"", "holds no prompts"),
    ],
)
def test_bad_prompt_lines_are_named_and_nothing_is_overwritten(tmp_path, lines, expected):
    prompts = tmp_path / "prompts.jsonl"
    prompts.write_bytes(lines)
    out = tmp_path / "results.jsonl"
    out.write_bytes(PREVIOUS)
    proc = run_waza("capture", prompts, "--adapter", "exec", "-o", out, "--", *AGENT)
    assert proc.returncode == 2
    message = proc.stderr.decode()
    assert message.count("\n") == 1, message  # exactly one line
    assert str(prompts) in message and expected in message, message
    assert out.read_bytes() == PREVIOUS


def test_bom_and_crlf_are_accepted(tmp_path):
    prompts = tmp_path / "p.jsonl"
    prompts.write_bytes(b'\xef\xbb\xbf{"id": "a", "input": "hi"}\r\n{"id": "b", "input": "yo"}\r\n')
    proc = run_waza("capture", prompts, "--adapter", "exec", "--", *AGENT)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.count(b"\n") == 2


@pytest.mark.parametrize(
    ("make", "expected"),
    [
        (lambda d: str(d / "missing.py"), "does not exist"),
        (lambda d: str(executable(d / "plain.py", "print(1)\n").chmod(0o644) or d / "plain.py"), "is not executable"),
        (lambda d: str(d), "is a directory"),
        (lambda d: "no-such-grader-on-path", "not found on PATH"),
        (lambda d: "builtin:nope", "unknown built-in grader 'nope'"),
        (lambda d: f"{d / 'missing.py'}:grade", "does not exist"),
    ],
)
def test_bad_grader_is_a_usage_error_before_anything_runs(tmp_path, make, expected):
    prompts = tmp_path / "p.jsonl"
    prompts.write_bytes(b'{"id": "a", "input": "x"}\n')
    out = tmp_path / "results.jsonl"
    out.write_bytes(PREVIOUS)
    proc = run_waza("capture", prompts, "--adapter", "exec", "--grader", make(tmp_path), "-o", out, "--", *AGENT)
    assert proc.returncode == 2
    assert expected in proc.stderr.decode()
    assert proc.stderr.count(b"\n") == 1
    assert out.read_bytes() == PREVIOUS


def test_unreadable_prompts_file(tmp_path):
    proc = run_waza("capture", tmp_path / "nope.jsonl", "--adapter", "exec", "--", *AGENT)
    assert proc.returncode == 2
    assert b"nope.jsonl: cannot be read" in proc.stderr


def test_options_the_adapter_would_ignore_are_rejected(tmp_path):
    prompts = tmp_path / "p.jsonl"
    prompts.write_bytes(b'{"id": "a", "input": "x"}\n')
    proc = run_waza("capture", prompts, "--adapter", "exec", "--model", "gpt", "--", *AGENT)
    assert proc.returncode == 2
    assert b"--model does nothing with --adapter exec" in proc.stderr


def test_grader_config_must_name_a_grader(tmp_path):
    prompts = tmp_path / "p.jsonl"
    prompts.write_bytes(b'{"id": "a", "input": "x"}\n')
    proc = run_waza(
        "capture",
        prompts,
        "--adapter",
        "exec",
        "-g",
        "builtin:hint",
        "-g",
        "h2=builtin:hint",
        "--grader-config",
        '{"x": 1}',
        "--",
        *AGENT,
    )
    assert proc.returncode == 2
    assert b"must be NAME=VALUE naming a grader" in proc.stderr


def test_bad_line_on_stdin_for_grade_stops_after_what_was_written(tmp_path):
    good = run_waza("capture", "-", "--adapter", "exec", "--", *AGENT, input=b'{"id": "a", "input": "x"}\n')
    assert good.returncode == 0, good.stderr
    stream = good.stdout + b"{broken\n"
    proc = run_waza("grade", "-", "--grader", "builtin:hint", input=stream)
    assert proc.returncode == 2
    assert b"<stdin>:2: invalid JSON" in proc.stderr
    assert proc.stdout.count(b"\n") == 1  # the good line was graded and written
    skipped = run_waza("grade", "-", "--grader", "builtin:hint", "--skip-invalid", input=stream)
    assert b"skipped 1 invalid lines" in skipped.stderr


def test_a_twenty_megabyte_line_is_read_whole(tmp_path):
    big = "w" * (20 * 1024 * 1024)
    prompts = write_jsonl(tmp_path / "p.jsonl", [{"id": "big", "input": big}, {"id": "small", "input": "x"}])
    proc = run_waza("capture", prompts, "--adapter", "exec", "--", *AGENT)
    assert proc.returncode == 0, proc.stderr[-300:]
    rows = {r["id"]: r for r in read_jsonl(proc.stdout)}
    assert rows["big"]["output"] == "echo: " + big


@pytest.mark.parametrize("command", [["summarize"], ["report"], ["grade", "--grader", "builtin:hint"]])
def test_a_results_line_that_is_not_utf8_is_named(tmp_path, command):
    # The fast paths that read results decode straight from bytes; a string that is not UTF-8 must
    # reach the same one-line error as any other malformed line, not a traceback.
    results = tmp_path / "results.jsonl"
    good = b'{"id": "a", "input": "x", "output": "ok", "status": "passed"}\n'
    results.write_bytes(good + b'{"id": "b", "input": "\x80", "output": "ok", "status": "passed"}\n')
    proc = run_waza(*command, results)
    assert proc.returncode == 2, proc.stderr
    assert (
        proc.stderr.decode().strip()
        == f"waza: {results}:2: invalid JSON (str is not valid UTF-8: surrogates not allowed at column 1)"
    )
