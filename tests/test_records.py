"""Records as users meet them: bad lines named by file, line and field; keys waza does not know kept;
the JSON waza writes; the published schemas and the typed decode agreeing on what is a record."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import orjson
import pytest

import waza
from waza.protocol import schemas
from waza.protocol.codec import RecordError
from waza.protocol.records import CaptureResult, Exit, Grade, GraderRequest, PromptCase, Timing, TrajectoryStep, Usage, Verdict

from .conftest import ROOT, read_jsonl, run_waza, write_jsonl


def _result(id_: str, **extra: Any) -> dict[str, Any]:
    return {
        "id": id_,
        "input": "q",
        "output": "the answer",
        "trajectory": [
            {"type": "message", "stepId": "s1", "timestamp": 1, "turn": 0, "role": "agent", "content": "hi"},
            {"type": "tool_call", "stepId": "s2", "timestamp": 2, "turn": 0, "toolCallId": "t", "status": "completed"},
        ],
        "status": "ungraded",
        **extra,
    }


def _passes(request: dict[str, Any]) -> dict[str, Any]:
    return {"pass": True, "score": 1.0}


def test_a_bad_result_line_names_the_file_line_and_field_path(tmp_path: Path) -> None:
    bad = _result("c")
    bad["trajectory"][1]["status"] = 5
    results = write_jsonl(tmp_path / "results.jsonl", [_result("a"), _result("b"), bad])
    out = tmp_path / "graded.jsonl"
    proc = run_waza("grade", results, "-g", "builtin:regex", "--grader-config", '{"must_match": ["answer"]}', "-o", out)
    err = proc.stderr.decode()
    assert proc.returncode == 2, err
    assert f"{results}:3: field 'trajectory[1].status': must be string or null, got integer" in err
    assert "Traceback" not in err


def test_a_missing_field_and_an_unknown_nested_key_are_named_by_path() -> None:
    with pytest.raises(RecordError) as info:
        CaptureResult.from_json(b'{"id": "a", "input": "q"}')
    assert (info.value.path, info.value.message) == ("output", "is required")
    with pytest.raises(RecordError) as info:
        CaptureResult.from_json(orjson.dumps(_result("a", timing={"start": 1, "end": 2, "total": 1, "startedAt": 0})))
    assert (info.value.path, info.value.message) == ("timing.startedAt", "is not a known field")


def test_unknown_top_level_keys_survive_grading(tmp_path: Path) -> None:
    """Keys another tool wrote on a result (even one named ``unknown``) are written back as they were."""
    extra = {"runId": "r-7", "labels": {"team": ["x"]}, "unknown": {"nested": 1}}
    results = write_jsonl(tmp_path / "results.jsonl", [_result("a", **extra), _result("b")])
    out = tmp_path / "graded.jsonl"
    graded = waza.grade(str(results), [waza.PythonGrader(fn=_passes)], output=waza.Output(str(out)))
    assert [r.status for r in graded] == ["passed", "passed"]
    first, second = read_jsonl(out)
    assert {k: first[k] for k in extra} == extra
    assert not set(extra) & set(second)
    assert schemas.errors("CaptureResult", first) == []


def test_prompt_keys_waza_does_not_know_reach_the_result_and_expected_is_the_hint() -> None:
    case = PromptCase.from_json(b'{"id": "a", "input": "x", "expected": "y", "category": "math"}')
    assert (case.hint, case.unknown) == ("y", {"category": "math"})
    assert orjson.loads(case.to_json()) == {
        "id": "a",
        "input": "x",
        "hint": "y",
        "reference": None,
        "metadata": {},
        "timeout": None,
        "category": "math",
    }


def test_a_result_leaves_unknown_figures_out_and_always_writes_status_and_lists() -> None:
    """What acp-harness and jq pipelines read: no nulls, but ``status``, ``errors``, ``grades``... always there."""
    result = CaptureResult(id="a", input="q", output="", timing=Timing(start=1, end=3, total=2), usage=Usage(input_tokens=4))
    assert orjson.loads(result.to_json()) == {
        "id": "a",
        "input": "q",
        "output": "",
        "trajectory": [],
        "metadata": {},
        "timing": {"start": 1, "end": 3, "total": 2},
        "usage": {"inputTokens": 4},
        "toolErrors": False,
        "errors": [],
        "grades": [],
        "outcome": {},
        "status": "ungraded",
    }
    assert result.to_dict() == orjson.loads(result.to_json())
    # A grade and a request keep their nulls: graders read ``pass``/``hint`` as null, not missing.
    assert orjson.loads(Grade(name="g", status="error", error="boom").to_json())["pass"] is None
    assert orjson.loads(GraderRequest(id="a").to_json())["hint"] is None


def test_to_dict_shares_nothing_with_the_record() -> None:
    result = CaptureResult(id="a", input=["q"], output="", metadata={"k": [1]}, unknown={"x": {"y": 1}})
    out = result.to_dict()
    out["metadata"]["k"].append(2)
    out["input"].append("r")
    out["x"]["y"] = 2
    assert result.metadata == {"k": [1]} and result.input == ["q"] and result.unknown == {"x": {"y": 1}}


def _sample_records() -> dict[str, list[dict[str, Any]]]:
    """Records as waza writes them, and every record line in the tests' fixtures."""
    full = CaptureResult(
        id="a",
        input=["x", "y"],
        output="o",
        hint="h",
        trajectory=[TrajectoryStep(type="tool_call", step_id="s1", timestamp=1, turn=0, name="n", input={"q": 1}, start=1)],
        timing=Timing(start=1, end=2, total=1),
        usage=Usage(input_tokens=1, cost=0.5),
        exit=Exit(code=0),
        grades=[Grade(name="g", status="passed", passed=True, score=1.0)],
        score=Verdict(status="passed", passed=True, score=1.0),
        status="passed",
        trial=1,
        unknown={"extra": 1},
    )
    samples: dict[str, list[dict[str, Any]]] = {
        "CaptureResult": [full.to_dict(), _result("b")],
        "PromptCase": [PromptCase(id="a", input="x", timeout=1.5).to_dict()],
        "GraderRequest": [GraderRequest(id="a", trajectory=[{"type": "message"}]).to_dict()],
        "Grade": [Grade(name="g", status="failed", passed=False, score=0.25).to_dict()],
    }
    for path in sorted((ROOT / "tests").rglob("*.json*")):
        lines = path.read_bytes().splitlines() if path.suffix == ".jsonl" else [path.read_bytes()]
        for line in lines:
            try:
                value = json.loads(line)
            except ValueError:
                continue
            for name in samples:
                if isinstance(value, dict) and schemas.errors(name, value) == []:
                    samples[name].append(value)
    return samples


