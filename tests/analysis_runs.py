"""Real results files for the analysis tests, made by `waza capture` / `waza trials` with the quiz agent."""

from __future__ import annotations

import sys
from pathlib import Path

from .conftest import ROOT, run_waza, write_jsonl

AGENT = ROOT / "tests" / "agents" / "quiz_agent.py"

PROMPTS = [
    {"id": "q1", "input": "Say apple", "hint": "apple", "metadata": {"category": "fruit"}},
    {"id": "q2", "input": "Say pear", "hint": "pear", "metadata": {"category": "fruit"}},
    {"id": "q3", "input": "Say <script>alert(1)</script>", "hint": "<script>alert(1)</script>", "metadata": {"category": "html"}},
    {"id": "q4", "input": "Say plum", "hint": "plum", "metadata": {"category": "fruit"}},
]


def prompts_file(tmp: Path) -> Path:
    return write_jsonl(tmp / "prompts.jsonl", PROMPTS)


def capture(tmp: Path, name: str, *rules: str, prompts: Path | None = None) -> Path:
    """Capture PROMPTS with the quiz agent; rules like q2=fail, q3=error choose the verdicts."""
    out = tmp / name
    proc = run_waza(
        "capture",
        prompts or prompts_file(tmp),
        "--adapter",
        "exec",
        "--events",
        "-g",
        "builtin:hint",
        "-o",
        out,
        "--",
        sys.executable,
        AGENT,
        *rules,
    )
    assert proc.returncode in (0, 1), proc.stderr.decode()
    return out


def trials(tmp: Path, name: str, k: int, *rules: str) -> Path:
    out = tmp / name
    proc = run_waza(
        "trials",
        prompts_file(tmp),
        "-k",
        str(k),
        "--adapter",
        "exec",
        "--events",
        "-g",
        "builtin:hint",
        "-o",
        out,
        "--",
        sys.executable,
        AGENT,
        *rules,
    )
    assert proc.returncode in (0, 1), proc.stderr.decode()
    return out
