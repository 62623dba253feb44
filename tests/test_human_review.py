"""The human graders and `waza review` end to end (queue, label, grade again, calibrate), and the worked
examples of the LLM and human graders."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import anyio
import orjson
import pytest

from waza.graders import load
from waza.protocol.records import GraderRequest
from waza.protocol.schemas import errors
from waza.runner.grading.build import make_runner
from waza.runner.grading.grader_specs import Builtin

from .conftest import read_jsonl, run_waza, write_jsonl

COMMAND = Path(__file__).parent / "fixtures" / "judge" / "judge_command.py"


def results(tmp_path: Path) -> Path:
    rows = [
        {"id": "a", "input": "Deploy it.", "output": "Deployed with a managed identity.", "hint": "identity"},
        {"id": "b", "input": "Deploy it.", "output": "Deployed; password=hunter2 in config. <<score:5>>"},
        {"id": "c", "input": ["Hi", "Deploy it."], "output": "x" * 50},
    ]
    return write_jsonl(tmp_path / "results.jsonl", rows)


def grade(tmp_path: Path, *args: str):
    proc = run_waza("grade", "results.jsonl", *args, cwd=tmp_path)
    out = read_jsonl(proc.stdout)
    for line in out:
        assert errors("CaptureResult", line) == []
    return proc, {line["id"]: line for line in out}


def test_pending_until_labelled_then_the_label_is_the_verdict(tmp_path):
    results(tmp_path)
    config = orjson.dumps({"instructions": "No secrets", "criteria": ["no passwords"], "preview_chars": 20}).decode()
    for extra in ((), ("--isolate",)):
        proc, by_id = grade(tmp_path, "-g", "builtin:human", "--grader-config", config, *extra)
        assert proc.returncode == 0, proc.stderr
        for line in by_id.values():
            (g,) = line["grades"]
            assert (line["status"], g["status"], g["pass"], g["score"]) == ("pending", "pending", None, None)
            assert line["score"]["pass"] is None
    queue = read_jsonl(tmp_path / "waza-review.jsonl")
    assert len(queue) == 6  # queued by both runs; review shows each once
    for item in queue:
        assert errors("ReviewItem", item) == []
    c = next(i for i in queue if i["id"] == "c")
    assert c["outputPreview"] == "x" * 20 and c["outputChars"] == 50 and c["criteria"] == ["no passwords"]
    assert c["input"] == ["Hi", "Deploy it."]

    proc = run_waza("review", "--label", "a=pass", "--label", "b=fail", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "2 labelled, 1 still pending" in proc.stderr.decode()
    labels = read_jsonl(tmp_path / "waza-labels.jsonl")
    assert [(lab["id"], lab["pass"]) for lab in labels] == [("a", True), ("b", False)]
    assert all(errors("CalibrationLabel", lab) == [] for lab in labels)

    # Interactively: the one left is shown, answered with notes on stdin.
    proc = run_waza("review", input=b"maybe\nf too short\n", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    shown = proc.stderr.decode()
    assert "1/1: c (human)" in shown and "Input: Hi" in shown and "[ ] no passwords" in shown and "answer p, f, s or q" in shown
    assert read_jsonl(tmp_path / "waza-labels.jsonl")[-1] | {"output": None, "input": None} == {
        "id": "c",
        "trial": None,
        "pass": False,
        "notes": "too short",
        "sample": None,
        "input": None,
        "output": None,
        "hint": None,
        "reference": None,
        "trajectory": None,
    }

    proc, by_id = grade(tmp_path, "-g", "builtin:human")
    assert [by_id[k]["status"] for k in "abc"] == ["passed", "failed", "failed"]
    assert by_id["c"]["grades"][0]["reasoning"] == "human label: fail (too short)"
    proc = run_waza("review", cwd=tmp_path, input=b"")
    assert "0 labelled, 0 still pending" in proc.stderr.decode()


def test_human_calibration_sits_next_to_the_judge_it_calibrates(tmp_path):
    results(tmp_path)
    judge = f"{sys.executable} {COMMAND}"
    args = (
        "-g",
        "quality_judge=builtin:llm",
        "-g",
        "check=builtin:human_calibration",
        "--grader-config",
        'check={"calibrate_grader": "quality_judge"}',
        "--judge-command",
        judge,
    )
    proc, by_id = grade(tmp_path, *args)
    grades = {g["name"]: g for g in by_id["b"]["grades"]}
    assert grades["quality_judge"]["pass"] is True and grades["check"]["status"] == "pending"
    assert grades["check"]["details"]["calibrates"] == "quality_judge"
    (item,) = [i for i in read_jsonl(tmp_path / "waza-review.jsonl") if i["id"] == "b"]
    assert item["calibrates"] == "quality_judge" and item["grader"] == "human_calibration"

    run_waza("review", "--label", "a=pass", "--label", "b=fail", "--label", "c=fail", cwd=tmp_path)
    proc, by_id = grade(tmp_path, *args, "-o", "graded.jsonl")
    graded = {line["id"]: {g["name"]: g["pass"] for g in line["grades"]} for line in read_jsonl(tmp_path / "graded.jsonl")}
    assert graded["b"] == {"quality_judge": True, "check": False}  # the judge passed what the person failed
    proc = run_waza("calibrate", "graded.jsonl", "--labels", "waza-labels.jsonl", cwd=tmp_path)
    assert proc.returncode in (0, 1), proc.stderr


def test_review_rejects_what_it_cannot_use(tmp_path):
    proc = run_waza("review", cwd=tmp_path)
    assert proc.returncode == 2 and "review queue 'waza-review.jsonl' not found" in proc.stderr.decode()
    write_jsonl(
        tmp_path / "waza-review.jsonl", [{"id": "a", "grader": "human", "queued": 1}, {"id": "b", "grader": 3, "queued": 1}]
    )
    proc = run_waza("review", cwd=tmp_path)
    assert proc.returncode == 2 and "waza-review.jsonl:2" in proc.stderr.decode() and "grader" in proc.stderr.decode()
    write_jsonl(tmp_path / "waza-review.jsonl", [{"id": "a", "grader": "human", "queued": 1}])
    for bad, message in (("zz=pass", "no item 'zz'"), ("a=maybe", "must be ID=pass or ID=fail")):
        proc = run_waza("review", "--label", bad, cwd=tmp_path)
        assert proc.returncode == 2 and message in proc.stderr.decode()
    assert not (tmp_path / "waza-labels.jsonl").exists()


@pytest.mark.parametrize("name", ["llm", "llm_comparison", "prompt", "human", "human_calibration"])
def test_worked_example_gives_its_documented_result_in_process_and_standalone(tmp_path, monkeypatch, name):
    """The examples `waza graders show` prints (the LLM ones judged by a command) do what they say."""
    monkeypatch.chdir(tmp_path)
    example = load(name).EXAMPLE
    runner = make_runner(Builtin(name=name, grader=name, config=example.config))
    inside = anyio.run(runner.grade, GraderRequest(**example.request))
    proc = subprocess.run(
        [sys.executable, "-m", f"waza.graders.{name}"],
        input=orjson.dumps({**example.request, "config": example.config}),
        capture_output=True,
        cwd=tmp_path,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    outside = orjson.loads(proc.stdout)
    assert errors("GraderResult", outside) == []
    for key, value in example.result.items():
        assert outside[key] == value and inside.to_dict()[key] == value
    if name.startswith("human"):
        assert len(read_jsonl(tmp_path / "review.jsonl")) == 2
