"""The replay adapter: recorded runs replayed through the engine (the API in-process), graders attached; `waza capture --adapter replay` usage errors."""

from __future__ import annotations

from pathlib import Path

import orjson

import waza
from waza.protocol.schemas import errors

from .conftest import compat_path, read_jsonl, run_waza, write_jsonl

#: A recorded Copilot session from the reference data (the tests using it skip without ../shared/compat).
COPILOT_FILE = "waza-transcripts/copilot_events_using_skill.json"
HORN = {"id": "horn", "input": "use the example horn", "hint": "yes"}


def replay(prompts: list[dict], source: Path, *, graded: bool = False) -> list[dict]:
    """The replay adapter through the API in-process (it starts no process: what it records is the point);
    the CLI's usage errors are checked as a subprocess below."""
    graders = [waza.Builtin(grader="hint")] if graded else []
    order = [p["id"] for p in prompts]
    results = [r.to_dict() for r in waza.capture(prompts, waza.ReplayAgent(replay_from=source), graders)]
    for result in results:
        assert errors("CaptureResult", result) == []
    return sorted(results, key=lambda r: order.index(r["id"]))


def replay_cli(tmp_path: Path, prompts: list[dict], source: Path):
    proc = run_waza("capture", write_jsonl(tmp_path / "prompts.jsonl", prompts), "--adapter", "replay", "--from", source)
    return proc, read_jsonl(proc.stdout)


def test_copilot_events_give_tool_calls_skill_and_usage(tmp_path):
    COPILOT = compat_path(COPILOT_FILE)
    [result] = replay([HORN], COPILOT, graded=True)
    calls = [s for s in result["trajectory"] if s["type"] == "tool_call"]
    # report_intent is an event, not a tool call: the original waza's collector drops it, so graders count the same calls
    assert [(c["name"], c["status"], c["input"]) for c in calls] == [("skill", "completed", {"skill": "example"})]
    assert calls[0]["output"].startswith('Skill "example" loaded') and calls[0]["duration"] == 45  # from the recorded times
    events = {s["name"]: s for s in result["trajectory"] if s["type"] == "event"}
    assert events["report_intent"]["extra"]["data"] == {"arguments": {"intent": "Using example skill"}}
    assert events["skill.invoked"]["extra"]["data"]["name"] == "example"
    assert "session.usage_info" in events and result["usage"] == {"contextUsed": 10787, "contextSize": 168000}
    # The answer came as a delta and again whole: recorded once.
    assert [s["content"] for s in result["trajectory"] if s["type"] == "message" and s["role"] == "agent"] == ["yes"]
    assert result["output"] == "yes" and result["status"] == "passed"


def test_capture_results_replay_to_the_same_record(tmp_path):
    COPILOT = compat_path(COPILOT_FILE)
    [first] = replay([HORN], COPILOT)
    recorded = write_jsonl(tmp_path / "recorded.jsonl", [first])
    [again] = replay([HORN], recorded, graded=True)
    for key in ("trajectory", "output", "usage", "exit", "errors", "toolErrors"):
        assert again[key] == first[key], key
    assert again["status"] == "passed" and again["adapter"] == "replay"


def test_recorded_errors_replay_as_errors(tmp_path):
    failed = {
        "id": "broken",
        "input": "x",
        "output": "partial",
        "status": "error",
        "errors": ["agent exited with code 3"],
        "exit": {"code": 3, "signal": None, "timedOut": False, "stopReason": None},
        "stderr": "boom",
        "trajectory": [
            {"type": "message", "stepId": "s1", "timestamp": 0, "turn": 0, "role": "user", "content": "x"},
            {
                "type": "tool_call",
                "stepId": "s2",
                "timestamp": 5,
                "turn": 0,
                "toolCallId": "t",
                "name": "bash",
                "status": "failed",
                "start": 5,
                "end": 9,
                "duration": 4,
            },
        ],
    }
    [result] = replay([{"id": "broken", "input": "x"}], write_jsonl(tmp_path / "r.jsonl", [failed]))
    assert result["errors"] == ["agent exited with code 3"] and result["exit"]["code"] == 3 and result["stderr"] == "boom"
    assert result["toolErrors"] is True and result["trajectory"][1]["duration"] == 4
    assert result["status"] == "error"  # what makes the CLI exit 1