_CLASSES = {"CaptureResult": CaptureResult, "PromptCase": PromptCase, "GraderRequest": GraderRequest, "Grade": Grade}
#: Values put in place of each field. Integers written as floats (``2.0``) are left out: JSON Schema's
#: ``integer`` takes them and the typed decode, like every waza before it, does not.
_REPLACEMENTS: list[Any] = [None, 0, 1, -1, 2, 0.5, 1.5, "", "s", True, [], ["s"], [1], {}, {"a": 1}]


def _mutants(value: dict[str, Any], depth: int = 0) -> Any:
    yield {**value, "zzNew": 1}
    for key, inner in value.items():
        yield {k: v for k, v in value.items() if k != key}
        for replacement in _REPLACEMENTS:
            yield {**value, key: replacement}
        if depth == 0 and isinstance(inner, dict):
            for changed in _mutants(inner, 1):
                yield {**value, key: changed}
        if depth == 0 and isinstance(inner, list) and inner and isinstance(inner[0], dict):
            for changed in _mutants(inner[0], 1):
                yield {**value, key: [changed, *inner[1:]]}


@pytest.mark.parametrize("name", sorted(_CLASSES))
def test_the_published_schema_and_the_typed_decode_agree(name: str) -> None:
    """A value is a record for waza exactly when it is one for a tool that reads schemas/."""
    cls = _CLASSES[name]
    checked = 0
    for sample in _sample_records()[name]:
        for value in [sample, *_mutants(sample)]:
            valid = schemas.errors(name, value) == []
            try:
                cls.from_json(orjson.dumps(value))
                decoded = True
            except RecordError:
                decoded = False
            assert decoded == valid, (name, value, schemas.errors(name, value))
            checked += 1
    assert checked > 50
