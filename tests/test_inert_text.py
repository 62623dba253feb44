"""Agent text with terminal escape sequences reaches the user's terminal inert: capture's error digest and stderr
tail, `summarize -f markdown` and `report -f markdown`, each run as a user runs it."""

from __future__ import annotations

import sys

from waza.protocol.inert import inert

from .conftest import executable, run_waza, write_jsonl

#: A title change (OSC), a screen clear (CSI), a C1 CSI, a bell and a backspace that would hide what came before.
HOSTILE = "\x1b]0;pwned\x07\x1b[2J\x9b31m\x08\x08done"
CONTROLS = [b"\x1b", b"\x07", b"\x08", "\x9b".encode()]


def test_inert_shows_controls_and_keeps_text_newlines_and_tabs():
    assert inert("a\tb\nc") == "a\tb\nc" and inert("ünï ☃") == "ünï ☃"
    assert inert(HOSTILE) == "\\x1b]0;pwned\\x07\\x1b[2J\\x9b31m\\x08\\x08done"


def test_capture_prints_an_agent_s_stderr_tail_and_errors_inert(tmp_path):
    agent = executable(
        tmp_path / "agent.py",
        f"#!{sys.executable}\nimport sys\nsys.stderr.write({HOSTILE!r} + '\\n')\nprint({HOSTILE!r})\nsys.exit(3)\n",
    )
    prompts = write_jsonl(tmp_path / "p.jsonl", [{"id": "a", "input": "x"}])
    proc = run_waza("capture", prompts, "--adapter", "exec", "-o", tmp_path / "out.jsonl", "--", agent)
    assert b"agent stderr of a" in proc.stderr and b"\\x1b]0;pwned" in proc.stderr
    assert not any(c in proc.stderr for c in CONTROLS)
    for command in (["summarize", "-f", "markdown"], ["report", "-f", "markdown"]):
        shown = run_waza(*command, tmp_path / "out.jsonl")
        assert shown.returncode == 0, shown.stderr
        assert b"pwned" in shown.stdout and not any(c in shown.stdout for c in CONTROLS), command