def test_event_streams_keyed_by_prompt_id(tmp_path):
    stream = write_jsonl(
        tmp_path / "events.jsonl",
        [
            {"promptId": "a", "type": "message", "role": "user", "content": "list files", "timestamp": 0},
            {
                "type": "tool_call",
                "toolCallId": "t1",
                "name": "bash",
                "status": "pending",
                "input": {"cmd": "ls"},
                "timestamp": 10,
            },
            {"type": "tool_call", "toolCallId": "t1", "status": "completed", "output": "a.txt", "timestamp": 30},
            {"type": "usage", "inputTokens": 7, "outputTokens": 3},
            {"type": "message", "content": "one file: a.txt", "timestamp": 40},
            {"promptId": "b", "type": "message", "role": "user", "content": "hi"},
            {"type": "message", "content": "hello"},
        ],
    )
    results = replay([{"id": "b", "input": "hi"}, {"id": "a", "input": "list files"}, {"id": "c", "input": "?"}], stream)
    by_id = {r["id"]: r for r in results}
    assert by_id["a"]["output"] == "one file: a.txt" and by_id["a"]["usage"] == {"inputTokens": 7, "outputTokens": 3}
    tool = next(s for s in by_id["a"]["trajectory"] if s["type"] == "tool_call")
    assert (tool["start"], tool["end"], tool["output"]) == (10, 30, "a.txt")
    assert by_id["b"]["output"] == "hello"
    assert by_id["c"]["errors"] == [f"{stream}: nothing recorded for prompt 'c'"]
    assert by_id["c"]["status"] == "error"  # what makes the CLI exit 1


def test_bad_replay_files_are_usage_errors(tmp_path):
    prompts = [HORN]
    for content, message in [
        (b'{"type": "message"}\n{"type": ', b"bad.json: line 2: the last JSON object is not closed"),
        (b'{"a": 1}\n[1, 2]\n', b"bad.json: line 2: expected a JSON object"),
        (b'{"id": "x", "trajectory": []}\n{"type": "message", "content": "x"}\n', b"bad.json:2: mixes CaptureResult"),
        (b"", b"holds no JSON objects"),
    ]:
        (tmp_path / "bad.json").write_bytes(content)
        proc, results = replay_cli(tmp_path, prompts, tmp_path / "bad.json")
        assert proc.returncode == 2 and results == [], content
        assert message in proc.stderr, proc.stderr
    proc = run_waza("capture", write_jsonl(tmp_path / "p.jsonl", prompts), "--adapter", "replay")
    assert proc.returncode == 2 and b"--from" in proc.stderr


def test_the_recorded_copilot_file_is_a_stream_of_pretty_printed_objects():
    """The format the replay adapter must read: several indented JSON objects, one after another."""
    copilot = compat_path(COPILOT_FILE).read_bytes()
    assert orjson.loads(copilot[: copilot.index(b"\n}\n") + 2])["type"] == "user.message"


def test_an_acp_harness_results_file_without_tool_call_ids_replays(tmp_path):
    """acp-harness writes one step per tool call and never a toolCallId: each is a call of its own, and an
    id-less call still pending is completed by the next step of the same name."""
    harness = {
        "id": "files",
        "input": "list then read",
        "output": "a.txt holds hi",
        "trajectory": [
            {"type": "message", "content": "let me look", "timestamp": 1},
            {
                "type": "tool_call",
                "name": "Bash",
                "status": "completed",
                "input": {"cmd": "ls"},
                "output": "a.txt",
                "duration": 4,
                "timestamp": 2,
            },
            {"type": "tool_call", "name": "Read", "status": "pending", "input": {"path": "a.txt"}, "timestamp": 8},
            {"type": "tool_call", "name": "Read", "status": "completed", "output": "hi", "timestamp": 12},
            {"type": "tool_call", "name": "Bash", "status": "failed", "input": {"cmd": "cat b.txt"}, "timestamp": 15},
            {"type": "message", "content": "a.txt holds hi", "timestamp": 20},
        ],
        "toolErrors": True,
        "timing": {"start": 1700000000000, "end": 1700000000020, "total": 20},
    }
    source = write_jsonl(tmp_path / "harness-results.jsonl", [harness])
    proc, [result] = replay_cli(tmp_path, [{"id": "files", "input": "list then read"}], source)
    assert b"Traceback" not in proc.stderr and b"AssertionError" not in proc.stderr, proc.stderr
    calls = [(s["name"], s["status"], s.get("input"), s.get("output")) for s in result["trajectory"] if s["type"] == "tool_call"]
    assert calls == [
        ("Bash", "completed", {"cmd": "ls"}, "a.txt"),
        ("Read", "completed", {"path": "a.txt"}, "hi"),
        ("Bash", "failed", {"cmd": "cat b.txt"}, None),
    ]
    ids = [s["toolCallId"] for s in result["trajectory"] if s["type"] == "tool_call"]
    assert len(set(ids)) == 3 and result["toolErrors"] is True and result["output"] == "a.txt holds hi"
    assert errors("CaptureResult", result) == []
