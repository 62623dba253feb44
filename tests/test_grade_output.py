"""``waza grade`` writes each result as it is graded: on disk before waza waits on anything, errors reported.

Lines graded in one go by an in-process grader share a flush; these tests pin
what that must never cost: a result still in waza's buffer while it waits on a
grader, or a write error lost on the way.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import executable, read_jsonl, write_jsonl

PY = sys.executable


def results(tmp_path: Path, count: int) -> Path:
    rows = [{"id": f"r{i}", "input": "q", "output": f"answer {i}"} for i in range(count)]
    return write_jsonl(tmp_path / "results.jsonl", rows)


COUNTS_LINES = """
def lines_in(path):
    try:
        with open(path, "rb") as f:
            return f.read().count(b"\\n")
    except FileNotFoundError:  # the output is created with its first result
        return 0
"""


@pytest.mark.parametrize("kind", ["async function", "process"])
def test_every_result_is_on_disk_while_waza_waits_on_the_next_grade(waza, tmp_path, kind):
    out = tmp_path / "graded.jsonl"
    if kind == "process":
        grader = executable(
            tmp_path / "counts.py",
            f"#!{PY}\nimport json, sys\n{COUNTS_LINES}\nrequest = json.load(sys.stdin)\n"
            f"print(json.dumps({{'pass': True, 'score': 1.0, 'details': {{'before': lines_in({str(out)!r})}}}}))\n",
        )
        spec = str(grader)
    else:
        module = tmp_path / "counts.py"
        module.write_text(
            f"import asyncio\n{COUNTS_LINES}\n"
            "async def grade(request):\n"
            "    await asyncio.sleep(0)  # waza is waiting on this grader from here on\n"
            f"    return {{'pass': True, 'score': 1.0, 'details': {{'before': lines_in({str(out)!r})}}}}\n"
        )
        spec = f"{module}:grade"
    proc = waza("grade", results(tmp_path, 6), "-g", spec, "-o", out)
    assert proc.returncode == 0, proc.stderr.decode()
    rows = read_jsonl(out)
    assert [r["id"] for r in rows] == [f"r{i}" for i in range(6)]
    assert [r["grades"][0]["details"]["before"] for r in rows] == list(range(6))


def test_a_full_disk_under_an_in_process_grader_is_a_one_line_error(waza, tmp_path):
    proc = waza(
        "grade", results(tmp_path, 2000), "-g", "builtin:regex", "--grader-config", '{"must_match": ["a"]}', "-o", "/dev/full"
    )
    err = proc.stderr.decode()
    assert proc.returncode == 1 and "Traceback" not in err, err
    assert err.startswith("waza: cannot write") and "No space left on device" in err, err


def test_a_reader_that_goes_away_ends_an_in_process_grade_quietly(tmp_path):
    source = results(tmp_path, 5000)
    grade = f'{PY} -m waza grade {source} -g builtin:regex --grader-config \'{{"must_match": ["a"]}}\''
    proc = subprocess.run(
        ["bash", "-c", grade + ' | head -1; echo "status ${PIPESTATUS[0]}" >&2'], capture_output=True, timeout=120
    )
    assert read_jsonl(proc.stdout)[0]["id"] == "r0"
    err = proc.stderr.decode()
    assert "Traceback" not in err and "BrokenPipe" not in err and "status 141" in err, err


def test_the_results_before_a_line_too_long_are_graded_and_written(waza, tmp_path):
    source = results(tmp_path, 3)
    with source.open("ab") as f:
        f.write(b'{"id": "huge", "input": "q", "output": "' + b"x" * (2 << 20) + b'"}\n')
    out = tmp_path / "graded.jsonl"
    proc = waza(
        "grade", source, "-g", "builtin:regex", "--grader-config", '{"must_match": ["a"]}', "--max-line-mb", "1", "-o", out
    )
    assert proc.returncode == 2
    assert proc.stderr.decode().startswith(f"waza: {source}:4: line longer than 1 MB"), proc.stderr.decode()
    assert [r["id"] for r in read_jsonl(out)] == ["r0", "r1", "r2"]
