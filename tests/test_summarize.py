"""waza summarize: compact views of real capture and trials files, JSONL and Markdown."""

from __future__ import annotations

import re
import select
import subprocess
import sys

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from waza.protocol.jsonl import JsonlError
from waza.protocol.schemas import errors
from waza.runner.analysis.summary_lines import line_summaries

from .analysis_runs import capture, trials
from .conftest import read_jsonl, run_waza


def test_summaries_of_a_capture_file(tmp_path):
    results = capture(tmp_path, "r.jsonl", "q2=fail", "q4=error")
    proc = run_waza("summarize", results)
    assert proc.returncode == 0, proc.stderr.decode()
    rows = read_jsonl(proc.stdout)
    assert [r["id"] for r in rows] == ["q1", "q2", "q3", "q4"]
    for r in rows:
        assert errors("ResultSummary", r) == []
    q1, q2, _, q4 = rows
    assert (q1["status"], q1["pass"], q1["toolCalls"], q1["tools"], q1["turns"]) == ("passed", True, 1, {"lookup": 1}, 1)
    assert (q1["inputTokens"], q1["outputTokens"]) == (7, 3)
    assert [s["type"] for s in q1["steps"]] == ["message", "thought", "plan", "tool_call", "message"]
    tool = q1["steps"][3]
    assert (tool["name"], tool["status"], tool["text"]) == ("lookup", "completed", '{"word":"apple"}')
    assert q1["steps"][2]["text"] == "look the word up [completed]; answer [pending]"
    assert q1["duration"] >= q1["toolTime"] >= 0
    assert q2["status"] == "failed" and q2["grades"][0]["reasoning"].startswith("output does not contain")
    assert q4["status"] == "error" and q4["errors"]


def test_trials_give_one_summary_per_trial_and_width_shortens(tmp_path):
    results = trials(tmp_path, "t.jsonl", 2, "q1=2")
    rows = read_jsonl(run_waza("summarize", results, "--width", "5").stdout)
    assert [(r["id"], r["trial"], r["status"]) for r in rows[:2]] == [("q1", 1, "failed"), ("q1", 2, "passed")]
    assert len(rows) == 8
    assert rows[0]["output"] == "I wo…"


def test_markdown_from_stdin(tmp_path):
    results = capture(tmp_path, "r.jsonl", "q2=fail")
    proc = run_waza("summarize", "-", "--format", "markdown", input=results.read_bytes())
    text = proc.stdout.decode()
    assert proc.returncode == 0
    assert "## `q2`: failed, score 0.000" in text
    assert "4. +" in text and "tool `lookup` (completed" in text
    assert "user message: Say &lt;script>" in text  # agent text cannot inject HTML into rendered Markdown


