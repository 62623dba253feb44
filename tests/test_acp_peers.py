"""Interop: ACP agents built on the official SDKs (Python and Node), captured end to end with graders."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from waza.protocol.schemas import errors

from .conftest import executable, read_jsonl, run_waza, write_jsonl

AGENTS = Path(__file__).parent / "agents"
NODE_SDK = "@agentclientprotocol/sdk@2.4.0"

GRADER = f"""#!{sys.executable}
import json, sys
req = json.load(sys.stdin)
ok = (req.get("hint") or "") in req["output"] and not req["toolErrors"]
print(json.dumps({{"pass": ok, "score": 1.0 if ok else 0.0, "reasoning": "ok" if ok else "hint missing or tool failed"}}))
"""


def capture(tmp: Path, agent: list[str], prompts: list[dict[str, Any]], *options: str) -> tuple[int, dict[str, dict[str, Any]]]:
    workspace = tmp / "work"
    workspace.mkdir(exist_ok=True)
    (workspace / "notes.txt").write_text("Buy milk. Then eggs.\n")
    grader = executable(tmp / "grader.py", GRADER)
    proc = run_waza(
        "capture", write_jsonl(tmp / "p.jsonl", prompts), "--grader", grader, "--cwd", workspace, *options, "--", *agent
    )
    results = {r["id"]: r for r in read_jsonl(proc.stdout)}
    assert all(errors("CaptureResult", r) == [] for r in results.values())
    return proc.returncode, results


def test_python_sdk_agent(tmp_path: Path) -> None:
    agent = [sys.executable, str(AGENTS / "sdk_acp_agent.py")]
    prompts = [
        {"id": "notes", "input": "Summarize the notes", "hint": "I wrote summary.md"},
        {"id": "slow", "input": "be slow", "timeout": 1},
    ]
    code, results = capture(tmp_path, agent, prompts)
    notes = results["notes"]
    assert notes["status"] == "passed", notes
    assert notes["output"] == "I wrote summary.md; the notes begin: Buy milk. Then eggs."
    assert (tmp_path / "work" / "summary.md").read_text() == "# Summary\n\nBuy milk. Then eggs.\n"
    types = [s["type"] for s in notes["trajectory"]]
    assert types[:2] == ["message", "thought"] and "permission" in types and "tool_call" in types
    assert [s["content"] for s in notes["trajectory"] if s.get("messageId") == "m1"] == ["wc exited 0: 21 bytes."]
    assert notes["usage"] == {"inputTokens": 3, "outputTokens": 12, "totalTokens": 15}
    slow = results["slow"]
    assert slow["status"] == "error" and slow["exit"] == {
        "code": None,
        "signal": None,
        "timedOut": True,
        "stopReason": "cancelled",
    }
    assert code == 1


def test_python_sdk_agent_denied(tmp_path: Path) -> None:
    agent = [sys.executable, str(AGENTS / "sdk_acp_agent.py")]
    code, results = capture(tmp_path, agent, [{"id": "notes", "input": "Summarize", "hint": "summary"}], "--permission", "deny")
    notes = results["notes"]
    assert notes["output"].startswith("I was not allowed to write summary.md")
    assert notes["toolErrors"] is True and notes["status"] == "failed"
    assert not (tmp_path / "work" / "summary.md").exists()
    assert code == 0


def test_python_sdk_agent_error_keeps_its_data(tmp_path: Path) -> None:
    agent = [sys.executable, str(AGENTS / "sdk_acp_agent.py")]
    _, results = capture(tmp_path, agent, [{"id": "boom", "input": "explode now", "hint": "x"}])
    boom = results["boom"]
    assert boom["status"] == "error"
    [error] = boom["errors"]
    assert "Internal error (JSON-RPC error -32603)" in error
    assert 'data: {"reason":"disk full","path":"summary.md"}' in error


@pytest.fixture(scope="module")
def node_agent() -> Path:
    """The Node agent next to an installed copy of the SDK (installed once into a cache directory)."""
    if not shutil.which("node") or not shutil.which("npm"):
        pytest.skip("node and npm are needed for the Node ACP SDK peer")
    cache = Path(os.environ.get("WAZA_TEST_CACHE", Path.home() / ".cache" / "waza-tests")) / "acp-node-sdk-2.4.0"
    if not (cache / "node_modules" / "@agentclientprotocol" / "sdk" / "package.json").exists():
        cache.mkdir(parents=True, exist_ok=True)
        try:
            done = subprocess.run(
                ["npm", "install", "--prefix", str(cache), "--no-audit", "--no-fund", "--loglevel=error", NODE_SDK],
                capture_output=True,
                timeout=300,
            )
        except subprocess.TimeoutExpired:
            pytest.skip(f"npm install {NODE_SDK} timed out")
        if done.returncode != 0:
            pytest.skip(f"npm install {NODE_SDK} failed: {done.stderr.decode(errors='replace')[-300:]}")
    script = cache / "node_acp_agent.mjs"
    shutil.copyfile(AGENTS / "node_acp_agent.mjs", script)  # ESM resolves packages next to the script
    return script


def test_node_sdk_agent(tmp_path: Path, node_agent: Path) -> None:
    prompts = [
        {"id": "notes", "input": "What do the notes say?", "hint": "Buy milk"},
        {"id": "slow", "input": "slow down", "timeout": 1},
    ]
    code, results = capture(tmp_path, ["node", str(node_agent)], prompts)
    notes = results["notes"]
    assert notes["output"] == "Notes say: Buy milk. Then eggs.. Answer written: true."
    assert (tmp_path / "work" / "answer.txt").read_text() == "42\n"
    assert [s["entries"][0]["status"] for s in notes["trajectory"] if s["type"] == "plan"] == ["in_progress", "completed"]
    tool = [s for s in notes["trajectory"] if s["type"] == "tool_call"][0]
    assert (tool["toolCallId"], tool["status"], tool["output"]) == ("node-write", "completed", {"allowed": True})
    assert notes["usage"]["totalTokens"] == 16 and notes["exit"]["stopReason"] == "end_turn"
    assert notes["status"] == "passed"
    assert results["slow"]["exit"]["stopReason"] == "cancelled" and results["slow"]["exit"]["timedOut"] is True
    assert code == 1


def test_node_sdk_agent_reusing_ids_across_turns(tmp_path: Path, node_agent: Path) -> None:
    """The SDK agent reuses its tool-call id and message id every turn: each turn keeps its own steps."""
    prompts = [{"id": "twice", "input": ["What do the notes say?", "Say it again"], "hint": "Buy milk"}]
    _, results = capture(tmp_path, ["node", str(node_agent)], prompts)
    steps = results["twice"]["trajectory"]
    tools = [s for s in steps if s["type"] == "tool_call"]
    assert [(t["toolCallId"], t["turn"], t["status"]) for t in tools] == [
        ("node-write", 0, "completed"),
        ("node-write", 1, "completed"),
    ]
    assert [s["turn"] for s in steps if s["type"] == "permission"] == [0, 1]
    answers = [s for s in steps if s["type"] == "message" and s["role"] == "agent"]
    assert [(a["messageId"], a["turn"]) for a in answers] == [("node-m1", 0), ("node-m1", 1)]
    assert answers[0]["content"] == answers[1]["content"] == "Notes say: Buy milk. Then eggs.. Answer written: true."
    assert results["twice"]["output"] == answers[1]["content"]
