"""The protocol package: schemas match the records, results are normalised strictly, the reducer is total."""

from __future__ import annotations

import io
import math
import re
from pathlib import Path

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from waza.protocol import schemas
from waza.protocol.codec import Record, RecordError
from waza.protocol.grader_protocol import GraderProtocolError, aggregate, normalize_result, parse_result_bytes
from waza.protocol.jsonl import JsonlError, decode_line, has_long_digits, iter_lines, repair_torn_tail
from waza.protocol.records import CaptureResult, Grade, PromptCase, Usage
from waza.protocol.trajectory import (
    MessageChunk,
    PlanUpdate,
    RawUpdate,
    ThoughtChunk,
    ToolCallPatch,
    TrajectoryBuilder,
    UsageUpdate,
)

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize("name", sorted(schemas.records()))
def test_schema_files_match_the_record_classes(name):
    """No drift: the shipped schema is exactly what the record class generates."""
    shipped = (ROOT / "schemas" / f"{name}.json").read_bytes()
    assert shipped == schemas.render(schemas.records()[name]), "run: python -m waza.protocol.schemas --write schemas"


def test_every_shipped_schema_is_a_valid_2020_12_schema():
    from jsonschema import Draft202012Validator

    for name in schemas.schema_files():
        Draft202012Validator.check_schema(schemas.load(name))  # raises on an invalid schema (waza does not, at run time)


def test_prompt_case_keeps_unknown_keys_and_accepts_expected():
    case = PromptCase.from_dict({"id": "a", "input": "x", "expected": "y", "category": "math"})
    assert case.hint == "y"
    assert case.unknown == {"category": "math"}
    assert case.to_dict()["category"] == "math"


def test_record_errors_name_the_field_path():
    with pytest.raises(RecordError) as info:
        CaptureResult.from_dict(
            {"id": "a", "input": "x", "output": "", "trajectory": [{"type": "nope", "stepId": "s", "timestamp": 0}]}
        )
    assert info.value.path == "trajectory[0].type"
    with pytest.raises(RecordError) as info:
        Grade.from_dict({"name": "g", "status": "passed", "surprise": 1})
    assert info.value.path == "surprise" and "not a known field" in str(info.value)


class _Node(Record, kw_only=True):
    """A record that holds records of its own class (a tree), as a record class may."""

    name: str
    children: list[_Node] = []
    parent: _Node | None = None


def test_a_record_that_holds_its_own_class_decodes_and_names_deep_fields():
    tree = _Node.from_dict({"name": "a", "children": [{"name": "b", "children": [{"name": "c"}]}], "parent": {"name": "p"}})
    assert tree.children[0].children[0].name == "c" and tree.parent is not None and tree.parent.name == "p"
    assert _Node.from_dict(tree.to_dict()) == tree
    with pytest.raises(RecordError) as info:
        _Node.from_dict({"name": "a", "children": [{"name": "b", "children": [{"name": 3}]}]})
    assert info.value.path == "children[0].children[0].name"


def test_decoded_records_never_share_a_default_list_or_dict():
    one, two = (CaptureResult.from_dict({"id": i, "input": "x", "output": ""}) for i in "ab")
    one.errors.append("boom")
    one.metadata["k"] = 1
    assert two.errors == [] and two.metadata == {} and two.unknown == {}


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ({"pass": True, "score": 1}, (True, 1.0, None)),
        ({"passed": False, "score": 0.25, "message": "m", "details": {"k": 1}}, (False, 0.25, "m")),
        ({"pass": True, "score": 0.5, "reasoning": "r", "outcome": {"files": 2}}, (True, 0.5, "r")),
    ],
)
def test_both_result_dialects_are_normalised(raw, expected):
    result = normalize_result(raw)
    assert (result.passed, result.score, result.reasoning) == expected


@pytest.mark.parametrize(
    ("raw", "reason"),
    [
        (b"", "printed nothing"),
        (b"hello", "not one JSON document"),
        (b'note: {"pass": true, "score": 1}', "not one JSON document"),
        (b'{"pass": true, "score": 1}{"pass": true, "score": 1}', "not one JSON document"),
        (b'{"pass": true, "score": 1', "not one JSON document"),
        (b'{"pass": true, "score": 1.5}', "[0, 1]"),
        (b'{"pass": true, "score": -0.1}', "[0, 1]"),
        (b'{"pass": true, "score": NaN}', "not one JSON document"),
        (b'{"pass": true, "score": "0.5"}', "must be a number"),
        (b'{"pass": "yes", "score": 1}', "must be a boolean"),
        (b'{"score": 1}', "lacks 'pass'"),
        (b'{"pass": true}', "lacks 'score'"),
        (b"[1, 2]", "must be a JSON object"),
        (b'{"pass": true, "passed": false, "score": 1}', "disagree"),
        (b'\xff\xfe{"pass": true}', "not one JSON document"),
    ],
)
def test_untrustworthy_results_are_protocol_errors(raw, reason):
    with pytest.raises(GraderProtocolError, match=reason.replace("[", r"\[").replace("]", r"\]")):
        parse_result_bytes(raw)


