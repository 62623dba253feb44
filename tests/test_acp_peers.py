"""Interop: ACP agents built on the official SDKs (Python and Node), real agent processes graded by a real
grader: their records through the API in-process; one run through `waza capture` for the command line."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import waza
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


def workspace_and_grader(tmp: Path) -> tuple[Path, Path]:
    workspace = tmp / "work"
    workspace.mkdir(exist_ok=True)
    (workspace / "notes.txt").write_text("Buy milk. Then eggs.\n")
    return workspace, executable(tmp / "grader.py", GRADER)


def capture(tmp: Path, agent: list[str], prompts: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """The records through the API in-process (the agent and the grader are still processes of their own)."""
    workspace, grader = workspace_and_grader(tmp)
    spec = waza.AcpAgent(command=tuple(agent))
    results = waza.capture(prompts, spec, [waza.Executable(argv=(str(grader),))], workspace=waza.Workspace(cwd=workspace))
    by_id = {r.id: r.to_dict() for r in results}
    assert all(errors("CaptureResult", r) == [] for r in by_id.values())
    return by_id


def test_python_sdk_agent(tmp_path: Path) -> None:
    agent = [sys.executable, str(AGENTS / "sdk_acp_agent.py")]
    prompts = [
        {"id": "notes", "input": "Summarize the notes", "hint": "I wrote summary.md"},
        {"id": "slow", "input": "be slow", "timeout": 1},
    ]
    results = capture(tmp_path, agent, prompts)
    notes = results["notes"]
    assert notes["status"] == "passed", notes
    assert notes["output"] == "I wrote summary.md; the notes begin: Buy milk. Then eggs."
    assert (tmp_path / "work" / "summary.md").read_text() == "# Summary\n\nBuy milk. Then eggs.\n"
    types = [s["type"] for s in notes["trajectory"]]
    assert types[:2] == ["message", "thought"] and "permission" in types and "tool_call" in types
    assert [s["content"] for s in notes["trajectory"] if s.get("messageId") == "m1"] == ["wc exited 0: 21 bytes."]
    assert notes["usage"] == {"inputTokens": 3, "outputTokens": 12, "totalTokens": 15}
    slow = results["slow"]
    assert slow["status"] == "error" and slow["exit"] == {  # status error: what makes the CLI exit 1
        "code": None,
        "signal": None,
        "timedOut": True,
        "stopReason": "cancelled",
    }


def test_python_sdk_agent_denied(tmp_path: Path) -> None:
    """The command line's path: --permission deny and --cwd reach the agent; a failed verdict is exit 0."""
    workspace, grader = workspace_and_grader(tmp_path)
    prompts = write_jsonl(tmp_path / "p.jsonl", [{"id": "notes", "input": "Summarize", "hint": "summary"}])
    agent = [sys.executable, str(AGENTS / "sdk_acp_agent.py")]
    proc = run_waza("capture", prompts, "--grader", grader, "--cwd", workspace, "--permission", "deny", "--", *agent)
    [notes] = read_jsonl(proc.stdout)
    assert errors("CaptureResult", notes) == []
    assert notes["output"].startswith("I was not allowed to write summary.md")
    assert notes["toolErrors"] is True and notes["status"] == "failed"
    assert not (workspace / "summary.md").exists()
    assert proc.returncode == 0, proc.stderr


def test_python_sdk_agent_error_keeps_its_data(tmp_path: Path) -> None:
    agent = [sys.executable, str(AGENTS / "sdk_acp_agent.py")]
    results = capture(tmp_path, agent, [{"id": "boom", "input": "explode now", "hint": "x"}])
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
    results = capture(tmp_path, ["node", str(node_agent)], prompts)
    notes = results["notes"]
    assert notes["output"] == "Notes say: Buy milk. Then eggs.. Answer written: true."
    assert (tmp_path / "work" / "answer.txt").read_text() == "42\n"
    assert [s["entries"][0]["status"] for s in notes["trajectory"] if s["type"] == "plan"] == ["in_progress", "completed"]
    tool = next(s for s in notes["trajectory"] if s["type"] == "tool_call")
    assert (tool["toolCallId"], tool["status"], tool["output"]) == ("node-write", "completed", {"allowed": True})
    assert notes["usage"]["totalTokens"] == 16 and notes["exit"]["stopReason"] == "end_turn"
    assert notes["status"] == "passed"
    assert results["slow"]["exit"]["stopReason"] == "cancelled" and results["slow"]["exit"]["timedOut"] is True
    assert results["slow"]["status"] == "error"  # what makes the CLI exit 1


def test_node_sdk_agent_reusing_ids_across_turns(tmp_path: Path, node_agent: Path) -> None:
    """The SDK agent reuses its tool-call id and message id every turn: each turn keeps its own steps."""
    prompts = [{"id": "twice", "input": ["What do the notes say?", "Say it again"], "hint": "Buy milk"}]
    results = capture(tmp_path, ["node", str(node_agent)], prompts)
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
