"""Suites written for the original waza: every key its eval and task schemas accept passes ``waza check``.

The fixture tests/fixtures/suites/original-keys uses every key of the
original's schemas/eval.schema.json and schemas/task.schema.json (microsoft/waza),
each grader type with every key of its config. Keys waza acts on are honoured;
the others are reported, one ``file:line: key: not supported by waza`` line
each, by ``waza check`` and at the start of ``waza run``, never silently dropped.
"""

from __future__ import annotations

from pathlib import Path

import orjson

from tests.conftest import run_waza
from waza.runner.suites.loader import load_suite

SUITE = Path(__file__).parent / "fixtures" / "suites" / "original-keys" / "eval.yaml"

#: Keys the suite uses that waza accepts but does not act on: each must be reported.
REPORTED = [
    "eval.yaml:15: config.max_attempts",
    "eval.yaml:16: config.group_by",
    "eval.yaml:18: config.skill_directories",
    "eval.yaml:19: config.required_skills",
    "eval.yaml:20: config.mcp_servers",
    "eval.yaml:22: hooks",
    "eval.yaml:31: inputs",
    "eval.yaml:35: baseline",
    "eval.yaml:45: graders[1].model",
    "eval.yaml:46: graders[1].script",
    "eval.yaml:80: metrics[2].name: waza does not compute 'custom_quality'",
    "one.yaml:9: priority",
    "one.yaml:17: inputs.environment",
    "one.yaml:22: expected.outcomes[1].type",
    "one.yaml:25: expected.tool_calls",
    "one.yaml:28: expected.behavior.max_iterations",
    "one.yaml:34: expected.should_trigger",
]


def test_every_key_of_the_original_schemas_passes_check_and_is_reported():
    done = run_waza("check", SUITE)
    err = done.stderr.decode()
    assert done.returncode == 0, err
    for key in REPORTED:
        assert key in err, f"{key!r} not reported:\n{err}"
    assert "ok: 2 tasks" in err


def test_honoured_keys_take_effect():
    """tasks_from adds the task files it matches, range keeps positions 0..1, judge_model reaches the judge."""
    suite = load_suite(SUITE)
    assert [t.id for t in suite.tasks] == ["one", "two"]
    one = suite.tasks[0]
    names = [g.name for g in one.graders]
    assert "expected_output_not_contains" in names and "expected_outcomes" in names
    judge = next(g for g in one.graders if g.name == "judge")
    assert judge.config["model"] == "judge-model"


def test_a_range_selects_tasks_by_position(tmp_path):
    text = SUITE.read_text().replace("range: [0, 1]", "range: [1, 1]")
    copy = tmp_path / "suite"
    import shutil

    shutil.copytree(SUITE.parent, copy)
    (copy / "eval.yaml").write_text(text)
    assert [t.id for t in load_suite(copy / "eval.yaml").tasks] == ["two"]


def test_run_reports_the_unsupported_keys_and_a_custom_metric_has_no_value(tmp_path):
    out = tmp_path / "results.jsonl"
    doc = tmp_path / "suite.json"
    done = run_waza("run", SUITE, "--adapter", "mock", "-o", out, "--reporter", f"json:{doc}")
    err = done.stderr.decode()
    assert done.returncode in (0, 1), err
    assert "config.mcp_servers: not supported by waza, ignored" in err
    metrics = {m["name"]: m for m in orjson.loads(doc.read_bytes())["metrics"]}
    assert metrics["custom_quality"]["value"] is None and "does not compute" in metrics["custom_quality"]["detail"]


def test_undefined_trigger_rates_are_0_as_in_the_original():
    """The original's trigger metrics report precision/recall/F1 as 0.0 when undefined (nothing triggered)."""
    from waza.protocol.records import CaptureResult
    from waza.runner.suites.models import TriggerPrompt, TriggerTests
    from waza.runner.suites.triggers import case_id, report

    tests = TriggerTests(
        skill="demo", file="trigger_tests.yaml", prompts=[TriggerPrompt("use demo", True), TriggerPrompt("unrelated", False)]
    )
    results = {
        case_id(i): CaptureResult.from_dict({"id": case_id(i), "input": p.prompt, "output": "ok", "trajectory": []})
        for i, p in enumerate(tests.prompts)
    }
    got = report(tests, results)
    assert (got.precision, got.recall, got.f1, got.accuracy) == (0.0, 0.0, 0.0, 0.5)
