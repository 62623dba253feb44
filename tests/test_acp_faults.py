"""ACP agent faults, end to end: ``waza capture`` against a real misbehaving ACP agent.

Runs with one worker take the faults in turn, each followed by a normal prompt:
a fault must end as one *error* record holding what was captured (output,
trajectory, stderr), the agent must be restarted (a new process, seen in the raw
log) and answer the next prompt normally, and nothing the agent started may
survive it (its children run ``sleep MARK`` so leftovers can be found by argv).
Recoverable oddities (an unknown client method, a stderr flood, a 50 MB message,
1,000 permission requests) must *not* cost a restart. The two faults that sit out a
timeout and the cancel grace each have a run of their own beside the main one,
so those waits overlap instead of adding up.

Unknown client methods: waza answers the standard JSON-RPC "method not found"
(-32601), whatever the params, records the call in the trajectory, and the prompt
goes on; the agent decides what to do without the method (as ACP intends for
capabilities a client lacks). Malformed JSON-RPC cannot be answered (there may be
no id to answer) and leaves the stream's state unknown, so it ends the prompt.
"""

from __future__ import annotations

import subprocess
import sys
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from waza.protocol.schemas import errors

from .conftest import read_jsonl, run_waza, write_jsonl

AGENT = [sys.executable, str(Path(__file__).parent / "agents" / "faulty_acp_agent.py")]
MARK = f"31.{uuid.uuid4().int % 10**8}"
BIG = 50 * 1024 * 1024
# After a line waza cannot parse it reads nothing more, so "say after" is never captured.
NOT_JSON_RPC = {
    "not-json": "emit this is not JSON\nsay after",
    "json-not-rpc": 'emit {"hello": "world"}\nsay after',
    "response-without-result": 'emit {"jsonrpc": "2.0", "id": 99}\nsay after',
    "error-code-not-int": 'answer {"error": {"code": "oops", "message": 5}}\nsay after',
    "error-not-object": 'answer {"error": "bad"}\nsay after',
    "result-without-stop-reason": 'answer {"result": {}}',
}

# (id, input, own timeout, hint): each fault is followed by "after-<id>", a prompt that must pass.
# Hangs get 2 s (not 1) so a slow, shared machine still starts the agent before the deadline.
FAULTS: list[tuple[str, str, float | None, str | None]] = [
    ("never-initializes", "say unreachable", 2, None),
    ("hangs-before-first-event", "stall", 2, None),
    *[(name, f"say before\n{line}", None, None) for name, line in NOT_JSON_RPC.items()],
    ("unknown-methods", "unknown x/unknown\nunknown-bare y/unknown\nnotify z/unknown\nsay still here", None, "still here"),
    ("stderr-flood", "flood 20000\nsay survived", None, "survived"),
    ("big-message", "bigchunk 50", None, "cdef>"),
    ("permissions", "permissions 1000", None, '"no": 250'),
    ("ignores-cancel", "ignore-cancel", 2, None),
    ("exits-with-children", "exit-with-children", None, None),
    ("crashes-mid-stream", "say partial\ncrash", None, None),
]
#: Faults after which the agent keeps running: restarting it would throw away a healthy session for nothing.
KEEPS_AGENT = {"unknown-methods", "stderr-flood", "big-message", "permissions"}


#: Faults that sit out a timeout and then the cancel grace (4 s): each gets a run of its own beside the main one.
ALONE = ("hangs-before-first-event", "ignores-cancel")


