"""Real results files for the analysis tests, made by the engine (the API of `waza capture` / `waza trials`) with the quiz agent."""

from __future__ import annotations

import sys
from pathlib import Path

import waza

from .conftest import ROOT, write_jsonl

AGENT = ROOT / "tests" / "agents" / "quiz_agent.py"

PROMPTS = [
    {"id": "q1", "input": "Say apple", "hint": "apple", "metadata": {"category": "fruit"}},
    {"id": "q2", "input": "Say pear", "hint": "pear", "metadata": {"category": "fruit"}},
    {"id": "q3", "input": "Say <script>alert(1)</script>", "hint": "<script>alert(1)</script>", "metadata": {"category": "html"}},
    {"id": "q4", "input": "Say plum", "hint": "plum", "metadata": {"category": "fruit"}},
]


def prompts_file(tmp: Path) -> Path:
    return write_jsonl(tmp / "prompts.jsonl", PROMPTS)


def _agent(rules: tuple[str, ...]) -> waza.ExecAgent:
    return waza.ExecAgent(command=(sys.executable, str(AGENT), *rules), events=True)


def capture(tmp: Path, name: str, *rules: str, prompts: Path | None = None) -> Path:
    """Capture PROMPTS with the quiz agent; rules like q2=fail, q3=error choose the verdicts.

    Through the API in-process: these files are the analysis tests' input, the capture is not their point."""
    out = tmp / name
    waza.capture(prompts or prompts_file(tmp), _agent(rules), [waza.Builtin(grader="hint")], output=waza.Output(str(out)))
    return out


def trials(tmp: Path, name: str, k: int, *rules: str) -> Path:
    out = tmp / name
    waza.trials(prompts_file(tmp), _agent(rules), [waza.Builtin(grader="hint")], k=k, output=waza.Output(str(out)))
    return out
