"""Suites written for the original waza: every key its eval and task schemas accept passes ``waza check``.

The fixture tests/fixtures/suites/original-keys uses every key of the
original's schemas/eval.schema.json and schemas/task.schema.json (microsoft/waza),
each grader type with every key of its config. Keys waza acts on are honoured;
the others are reported, one ``file:line: key: not supported by waza`` line
each, by ``waza check`` and at the start of ``waza run``, never silently dropped.
"""

from __future__ import annotations

import sys
from pathlib import Path

import orjson

from tests.conftest import read_jsonl, run_waza
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
        case_id(i): [CaptureResult.from_dict({"id": case_id(i), "input": p.prompt, "output": "ok", "trajectory": []})]
        for i, p in enumerate(tests.prompts)
    }
    got = report(tests, results)
    assert (got.precision, got.recall, got.f1, got.accuracy) == (0.0, 0.0, 0.0, 0.5)


def csv_suite(folder: Path, rows: str, *extra: str) -> Path:
    """A suite whose tasks are the rows of tasks.csv, as the original waza's tasks_from reads them."""
    folder.mkdir(exist_ok=True)
    (folder / "tasks.csv").write_text(rows)
    (folder / "eval.yaml").write_text(
        "name: from-csv\nconfig: {trials_per_task: 1}\ninputs: {lang: Python, audience: beginners}\n"
        "tasks_from: tasks.csv\n" + "".join(f"{line}\n" for line in extra) + "graders:\n"
        "  - type: text\n    name: mentions_language\n    config: {regex_match: ['(?i)explain']}\n"
    )
    return folder / "eval.yaml"


def test_tasks_from_a_csv_file_makes_one_task_per_row_with_its_prompt_rendered(tmp_path):
    rows = (
        "id,name,prompt,lang\n"
        'first,Go async,"Explain {{.Vars.lang}} channels to {{ .Vars.audience }}",Go\n'
        ',named only,"Explain {{.Vars.lang}}, ""quoted"" (task {{.TaskName}})",Rust\n'
        ",,Explain {{.Vars.lang}} generics,\n"
    )
    suite = csv_suite(tmp_path / "suite", rows, "range: [1, 3]")
    loaded = load_suite(suite)
    assert [(t.id, t.name, t.prompt) for t in loaded.tasks] == [
        ("first", "Go async", "Explain Go channels to beginners"),
        ("named only", "named only", 'Explain Rust, "quoted" (task named only)'),
        ("row-3", "row-3", "Explain  generics"),  # an empty column is still the row's value, as in the original
    ]
    assert [g.name for g in loaded.tasks[0].graders] == ["mentions_language"]
    assert not any("inputs" in notice for notice in loaded.notices)
    agent = Path(__file__).parent / "agents" / "exec_agent.py"
    out, doc = tmp_path / "results.jsonl", tmp_path / "suite.json"
    done = run_waza("run", suite, "--adapter", "exec", "-o", out, "--reporter", f"json:{doc}", "--", sys.executable, agent)
    assert done.returncode == 0, done.stderr.decode()
    outputs = {line["id"]: line["output"] for line in read_jsonl(out)}
    assert outputs["first"] == "echo: Explain Go channels to beginners" and len(outputs) == 3
    assert orjson.loads(doc.read_bytes())["summary"]["passed"] == 3
    # range picks rows from 1, as the original's CSV loader
    assert [t.id for t in load_suite(csv_suite(tmp_path / "ranged", rows, "range: [2, 9]")).tasks] == ["named only", "row-3"]


def test_a_bad_csv_tasks_file_is_refused_with_its_file_and_line(tmp_path):
    cases = [
        (
            "id,prompt\na,Explain {{.Vars.nothing}}\n",
            "tasks.csv:2: field 'prompt': {{.Vars.nothing}}: no column or input named 'nothing'",
        ),
        ("id,prompt\na,x\nb,y,z\n", "tasks.csv:3: has 3 fields, the header has 2"),
        ("id,prompt\na,x\na,y\n", "tasks.csv:3: field 'id': task id 'a' is also used by"),
        ("id,prompt\na,{{if .Vars.id}}x{{end}}\n", "tasks.csv:2: field 'prompt': {{if .Vars.id}}: waza fills in only"),
        ("", "tasks.csv:1: is empty (no header row)"),
    ]
    for i, (rows, message) in enumerate(cases):
        suite = csv_suite(tmp_path / f"s{i}", rows)
        done = run_waza("check", suite, cwd=suite.parent)
        assert done.returncode == 2 and message in done.stderr.decode(), (rows, done.stderr)
        assert b"Traceback" not in done.stderr
    outside = csv_suite(tmp_path / "outside", "id,prompt\na,x\n")
    (outside.parent / "eval.yaml").write_text(outside.read_text().replace("tasks_from: tasks.csv", "tasks_from: ../s0/tasks.csv"))
    done = run_waza("check", outside)
    assert done.returncode == 2 and b"is outside the suite's folder" in done.stderr
    done = run_waza("check", csv_suite(tmp_path / "zero", "id,prompt\na,x\n", "range: [0, 1]"))
    assert done.returncode == 2 and b"range counts rows from 1" in done.stderr