def test_bad_line_is_named(tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_bytes(b'{"id": "a", "input": "x", "output": "y"}\n{"id": 5}\n')
    proc = run_waza("summarize", bad)
    assert proc.returncode == 2
    assert proc.stderr.decode().startswith(f"waza: {bad}:2: field 'id'")
    assert orjson.loads(proc.stdout.splitlines()[0])["id"] == "a"
    assert b"Example" in run_waza("summarize", "--help").stdout


def _odd_lines(results: bytes) -> list[bytes]:
    """Lines of a real capture file, and the same turned into what the straight decode must not take as it is."""
    rows = [orjson.loads(x) for x in results.splitlines()]
    harness = {k: v for k, v in rows[1].items() if k != "status"}  # acp-harness's shape: no status
    harness["score"] = {"pass": False, "score": 0.0, "reasoning": "no"}
    return [
        *[orjson.dumps(r) for r in rows],
        orjson.dumps(harness),
        orjson.dumps({k: v for k, v in rows[3].items() if k not in ("status", "score")}),  # errored: its status from errors
        orjson.dumps({**rows[0], "unknown": {}}),  # a user's key named like the field unknown keys go to
        orjson.dumps({**rows[0], "unknown": {"a": 1}, "other": [1]}),
        orjson.dumps(rows[0])[:-1] + b',"unkn\\u006fwn":{}}',  # the same key, escaped
        orjson.dumps({**rows[0], "metadata": {"n": 10**19}}),  # fits 64 bits (unsigned)
        orjson.dumps({**rows[0], "status": "ungraded"}),
        orjson.dumps(rows[0]).replace(b"{", b"{ ", 1),
    ]


def test_a_line_decoded_straight_is_the_record_the_general_way_makes(tmp_path):
    """read_result with the file's kind known decodes a line straight into the record; with the kind not yet
    known (a file's first line) it parses, converts and validates. Both make the same record of every line,
    keys kept aside included, and word a bad line the same way."""
    from waza.runner.analysis.runs import read_result

    lines = _odd_lines(capture(tmp_path, "r.jsonl", "q2=fail", "q4=error").read_bytes())
    for number, line in enumerate(lines, start=1):
        general = read_result("r.jsonl", number, line, None)
        straight = read_result("r.jsonl", number, line, "capture")
        assert straight == general and straight[1].to_json() == general[1].to_json(), line
    assert read_result("r", 1, lines[-4], "capture")[1].to_dict()["unknown"] == {}  # the user's key, kept
    for line in trials(tmp_path, "t.jsonl", 2, "q1=1").read_bytes().splitlines():
        assert read_result("t", 1, line, "trials") == read_result("t", 1, line, None)
    for bad, field in [
        (b'{"id": "a", "input": "x", "output": 5, "status": "passed"}', "output"),
        (b'{"id": "a", "input": "x", "output": "", "status": "passed", "trajectory": [{"type": 3}]}', "trajectory[0].type"),
        (b'{"id": "a", "input": "x", "output": "", "status": "passed", "metadata": {"n": 100000000000000000000}}', ""),
    ]:
        with pytest.raises(JsonlError) as straight:
            read_result("f.jsonl", 7, bad, "capture")
        with pytest.raises(JsonlError) as general:
            read_result("f.jsonl", 7, bad, None)
        assert str(straight.value) == str(general.value) and straight.value.field == field, str(straight.value)
        assert str(straight.value).startswith("f.jsonl:7: ")
    with pytest.raises(JsonlError, match="is a trials result, but the file started with capture results"):
        read_result("f", 2, lines[0].replace(b'"id"', b'"trials":[],"passes":0,"id"', 1), "capture")


def test_summaries_stream_through_a_pipe(tmp_path):
    """Read from a pipe, each summary is written before waza waits for the next line (not held back in a buffer)."""
    line = capture(tmp_path, "r.jsonl").read_bytes().splitlines()[0] + b"\n"
    proc = subprocess.Popen([sys.executable, "-m", "waza", "summarize", "-"], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert proc.stdin is not None and proc.stdout is not None
    try:
        proc.stdin.write(line)
        proc.stdin.flush()
        ready, _, _ = select.select([proc.stdout], [], [], 60)
        assert ready, "no summary while the input stayed open"
        assert orjson.loads(proc.stdout.readline())["id"] == "q1"
        proc.stdin.write(line.replace(b'"q1"', b'"q9"'))
        proc.stdin.close()
        assert orjson.loads(proc.stdout.readline())["id"] == "q9"
        assert proc.wait(60) == 0
    finally:
        proc.kill()
        proc.wait()


def test_summaries_of_a_line_decoded_for_them_alone_are_those_of_its_record(tmp_path):
    """line_summaries decodes a capture line (the file's kind known) into lean structs and summarizes their
    fields; with the kind not yet known it goes the general way (read_result, then summaries). Every line of
    real capture and trials files, and the awkward ones, gives the same summaries both ways, JSON and Markdown,
    at any width; a bad line is worded the same way."""
    from waza.runner.analysis.summaries import summary_markdown
    from waza.runner.analysis.summary_lines import capture_summary, line_summaries

    lines = _odd_lines(capture(tmp_path, "r.jsonl", "q2=fail", "q4=error").read_bytes())
    rows = [orjson.loads(x) for x in lines[:4]]
    lines += [  # what a summary shows of steps of every kind, and what the lean decode keeps raw
        orjson.dumps({**rows[0], "trajectory": [
            {"type": "tool_call", "timestamp": 5, "name": "t", "status": "failed", "duration": 7, "input": "a b",
             "output": {"big": [1, 2.5, None]}, "toolContent": [{"type": "text"}], "locations": [{"path": "/x"}]},
            {"type": "tool_call", "timestamp": 6, "input": {"k": [1, {"v": "é\n"}]}, "output": "done"},
            {"type": "permission", "timestamp": 7, "extra": {"decision": {"allow": True}}},
            {"type": "event", "timestamp": 8, "name": "raw"},
            {"type": "plan", "timestamp": 9, "entries": [{"content": "x", "status": "done"}, 3]},
            {"type": "thought", "timestamp": 10},
        ], "metadata": {"a": {"b": [1]}}, "outcome": {"o": 1}, "usage": None, "timing": None}),
        orjson.dumps({**rows[1], "grades": [{**rows[1]["grades"][0], "outcome": {"x": 1}, "details": {"y": [2]}}]}),
        orjson.dumps({**rows[0], "anotherKey": {"kept": "aside"}}),  # skipped by the lean decode, kept by the record
        orjson.dumps(rows[1])[:-1] + b',"output":"again","status":"passed"}',  # a key twice: the last one counts
        orjson.dumps({**rows[0], "trials": 3}),  # not a trials line (no counts), but the general way decides
    ]  # fmt: skip
    assert all(
        capture_summary(line, 200) for line in lines[:4] + lines[-5:-1]
    )  # what waza writes (and other keys, a key twice) takes the short way
    assert (
        capture_summary(lines[-1], 200) is None and capture_summary(lines[6], 200) is None
    )  # "trials" and "unknown" keys do not
    for width in (200, 5, 0):
        for number, line in enumerate(lines, start=1):
            general = line_summaries("r.jsonl", number, line, None, width)
            straight = line_summaries("r.jsonl", number, line, "capture", width)
            assert straight == general, line
            assert [s.to_json() for s in straight[1]] == [s.to_json() for s in general[1]]
            assert [summary_markdown(s) for s in straight[1]] == [summary_markdown(s) for s in general[1]]
    for line in trials(tmp_path, "t.jsonl", 2, "q1=1").read_bytes().splitlines():
        assert line_summaries("t", 1, line, "trials", 200) == line_summaries("t", 1, line, None, 200)
    for bad in [
        b'{"id": "a", "input": "x", "output": 5, "status": "passed"}',
        b'{"id": "a", "input": "x", "output": "", "status": "passed", "trajectory": [{"type": "message", "timestamp": 1, "output": 1, "x": 2}]}',
        b'{"id": "a", "input": "x", "output": "", "status": "passed", "metadata": []}',
        b'{"id": "a", "input": "x", "output": "", "status": "passed", "grades": [{"name": "g", "status": "passed", "score": 2}]}',
        b'{"id": "a", "input": "x", "output": "", "status": "passed", "metadata": {"n": 100000000000000000000}}',
        b'{"id": "a", "input": "x", "output": "", "status": "passed", "trajectory": [{"type": "tool_call", "timestamp": 1, "output": 100000000000000000000}]}',
        b'{"id": "a", "input": "x", "output": "", "status": "passed"',
        b'{"id": "a", "input": "x", "output": "", "status": "passed", "metadata": {"k": "\xff"}}',  # skipped, still UTF-8
        b'{"id": "a", "input": "x", "output": "", "status": "passed", "extra\xff": 1}',
    ]:
        with pytest.raises(JsonlError) as straight:
            line_summaries("f.jsonl", 7, bad, "capture", 200)
        with pytest.raises(JsonlError) as general:
            line_summaries("f.jsonl", 7, bad, None, 200)
        assert str(straight.value) == str(general.value), str(straight.value)
        assert str(straight.value).startswith("f.jsonl:7: ")


def test_the_lean_structs_have_the_records_fields():
    """The lean decode accepts a line exactly when the record would only while it has the record's fields,
    JSON names and types (bar those it keeps raw): a field added to a record is added to it too."""
    import msgspec

    from waza.protocol.records import CaptureResult, Grade, TrajectoryStep
    from waza.runner.analysis import summary_lines

    raw = {"output", "toolContent", "locations", "metadata", "outcome", "details", "trajectory", "grades", "status", "unknown"}
    for record, lean in [
        (CaptureResult, summary_lines._Capture),
        (TrajectoryStep, summary_lines._Step),
        (Grade, summary_lines._Grade),
    ]:
        ours = {f.encode_name: f.type for f in msgspec.structs.fields(lean)}
        theirs = {f.encode_name: f.type for f in msgspec.structs.fields(record)}
        assert set(theirs) <= set(ours)
        assert {k for k in theirs if ours[k] != theirs[k]} <= raw
        assert (
            lean.__struct_config__.forbid_unknown_fields == record.__struct_config__.forbid_unknown_fields
            or lean is summary_lines._Capture
        )


@pytest.fixture(scope="module")
def written_line(tmp_path_factory) -> bytes:
    """The longest line of a real capture file (trajectory, metadata, grades)."""
    return max(capture(tmp_path_factory.mktemp("seed"), "c.jsonl").read_bytes().splitlines(), key=len)


def _outcome(read) -> tuple[str, object]:
    try:
        kind, found = read()
    except JsonlError as exc:
        return "error", str(exc)
    return kind, [s.to_json() for s in found]


#: What a damaged or hand-edited line may hold in place of a few bytes.
DAMAGE = [b'"\x80"', b"\xff", b'"\\ud800"', b"1e999", b"123456789012345678901234567890", b"NaN", b"null", b"[]", b"{}",
          b'"', b"\x00", b"-0", b'"unknown":1,', b'"trials":[],', b'"status":"x",', b'"id":"z",', b'"x":"\xe2\x82",']  # fmt: skip


@settings(max_examples=1000, deadline=None)
@given(data=st.data())
def test_a_damaged_capture_line_gets_the_same_summary_or_error_straight_or_the_general_way(written_line, data):
    """The short decode of summarize skips what a summary does not show; whatever a line holds, it must give
    what the general way gives: the same summary, or the same error naming the line. The damage lands at
    the start of a value, each field of the line as likely as any other (at random bytes most would hit
    the trajectory, whose fields both ways read)."""
    values = [m.end() for m in re.finditer(rb'":', written_line)]
    line = bytearray(written_line)
    for _ in range(data.draw(st.integers(1, 3))):
        start = data.draw(st.sampled_from(values)) + data.draw(st.integers(0, 6))
        line[start : start + data.draw(st.integers(0, 8))] = data.draw(st.sampled_from(DAMAGE))
    straight = _outcome(lambda: line_summaries("f.jsonl", 2, bytes(line), "capture", 80))
    general = _outcome(lambda: line_summaries("f.jsonl", 2, bytes(line), None, 80))
    assert straight == general or (general[0] == "trials" and straight[0] == "error"), (bytes(line), straight, general)
