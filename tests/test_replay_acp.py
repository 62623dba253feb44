"""Replaying an ACP ``--raw-log`` rebuilds the trajectory the live run recorded."""

from __future__ import annotations

import sys
from pathlib import Path

from waza.protocol.schemas import errors

from .conftest import read_jsonl, run_waza, write_jsonl

AGENT = [sys.executable, str(Path(__file__).parent / "agents" / "scripted_acp_agent.py")]

PROMPTS = [
    {"id": "tools", "input": "think let me see\ntool t1\ntool t2 fail\nplan\nusage\nsay@m1 final answer", "hint": "final"},
    {"id": "perm", "input": "permission read cat notes\nsay done"},
    {"id": "multi", "input": ["say first turn", "say second turn"]},
]


def shape(result: dict) -> list[tuple]:
    """What a replay must reproduce: step kinds, text, tool lifecycle, permission decisions."""
    out = []
    for s in result["trajectory"]:
        decision = (s.get("extra") or {}).get("decision") or {}
        out.append(
            (
                s["type"],
                s.get("role"),
                s.get("content"),
                s.get("toolCallId"),
                s.get("status"),
                s.get("turn"),
                {k: decision.get(k) for k in ("outcome", "optionId", "kind")},
            )
        )
    return out


def test_raw_log_replays_to_the_same_trajectory(tmp_path):
    prompts = write_jsonl(tmp_path / "p.jsonl", PROMPTS)
    raw = tmp_path / "raw.jsonl"
    live = run_waza(
        "capture",
        prompts,
        "--adapter",
        "acp",
        "--raw-log",
        raw,
        "--permission",
        "allow",
        "--grader",
        "builtin:hint",
        "-o",
        tmp_path / "live.jsonl",
        "--",
        *AGENT,
    )
    assert live.returncode in (0, 1), live.stderr
    replayed = run_waza(
        "capture", prompts, "--adapter", "replay", "--from", raw, "--grader", "builtin:hint", "-o", tmp_path / "replay.jsonl"
    )
    assert replayed.returncode in (0, 1), replayed.stderr
    before = {r["id"]: r for r in read_jsonl(tmp_path / "live.jsonl")}
    after = {r["id"]: r for r in read_jsonl(tmp_path / "replay.jsonl")}
    for pid in before:
        assert errors("CaptureResult", after[pid]) == []
        assert shape(after[pid]) == shape(before[pid]), pid
        assert after[pid]["output"] == before[pid]["output"]
        assert after[pid]["exit"]["stopReason"] == before[pid]["exit"]["stopReason"] == "end_turn"
        assert after[pid]["toolErrors"] == before[pid]["toolErrors"]
        assert after[pid].get("usage") == before[pid].get("usage")  # absent, not null, when unknown
        assert after[pid]["status"] == before[pid]["status"]
