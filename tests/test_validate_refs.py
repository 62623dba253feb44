"""``waza validate-refs``: each prompt's reference graded as the output; broken tasks or graders found."""

from __future__ import annotations

import orjson

from waza.protocol.schemas import errors

from .conftest import read_jsonl, run_waza, write_jsonl


def test_failing_and_erroring_references_are_listed_and_exit_1(tmp_path):
    prompts = write_jsonl(
        tmp_path / "prompts.jsonl",
        [
            {"id": "good", "input": "say ok", "hint": "ok", "reference": "it is OK"},
            {"id": "bad", "input": "say ok", "hint": "ok", "reference": "nope"},
            {"id": "unchecked", "input": "say ok", "hint": "ok"},
            {"id": "hintless", "input": "say ok", "reference": "ok"},
        ],
    )
    proc = run_waza("validate-refs", prompts, "--grader", "builtin:hint")
    assert proc.returncode == 1
    lines = read_jsonl(proc.stdout)
    for line in lines:
        assert errors("CaptureResult", line) == []
    assert {r["id"]: r["status"] for r in lines} == {"good": "passed", "bad": "failed", "hintless": "error"}
    assert all(r["output"] == r["reference"] and r["adapter"] == "reference" for r in lines)
    stderr = proc.stderr.decode()
    assert "3 references checked: 1 passed, 1 failed, 1 error" in stderr
    assert "reference of 'bad' failed: output does not contain the hint 'ok'" in stderr
    assert "reference of 'hintless' error" in stderr
    assert "1 prompt has no reference (skipped): unchecked" in stderr


def test_all_references_passing_exit_0_from_stdin(tmp_path):
    rows = [{"id": f"r{i}", "input": "q", "hint": "yes", "reference": "yes indeed"} for i in range(5)]
    data = b"".join(orjson.dumps(r) + b"\n" for r in rows)
    out = tmp_path / "refs.jsonl"
    proc = run_waza("validate-refs", "-", "-g", "builtin:hint", "-j", "3", "-o", out, input=data)
    assert proc.returncode == 0, proc.stderr
    assert sorted(r["id"] for r in read_jsonl(out)) == [f"r{i}" for i in range(5)]


def test_usage_errors_exit_2(tmp_path):
    prompts = write_jsonl(tmp_path / "prompts.jsonl", [{"id": "a", "input": "q", "hint": "x"}])
    no_refs = run_waza("validate-refs", prompts, "-g", "builtin:hint")
    assert no_refs.returncode == 2 and "no prompt has a `reference`" in no_refs.stderr.decode()
    no_grader = run_waza("validate-refs", prompts)
    assert no_grader.returncode == 2 and "needs at least one --grader" in no_grader.stderr.decode()
    bad = write_jsonl(tmp_path / "bad.jsonl", [{"id": "a", "input": "q", "reference": 3}])
    wrong = run_waza("validate-refs", bad, "-g", "builtin:hint")
    assert wrong.returncode == 2 and "bad.jsonl:1: field 'reference'" in wrong.stderr.decode()
