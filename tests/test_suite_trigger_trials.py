"""Trigger tests over several runs (``--trigger-trials``): each prompt's trigger rate, and a confusion matrix in
which each run counts for its share of the prompt's weight. The agent is a real exec program that invokes the
skill on odd trials only, so a rate between 0 and 1 is measured, not assumed."""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import orjson
import pytest

from tests.conftest import read_jsonl, run_waza

AGENT = """\
import json, os
if int(os.environ.get("WAZA_TRIAL", "1")) % 2:
    print(json.dumps({"type": "tool_call", "name": "skill", "status": "completed", "input": {"skill": "demo"}}))
print(json.dumps({"type": "message", "content": "done"}))
"""


@pytest.fixture
def suite(tmp_path: Path) -> Path:
    (tmp_path / "tasks").mkdir()
    (tmp_path / "eval.yaml").write_text("name: trig\nskill: demo\ntasks: ['tasks/*.yaml']\n")
    (tmp_path / "tasks" / "t.yaml").write_text(
        "id: t\ninputs: {prompt: hi}\ngraders: [{type: text, config: {contains: [done]}}]\n"
    )
    (tmp_path / "trigger_tests.yaml").write_text(
        textwrap.dedent("""\
            skill: demo
            should_trigger_prompts:
              - prompt: use the demo skill
            should_not_trigger_prompts:
              - prompt: what time is it
                confidence: medium
            """)
    )
    (tmp_path / "agent.py").write_text(AGENT)
    return tmp_path


def run(suite: Path, *args: str) -> tuple[dict, list[dict]]:
    doc, out = suite / "doc.json", suite / "out.jsonl"
    done = run_waza(
        "run", suite, "--adapter", "exec", "--events", "-o", out, "--reporter", f"json:{doc}",
        "--reporter", f"markdown:{suite / 'report.md'}", "--no-progress", *args, "--", sys.executable, suite / "agent.py",
    )  # fmt: skip
    assert done.returncode in (0, 1), done.stderr.decode()
    return orjson.loads(doc.read_bytes())["triggers"], read_jsonl(out)


def test_each_prompt_runs_trigger_trials_times_and_gets_its_trigger_rate(suite: Path) -> None:
    triggers, lines = run(suite, "--trigger-trials", "3")
    should, should_not = triggers["cases"]
    assert (should["runs"], should["triggerRate"], should["triggered"], should["correct"]) == (3, 2 / 3, True, True)
    assert (should_not["runs"], should_not["triggerRate"], should_not["triggered"]) == (3, 2 / 3, True)
    # each run counts a third of its prompt's weight (high 1.0, medium 0.5)
    assert triggers["truePositives"] == pytest.approx(2 / 3) and triggers["falseNegatives"] == pytest.approx(1 / 3)
    assert triggers["trueNegatives"] == pytest.approx(0.5 / 3) and triggers["falsePositives"] == pytest.approx(1 / 3)
    runs = sorted(r["trial"] for r in lines if "trigger" in r["metadata"] and r["id"] == "trigger-001")
    assert runs == [1, 2, 3]
    assert len([r for r in lines if "trigger" not in r["metadata"]]) == 1  # the task's own trial count is unchanged
    assert "| what time is it | no | medium | yes (67% of 3) |" in (suite / "report.md").read_text()


def test_one_run_per_prompt_by_default(suite: Path) -> None:
    triggers, lines = run(suite)
    assert [(c["runs"], c["triggerRate"], c["triggered"]) for c in triggers["cases"]] == [(1, 1.0, True), (1, 1.0, True)]
    assert [r.get("trial") for r in lines if "trigger" in r["metadata"]] == [None, None]
    assert triggers["truePositives"] == 1.0 and triggers["falsePositives"] == 0.5
