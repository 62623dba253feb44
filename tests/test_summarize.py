"""waza summarize: compact views of real capture and trials files, JSONL and Markdown."""

from __future__ import annotations

import orjson

from waza.protocol.schemas import errors

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