@pytest.fixture(scope="module")
def fault_run(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    tmp = tmp_path_factory.mktemp("acp-faults")
    rules = tmp / "rules.jsonl"
    rules.write_text('{"kind": "execute", "title": "rm *", "decision": "deny"}\n')
    groups: dict[str, list[dict[str, Any]]] = {"main": [], **{name: [] for name in ALONE}}
    for name, text, timeout, hint in FAULTS:
        fault = {"id": name, "input": text, "timeout": timeout, "hint": hint}
        prompts = groups[name if name in ALONE else "main"]
        prompts.append({k: v for k, v in fault.items() if v is not None})
        prompts.append({"id": f"after-{name}", "input": f"say fine after {name}", "hint": f"fine after {name}"})

    def capture(group: str) -> subprocess.CompletedProcess[bytes]:
        # The main run's first agent hangs in initialize (never-initializes is its first prompt); no other does.
        hang = ["--hang-initialize-once", tmp / "initialize-hung"] if group == "main" else []
        return run_waza(
            "capture",
            write_jsonl(tmp / f"{group}.jsonl", groups[group]),
            "--grader",
            "builtin:hint",
            "-j",
            "1",
            "--timeout",
            "20",
            "--permission-rules",
            rules,
            "--raw-log",
            tmp / f"{group}-raw.jsonl",
            "-o",
            tmp / f"{group}-out.jsonl",
            "--",
            *AGENT,
            "--mark",
            MARK,
            *hang,
            cwd=tmp,
        )

    with ThreadPoolExecutor(len(groups)) as pool:
        procs = list(pool.map(capture, groups))
    pids: dict[str, set[int]] = {}
    results: dict[str, dict[str, Any]] = {}
    for group in groups:
        for line in read_jsonl(tmp / f"{group}-raw.jsonl"):
            pids.setdefault(line["promptId"], set()).add(line["agentPid"])
        results |= {r["id"]: r for r in read_jsonl(tmp / f"{group}-out.jsonl")}
    leftovers = subprocess.run(["pgrep", "-af", MARK], capture_output=True, text=True).stdout
    order = [p["id"] for prompts in groups.values() for p in prompts]
    return {"procs": procs, "results": results, "pids": pids, "leftovers": leftovers, "order": order}


def messages(result: dict[str, Any]) -> list[str]:
    return [s["content"] for s in result["trajectory"] if s["type"] == "message" and s["role"] == "agent"]


@pytest.mark.slow
def test_every_fault_is_one_valid_record_and_the_run_completes(fault_run: dict[str, Any]) -> None:
    results = fault_run["results"]
    for proc in fault_run["procs"]:
        assert proc.returncode == 1, proc.stderr.decode()[-2000:]  # errors, but no crash of waza
        assert b"Traceback" not in proc.stderr
    assert sorted(results) == sorted(fault_run["order"])
    for result in results.values():
        assert errors("CaptureResult", result) == [], result["id"]


@pytest.mark.parametrize("name", [name for name, *_ in FAULTS])
def test_the_next_prompt_gets_a_working_agent(fault_run: dict[str, Any], name: str) -> None:
    after = fault_run["results"][f"after-{name}"]
    assert after["status"] == "passed", after["errors"]
    assert after["output"] == f"fine after {name}" and after["exit"]["stopReason"] == "end_turn"
    pids = fault_run["pids"]
    if name in KEEPS_AGENT:
        assert pids[f"after-{name}"] == pids[name], "a recoverable fault must not restart the agent"
    else:
        assert pids[f"after-{name}"].isdisjoint(pids[name]), "the faulty agent must be replaced"


def test_no_process_the_agents_started_is_left(fault_run: dict[str, Any]) -> None:
    assert fault_run["leftovers"] == ""


def test_never_answering_initialize_times_out_with_its_stderr(fault_run: dict[str, Any]) -> None:
    r = fault_run["results"]["never-initializes"]
    assert r["status"] == "error" and r["errors"] == ["agent timed out after 2s"]
    assert r["exit"]["timedOut"] is True and r["exit"]["stopReason"] is None
    assert "faulty agent: ignoring initialize" in r["stderr"]
    assert r["output"] == "" and r["trajectory"] == []  # the prompt never reached the agent


def test_hang_before_the_first_event_is_cancelled_then_killed(fault_run: dict[str, Any]) -> None:
    r = fault_run["results"]["hangs-before-first-event"]
    assert r["status"] == "error" and r["errors"] == ["agent timed out after 2s"]
    assert r["exit"]["timedOut"] is True and r["exit"]["stopReason"] is None
    assert r["stderr"] == "faulty agent: stalling\n"
    assert r["output"] == "" and len(r["trajectory"]) == 1


@pytest.mark.parametrize("name", sorted(NOT_JSON_RPC))
def test_malformed_json_rpc_ends_the_prompt_keeping_what_came_before(fault_run: dict[str, Any], name: str) -> None:
    r = fault_run["results"][name]
    assert r["status"] == "error" and r["output"] == "before" and messages(r) == ["before"]
    assert len(r["errors"]) == 1 and r["errors"][0].startswith("malformed JSON-RPC from the agent: ")
    assert r["errors"][0].endswith("; agent restarted")
    assert r["exit"]["timedOut"] is False


def test_malformed_lines_are_quoted_in_the_error(fault_run: dict[str, Any]) -> None:
    results = fault_run["results"]
    assert "'this is not JSON'" in results["not-json"]["errors"][0]
    assert "not a JSON-RPC 2.0 message" in results["json-not-rpc"]["errors"][0]
    assert "exactly one of 'result' or 'error'" in results["response-without-result"]["errors"][0]
    assert "'oops'" in results["error-code-not-int"]["errors"][0]
    assert "'bad'" in results["error-not-object"]["errors"][0]
    assert "no stopReason" in results["result-without-stop-reason"]["errors"][0]


def test_unknown_client_methods_get_method_not_found_and_the_prompt_goes_on(fault_run: dict[str, Any]) -> None:
    r = fault_run["results"]["unknown-methods"]
    assert r["status"] == "passed" and r["errors"] == [] and r["exit"]["stopReason"] == "end_turn"
    said = "".join(messages(r))
    assert "x/unknown answered -32601" in said and "y/unknown answered -32601" in said  # even with list params
    assert r["output"].endswith("still here")
    recorded = {s["name"]: s["extra"]["data"] for s in r["trajectory"] if s["type"] == "event"}
    assert recorded["x/unknown"]["error"] == recorded["y/unknown"]["error"] == "method not supported by waza"
    assert isinstance(recorded["y/unknown"]["params"], list)
    assert recorded["z/unknown"]["n"] == 1  # an unknown notification is kept whole


def test_stderr_flood_is_drained_and_only_its_tail_kept(fault_run: dict[str, Any]) -> None:
    r = fault_run["results"]["stderr-flood"]
    assert r["status"] == "passed" and r["output"] == "survived" and r["errors"] == []
    assert r["stderr"].endswith("flood done\n") and len(r["stderr"]) <= 8192


def test_a_50_mb_message_is_captured_whole(fault_run: dict[str, Any]) -> None:
    r = fault_run["results"]["big-message"]
    assert r["status"] == "passed" and r["errors"] == [] and r["exit"]["stopReason"] == "end_turn"
    output = r["output"]
    assert len(output) == BIG and output[0] == "<" and output[-1] == ">"
    assert output[1:-1] == ("0123456789abcdef" * (BIG // 16))[2:]
    assert messages(r) == [output]


def test_a_thousand_permission_requests_are_each_answered_by_policy_and_recorded(fault_run: dict[str, Any]) -> None:
    r = fault_run["results"]["permissions"]
    assert r["status"] == "passed" and r["errors"] == [] and r["exit"]["timedOut"] is False
    assert r["output"] == 'permissions answered: {"no": 250, "none": 0, "yes": 750}'
    steps = [s for s in r["trajectory"] if s["type"] == "permission"]
    assert len(steps) == 1000
    by_tool = {s["toolCallId"]: s["extra"]["decision"] for s in steps}
    assert len(by_tool) == 1000
    for i in range(1000):
        decision = by_tool[f"t{i}"]
        if i % 4 == 0:
            assert (decision["decision"], decision["optionId"]) == ("deny", "no")
            assert decision["rule"].endswith("rules.jsonl:1")
        else:
            assert (decision["decision"], decision["optionId"], decision["rule"]) == ("allow", "yes", "default")


def test_an_agent_ignoring_cancel_is_killed_after_the_grace(fault_run: dict[str, Any]) -> None:
    r = fault_run["results"]["ignores-cancel"]
    assert r["status"] == "error" and r["errors"] == ["agent timed out after 2s"]
    assert r["exit"]["timedOut"] is True and r["exit"]["stopReason"] in (None, "cancelled")
    # What it did after the cancel is kept too: its late permission request was answered "cancelled".
    assert messages(r) == ["working", "after cancel: cancelled"]
    late = [s["extra"]["decision"] for s in r["trajectory"] if s["type"] == "permission"]
    assert late == [{"outcome": "cancelled", "reason": "the prompt is being cancelled"}]


def test_an_agent_exiting_with_children_running_is_noticed_at_once(fault_run: dict[str, Any]) -> None:
    """Its child holds the agent's stdout open: the exit must still end the prompt, not the timeout."""
    r = fault_run["results"]["exits-with-children"]
    assert r["status"] == "error" and r["exit"]["timedOut"] is False
    assert r["exit"]["code"] == 0 and r["errors"] == ["the agent exited during the prompt (exit code 0); agent restarted"]
    assert r["output"] == "leaving"


def test_a_crash_mid_stream_keeps_the_partial_answer(fault_run: dict[str, Any]) -> None:
    r = fault_run["results"]["crashes-mid-stream"]
    assert r["status"] == "error" and r["exit"]["code"] == 3 and r["output"] == "partial"
    assert "crashing on purpose" in r["stderr"]
