"""The ACP adapter end to end: ``waza capture`` against a scripted ACP agent (a real program on stdio).

One capture run with four workers covers most behaviours (each test below reads
its prompt's result); runs that need their own options have their own test.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import pytest

from waza.protocol.schemas import errors

from .conftest import executable, read_jsonl, run_waza, write_jsonl

AGENT = [sys.executable, str(Path(__file__).parent / "agents" / "scripted_acp_agent.py")]
SECRET = "s3cr3t-value-for-raw-log"

GRADER = f"""#!{sys.executable}
import json, sys
req = json.load(sys.stdin)
ok = (req.get("hint") or "") in req["output"]
print(json.dumps({{"pass": ok, "score": 1.0 if ok else 0.0, "reasoning": "hint found" if ok else "hint missing"}}))
"""

PROMPTS: list[dict[str, Any]] = [
    {
        "id": "every",
        "hint": "final answer",
        "input": "\n".join(
            [
                "think let me see",
                "say hello world",
                "tool t1",
                "tool t2 fail",
                "plan",
                "usage",
                "extras",
                "say@m1 final answer",
            ]
        ),
    },
    {"id": "chunks", "input": "say@a one two\nsay@b three\nsay@a  four\nsay plain text here"},
    {"id": "multi", "input": ["say first turn", "history"], "hint": "history: say first turn"},
    {
        "id": "fs",
        "input": "\n".join(
            [
                "write sub/x.txt data one",
                "read sub/x.txt",
                "read /etc/hostname",
                "read ../outside.txt",
                "symlink escape /etc",
                "read escape/hostname",
                "write escape/evil.txt nope",
            ]
        ),
    },
    {
        "id": "terminal",
        "input": "\n".join(
            [
                "run echo out; echo err >&2",
                "runin /tmp pwd",
                "runin . pwd",
                "runlimit 7 printf 'héllo wörld'",
                "spawn echo $$ > term.pid; echo ready; exec sleep 1000",
            ]
        ),
    },
    {"id": "permission", "input": "permission execute rm -rf /\npermission read cat notes\npermission edit patch file"},
    {"id": "secret", "input": f"say the secret is {SECRET}"},
    {"id": "crash", "input": "say partial answer\ncrash"},
    {"id": "hang", "input": "say waiting\nhang", "timeout": 1},
    {"id": "hang-hard", "input": "say waiting\nhang-hard", "timeout": 1},
    {"id": "malformed", "input": "say before garbage\nmalformed"},
    {"id": "flood", "input": "flood 3000\nsay survived the flood", "hint": "survived"},
    {"id": "refusal", "input": "say no\nstop refusal", "hint": "yes"},
]


@pytest.fixture(scope="module")
def scripted(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    tmp = tmp_path_factory.mktemp("acp")
    prompts = write_jsonl(tmp / "prompts.jsonl", PROMPTS)
    rules = tmp / "rules.jsonl"
    rules.write_text('{"kind": "execute", "title": "rm *", "decision": "deny"}\n{"kind": "read", "decision": "allow"}\n')
    grader = executable(tmp / "grader.py", GRADER)
    workspaces = tmp / "ws"
    raw = tmp / "raw.jsonl"
    proc = run_waza(
        "capture",
        prompts,
        "--grader",
        grader,
        "-j",
        "4",
        "--workspace-dir",
        workspaces,
        "--permission-rules",
        rules,
        "--permission",
        "deny",
        "--raw-log",
        raw,
        "-o",
        tmp / "out.jsonl",
        "--",
        *AGENT,
        env={"MY_API_KEY": SECRET},
        cwd=tmp,
    )
    results = {r["id"]: r for r in read_jsonl(tmp / "out.jsonl")}
    return {"proc": proc, "results": results, "ws": workspaces, "raw": raw, "tmp": tmp}


def steps(result: dict[str, Any], type_: str) -> list[dict[str, Any]]:
    return [s for s in result["trajectory"] if s["type"] == type_]


def events(result: dict[str, Any], name: str) -> list[dict[str, Any]]:
    return [s["extra"]["data"] for s in steps(result, "event") if s["name"] == name]


def test_every_result_is_written_valid_and_graded(scripted: dict[str, Any]) -> None:
    assert scripted["proc"].returncode == 1, scripted["proc"].stderr  # some prompts error on purpose
    results = scripted["results"]
    assert set(results) == {p["id"] for p in PROMPTS}
    for result in results.values():
        assert errors("CaptureResult", result) == []
        assert result["adapter"] == "acp"
        assert len(result["grades"]) == 1
    assert results["every"]["status"] == "passed"
    assert results["multi"]["status"] == "passed"
    assert results["refusal"]["status"] == "failed"


def test_update_kinds_map_to_steps(scripted: dict[str, Any]) -> None:
    r = scripted["results"]["every"]
    assert [s["content"] for s in steps(r, "thought")] == ["let me see"]
    assert r["output"] == "final answer"
    tools = {s["toolCallId"]: s for s in steps(r, "tool_call")}
    t1 = tools["t1"]
    assert (t1["title"], t1["kind"], t1["status"]) == ("Read notes.txt", "read", "completed")
    assert t1["input"]["path"].endswith("notes.txt") and t1["output"] == {"ok": True}
    assert [c["type"] for c in t1["toolContent"]] == ["content", "diff"]
    assert t1["locations"][0]["line"] == 1 and t1["end"] >= t1["start"] and t1["duration"] == t1["end"] - t1["start"]
    assert tools["t2"]["status"] == "failed" and r["toolErrors"] is True
    plans = steps(r, "plan")
    assert [[e["status"] for e in p["entries"]] for p in plans] == [["pending", "pending"], ["completed", "pending"]]
    assert {s["name"] for s in steps(r, "event")} >= {"available_commands_update", "current_mode_update", "future_update_kind"}
    future = next(s for s in steps(r, "event") if s["name"] == "future_update_kind")
    assert future["extra"]["data"]["payload"] == {"x": 1}
    assert r["usage"] == {
        "inputTokens": 10,
        "outputTokens": 5,
        "totalTokens": 15,
        "thoughtTokens": 2,
        "cost": 0.25,
        "currency": "USD",
        "contextUsed": 1200,
        "contextSize": 200000,
    }
    assert r["timing"]["inputTokens"] == 10 and r["timing"]["sessionCreation"] is not None
    assert r["exit"]["stopReason"] == "end_turn" and r["errors"] == []


def test_chunks_join_exactly_and_split_by_message_id(scripted: dict[str, Any]) -> None:
    r = scripted["results"]["chunks"]
    agent = [s for s in steps(r, "message") if s["role"] == "agent"]
    assert [(s.get("messageId"), s["content"]) for s in agent] == [
        ("a", "one two four"),
        ("b", "three"),
        (None, "plain text here"),
    ]
    assert r["output"] == "plain text here"


def test_multi_turn_prompts_share_one_session(scripted: dict[str, Any]) -> None:
    r = scripted["results"]["multi"]
    assert r["output"] == "history: say first turn"
    users = [s for s in steps(r, "message") if s["role"] == "user"]
    assert [(s["turn"], s["content"]) for s in users] == [(0, "say first turn"), (1, "history")]


def test_fs_is_served_inside_the_workspace_only(scripted: dict[str, Any]) -> None:
    r = scripted["results"]["fs"]
    workspace = Path(r["cwd"])
    assert workspace == (scripted["ws"] / "fs").resolve()
    assert (workspace / "sub" / "x.txt").read_text() == "data one"
    said = steps(r, "message")[1]["content"]
    assert "read: data one" in said
    assert said.count("outside the workspace") == 2  # absolute path, ..
    assert said.count("goes through a symlink") == 2  # symlink read, symlink write
    reads = events(r, "fs/read_text_file")
    assert [("error" in e) for e in reads] == [False, True, True, True]
    assert not Path("/etc/evil.txt").exists()
    assert "error" in events(r, "fs/write_text_file")[1]


def test_terminals_run_in_the_workspace_and_die_with_the_prompt(scripted: dict[str, Any]) -> None:
    r = scripted["results"]["terminal"]
    said = steps(r, "message")[1]["content"]
    assert "exit 0 truncated False: out\nerr\n" in said
    assert "terminal error: cwd '/tmp' is outside the workspace" in said
    assert f"exit 0 truncated False: {r['cwd']}\n" in said
    assert "truncated True: " in said and said.count("wörld") == 1 and "héllo" not in said
    pid = int((Path(r["cwd"]) / "term.pid").read_text())
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


def test_permissions_follow_rules_then_fallback_and_are_recorded(scripted: dict[str, Any]) -> None:
    r = scripted["results"]["permission"]
    decisions = [s["extra"]["decision"] for s in steps(r, "permission")]
    assert [(d["decision"], d.get("optionId")) for d in decisions] == [("deny", "no"), ("allow", "yes"), ("deny", "no")]
    assert decisions[0]["rule"].endswith("rules.jsonl:1") and decisions[1]["rule"].endswith("rules.jsonl:2")
    assert decisions[2]["rule"] == "--permission deny"
    assert steps(r, "permission")[0]["extra"]["request"]["toolCall"]["title"] == "rm -rf /"
    assert r["output"].endswith("permission: selected no")


def test_crash_keeps_what_was_captured(scripted: dict[str, Any]) -> None:
    r = scripted["results"]["crash"]
    assert r["status"] == "error" and r["output"] == "partial answer"
    assert r["exit"]["code"] == 3 and "exit code 3" in r["errors"][0]
    assert "crashing on purpose" in r["stderr"]


def test_timeout_cancels_then_kills(scripted: dict[str, Any]) -> None:
    polite, stubborn = scripted["results"]["hang"], scripted["results"]["hang-hard"]
    for r in (polite, stubborn):
        assert r["status"] == "error" and r["exit"]["timedOut"] is True and r["output"] == "waiting"
        assert r["errors"] == ["agent timed out after 1s"]
    assert polite["exit"]["stopReason"] == "cancelled"
    assert stubborn["exit"]["stopReason"] is None


def test_malformed_json_rpc_is_an_error(scripted: dict[str, Any]) -> None:
    r = scripted["results"]["malformed"]
    assert r["status"] == "error" and r["output"] == "before garbage"
    assert "malformed JSON-RPC" in r["errors"][0] and "this is not JSON-RPC" in r["errors"][0]


def test_chatty_stderr_does_not_hang(scripted: dict[str, Any]) -> None:
    r = scripted["results"]["flood"]
    assert r["status"] == "passed" and r["output"] == "survived the flood"
    assert r["stderr"].endswith("flood done\n") and len(r["stderr"]) <= 8192


def test_stop_reason_recorded(scripted: dict[str, Any]) -> None:
    assert scripted["results"]["refusal"]["exit"]["stopReason"] == "refusal"


def test_raw_log_has_every_message_both_ways_with_secrets_masked(scripted: dict[str, Any]) -> None:
    raw = scripted["raw"].read_bytes()
    assert SECRET.encode() not in raw and b"[REDACTED]" in raw
    lines = read_jsonl(raw)
    assert {line["dir"] for line in lines} == {"in", "out"}
    assert all(isinstance(line["ts"], float | int) and line["agentPid"] for line in lines)
    by_prompt = {line["promptId"] for line in lines}
    assert by_prompt >= {p["id"] for p in PROMPTS}
    methods = {line["message"].get("method") for line in lines if "message" in line}
    assert {
        "initialize",
        "session/new",
        "session/prompt",
        "session/update",
        "session/cancel",
        "session/request_permission",
        "fs/read_text_file",
        "terminal/create",
    } <= methods
    assert [line["line"] for line in lines if "line" in line] == ["this is not JSON-RPC"]
    responses = [line for line in lines if line["dir"] == "in" and "result" in line.get("message", {})]
    assert any(r["message"]["result"].get("stopReason") == "cancelled" for r in responses)


def test_four_agents_run_at_once(tmp_path: Path) -> None:
    barrier = tmp_path / "barrier"
    prompts = write_jsonl(
        tmp_path / "p.jsonl", [{"id": f"b{i}", "input": f"barrier {barrier} 4", "hint": "barrier passed"} for i in range(4)]
    )
    grader = executable(tmp_path / "grader.py", GRADER)
    proc = run_waza("capture", prompts, "-j", "4", "--grader", grader, "--", *AGENT, cwd=tmp_path)
    results = read_jsonl(proc.stdout)
    assert proc.returncode == 0, proc.stderr
    assert [r["status"] for r in results] == ["passed"] * 4
    assert len(os.listdir(barrier)) == 4  # four distinct agent processes
    assert all(errors("CaptureResult", r) == [] for r in results)


def test_agent_restarts_after_a_crash_and_flags_pass_through(tmp_path: Path) -> None:
    prompts = write_jsonl(
        tmp_path / "p.jsonl",
        [
            {"id": "one", "input": "name"},
            {"id": "boom", "input": "crash"},
            {"id": "two", "input": "name"},
        ],
    )
    raw = tmp_path / "raw.jsonl"
    proc = run_waza("capture", prompts, "--raw-log", raw, "--", *AGENT, "--name", "bob", cwd=tmp_path)
    results = read_jsonl(proc.stdout)
    assert [r["output"] for r in results] == ["name: bob", "", "name: bob"]
    assert [r["status"] for r in results] == ["ungraded", "error", "ungraded"]
    pids = {}
    for line in read_jsonl(raw):
        pids.setdefault(line["promptId"], set()).add(line["agentPid"])
    assert pids["one"] == pids["boom"] and pids["two"].isdisjoint(pids["boom"])
    assert all(errors("CaptureResult", r) == [] for r in results)