def grade(status, score=None, weight=1.0):
    return Grade(name=status, status=status, passed={"passed": True, "failed": False}.get(status), score=score, weight=weight)


def test_aggregate_rules():
    assert aggregate([]) is None
    assert aggregate([grade("passed", 1.0), grade("passed", 0.5, 3)]).score == pytest.approx(0.625)
    failed = aggregate([grade("passed", 1.0), grade("failed", 0.0)])
    assert (failed.status, failed.passed, failed.score) == ("failed", False, 0.5)
    error = aggregate([grade("failed", 0.0), grade("error")])
    assert (error.status, error.passed, error.score) == ("error", None, None)
    pending = aggregate([grade("passed", 1.0), grade("pending")])
    assert (pending.status, pending.passed, pending.score) == ("pending", None, 1.0)


def test_torn_tail_repair(tmp_path):
    path = tmp_path / "out.jsonl"
    path.write_bytes(b'{"id": 1}\n{"id": 2}\n{"id"')
    assert repair_torn_tail(path) == 5
    assert path.read_bytes() == b'{"id": 1}\n{"id": 2}\n'
    assert repair_torn_tail(path) == 0
    path.write_bytes(b'{"id"')
    assert repair_torn_tail(path) == 5 and path.read_bytes() == b""


# ------------------------------------------------------------------ properties


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=2000))
def test_jsonl_reader_never_crashes_on_any_bytes(data):
    """Any input either decodes or raises JsonlError naming a line: never another exception."""
    for number, line in iter_lines(io.BytesIO(data)):
        try:
            decode_line("f.jsonl", number, line, PromptCase)
        except JsonlError as exc:
            assert str(exc).startswith(f"f.jsonl:{number}: ")


json_values = st.recursive(
    st.none() | st.booleans() | st.floats(allow_nan=True) | st.integers(-(2**63), 2**63 - 1) | st.text(max_size=10),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=20,
)
result_like = st.fixed_dictionaries(
    {},
    optional={
        "pass": json_values,
        "passed": json_values,
        "score": json_values | st.floats(min_value=-1, max_value=2),
        "reasoning": json_values,
        "message": json_values,
        "outcome": json_values,
        "details": json_values,
        "status": json_values,
    },
)


@pytest.mark.slow
@settings(max_examples=400, deadline=None)
@given(result_like | json_values)
def test_normaliser_accepts_only_trustworthy_results(value):
    try:
        result = normalize_result(value)
    except GraderProtocolError:
        return
    if result.status == "pending":
        assert result.passed is None and result.score is None
    else:
        assert isinstance(result.passed, bool)
        assert isinstance(result.score, float) and math.isfinite(result.score) and 0 <= result.score <= 1


events = st.one_of(
    st.builds(MessageChunk, st.text(max_size=5), st.none() | st.sampled_from(["m1", "m2"])),
    st.builds(ThoughtChunk, st.text(max_size=5), st.none() | st.sampled_from(["m1", "m3"])),
    st.builds(
        ToolCallPatch,
        st.sampled_from(["t1", "t2", "t3"]),
        name=st.none() | st.text(max_size=4),
        title=st.none() | st.text(max_size=4),
        status=st.none() | st.sampled_from(["pending", "in_progress", "completed", "failed"]),
        input=json_values,
        output=json_values,
    ),
    st.builds(PlanUpdate, st.lists(json_values, max_size=3)),
    st.builds(UsageUpdate, st.builds(Usage, input_tokens=st.none() | st.integers(0, 100)), st.sampled_from(["add", "set"])),
    st.builds(RawUpdate, st.text(max_size=5), json_values),
)


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(st.lists(events, max_size=30))
def test_reducer_is_total_and_its_steps_validate(sequence):
    builder = TrajectoryBuilder()
    builder.start_turn("hi", 0)
    for i, event in enumerate(sequence):
        builder.emit(event, at_ms=i)
    reduced = builder.finish()
    steps = [s.to_dict() for s in reduced.steps]
    for step in steps:
        assert schemas.errors("TrajectoryStep", orjson.loads(orjson.dumps(step))) == []
    tool_ids = [s["toolCallId"] for s in steps if s["type"] == "tool_call"]
    assert len(tool_ids) == len(set(tool_ids)), "one step per tool call id"
    text = "".join(e.text for e in sequence if isinstance(e, MessageChunk))
    assert sum(len(s.get("content", "")) for s in steps if s["type"] == "message" and s.get("role") == "agent") == len(text)


@settings(max_examples=500)
@given(
    st.binary(max_size=80)
    | st.text(alphabet="0123456789 ,:-ab", max_size=80).map(str.encode)
    | st.text(alphabet="0123456789012345678901234567890123456789 ,", max_size=400).map(str.encode)
)
def test_the_long_integer_check_finds_exactly_the_runs_of_20_digits(line: bytes) -> None:
    """Also on long lines dense with digits, where sampled pairs of digits mostly belong to shorter numbers."""
    assert has_long_digits(line) == bool(re.search(rb"[0-9]{20}", line))
