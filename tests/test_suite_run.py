"""``waza run eval.yaml`` end to end through the CLI: our suites always, the reference suites
(../shared/compat, beside the repository) when present, all with the mock agent.

Expected outcomes under the mock agent are documented in tests/fixtures/suites/README.md.
"""

from __future__ import annotations

import sys
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import orjson
import pytest

from tests.conftest import compat_path, executable, read_jsonl, run_waza
from waza.protocol.schemas import errors

SUITES = Path(__file__).parent / "fixtures" / "suites"


def run_suite(tmp: Path, suite: str | Path, *args: str) -> tuple[int, dict[str, Any], list[dict[str, Any]], str]:
    """Run a suite; return the exit code, the result document, the JSONL lines and stderr (all schema-checked)."""
    doc, jsonl = tmp / "result.json", tmp / "trials.jsonl"
    done = run_waza(
        "run",
        SUITES / suite if isinstance(suite, str) else suite,
        "-o",
        jsonl,
        "--reporter",
        f"json:{doc}",
        "--no-progress",
        *args,
        cwd=tmp,
    )
    assert done.returncode in (0, 1), done.stderr.decode()
    assert done.stdout == b""
    result = orjson.loads(doc.read_bytes())
    assert errors("SuiteResult", result) == []
    lines = read_jsonl(jsonl)
    for line in lines:
        assert errors("CaptureResult", line) == []
    return done.returncode, result, lines, done.stderr.decode()


def by_id(result: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {t["id"]: t for t in result["tasks"]}


def metric(result: dict[str, Any], name: str) -> dict[str, Any]:
    return next(m for m in result["metrics"] if m["name"] == name)


@pytest.fixture(scope="module")
def code_explainer(tmp_path_factory: pytest.TempPathFactory) -> tuple[int, dict[str, Any], list[dict[str, Any]], str]:
    return run_suite(tmp_path_factory.mktemp("ce"), compat_path("waza-examples/code-explainer"))


@pytest.fixture(scope="module")
def showcase(tmp_path_factory: pytest.TempPathFactory) -> tuple[int, dict[str, Any], list[dict[str, Any]], str]:
    tmp = tmp_path_factory.mktemp("gs")
    outcome = run_suite(
        tmp,
        compat_path("waza-examples/grader-showcase"),
        "--reporter",
        f"junit:{tmp / 'junit.xml'}",
        "--reporter",
        f"markdown:{tmp / 'report.md'}",
    )
    return (*outcome, tmp)  # type: ignore[return-value]


@pytest.fixture(scope="module")
def every(tmp_path_factory: pytest.TempPathFactory) -> tuple[int, dict[str, Any], list[dict[str, Any]], str]:
    return run_suite(tmp_path_factory.mktemp("eg"), "every-grader")


def test_code_explainer_runs_with_the_mock_agent(code_explainer: Any) -> None:
    code, result, lines, stderr = code_explainer
    assert code == 1  # thresholds missed, as documented
    assert result["adapter"] == "mock" and result["model"] == "claude-sonnet-4-20250514"
    assert result["trialsPerTask"] == 3
    tasks = by_id(result)
    assert set(tasks) == {
        "explain-js-async-001",
        "explain-list-comprehension-001",
        "explain-python-recursion-001",
        "explain-sql-join-001",
    }
    for task in tasks.values():
        assert task["status"] == "failed" and len(task["trials"]) == 3
        assert [t["trial"] for t in task["trials"]] == [1, 2, 3]
    # The mock does not explain code, so expected.output_contains fails; the reference's own graders pass.
    trial = tasks["explain-python-recursion-001"]["trials"][0]
    grades = {g["name"]: g["status"] for g in trial["grades"]}
    assert grades == {
        "has_explanation": "passed",
        "no_errors": "passed",
        "expected_output_contains": "failed",
        "expected_output_contains_any": "failed",
        "expected_outcomes": "passed",
        "expected_behavior": "passed",
        "explains_recursion": "passed",
    }
    # The fixture reached the workspace: the default mock viewed it.
    views = [s for s in trial["trajectory"] if s["type"] == "tool_call"]
    assert views[-1]["name"] == "view" and "def factorial" in views[-1]["output"]
    assert trial["metadata"]["context"] == {"language": "python", "complexity": "beginner", "concept": "recursion"}
    assert len(lines) == 12 + 16  # every trial and every trigger prompt, as capture writes them
    assert "metric task_completion 0.000 < threshold 0.8" in stderr


def test_code_explainer_trigger_metrics_are_confidence_weighted(code_explainer: Any) -> None:
    _, result, _, _ = code_explainer
    trig = result["triggers"]
    # Default mock rule: the skill is invoked when a prompt word starts with "code" or "expla".
    assert [c["triggered"] for c in trig["cases"]] == [True, False, False, False, False, True, False, True] + [False] * 3 + [
        True
    ] + [False] * 4
    assert (trig["truePositives"], trig["falseNegatives"], trig["trueNegatives"], trig["falsePositives"]) == (2.5, 4.5, 6.5, 0.5)
    assert trig["accuracy"] == pytest.approx(9 / 14)
    assert trig["precision"] == pytest.approx(2.5 / 3)
    assert trig["recall"] == pytest.approx(2.5 / 7)
    assert trig["errors"] == 0
    m = metric(result, "trigger_accuracy")
    assert m["value"] == pytest.approx(9 / 14, abs=1e-6) and m["pass"] is False
    assert metric(result, "task_completion")["value"] == 0.0
    behaviour = metric(result, "behavior_quality")
    assert behaviour["value"] == 1.0 and behaviour["pass"] is True


def test_grader_showcase_outcomes_match_the_documented_ones(showcase: Any) -> None:
    code, result, lines, _stderr, _ = showcase
    assert code == 1
    statuses = {t["id"]: t["status"] for t in result["tasks"]}
    assert statuses == {
        "action-sequence-demo-001": "failed",
        "behavior-demo-001": "failed",
        "code-demo-001": "passed",
        "file-demo-001": "failed",
        "regex-demo-001": "failed",
        "skill-invocation-001": "failed",
    }
    assert result["triggers"] is None and len(lines) == 6
    assert metric(result, "task_completion")["value"] == pytest.approx(1 / 6, abs=1e-6)
    assert metric(result, "grader_validation")["value"] == pytest.approx(19 / 27, abs=1e-6)
    assert metric(result, "efficiency")["value"] == pytest.approx(0.3, abs=1e-6)
    assert result["summary"]["missed"][:5] == [
        f"task {t} failed" for t in sorted(s for s, v in statuses.items() if v == "failed")
    ]


def test_junit_and_markdown_reports_render_the_same_run(showcase: Any) -> None:
    _, result, _, _, tmp = showcase
    root = ET.parse(tmp / "junit.xml").getroot()
    tasks = root.find("testsuite")
    assert tasks is not None and tasks.get("tests") == "6" and tasks.get("failures") == "5"
    failed = {c.get("name") for c in tasks.findall("testcase") if c.find("failure") is not None}
    assert failed == {t["id"] for t in result["tasks"] if t["status"] == "failed"}
    file_case = next(c for c in tasks.findall("testcase") if c.get("name") == "file-demo-001")
    assert "must_exist 'README.md'" in (file_case.find("failure").text or "")  # type: ignore[union-attr]
    metrics = root.findall("testsuite")[1]
    assert metrics.get("name") == "grader-showcase.metrics" and metrics.get("failures") == "3"
    markdown = (tmp / "report.md").read_text()
    assert markdown.startswith("# grader-showcase: failed\n")
    assert "| code-demo-001 | passed | 1.000 | n/a | 1.00 | 1.000 | 1 |" in markdown
    assert "| task_completion | 0.167 | 0.8 | FAIL |" in markdown


def test_our_suite_in_the_original_format_runs_and_reports(tmp_path: Path) -> None:
    """snippet-explainer: the original tool's eval.yaml, task and trigger formats, written by us."""
    code, result, lines, stderr = run_suite(
        tmp_path,
        SUITES.parent.parent.parent / "examples" / "snippet-explainer",
        "--reporter",
        f"junit:{tmp_path / 'junit.xml'}",
        "--reporter",
        f"markdown:{tmp_path / 'report.md'}",
    )
    assert code == 1 and result["adapter"] == "mock" and result["model"] == "mock-model-1" and result["trialsPerTask"] == 2
    assert {t["id"]: t["status"] for t in result["tasks"]} == {"shell-pipeline-001": "passed", "python-generator-001": "failed"}
    trial = by_id(result)["python-generator-001"]["trials"][0]
    assert {g["name"]: g["status"] for g in trial["grades"]} == {
        "says_something": "passed",
        "no_stack_trace": "passed",
        "mentions_yield": "failed",
        "expected_output_contains": "failed",
        "expected_output_contains_any": "failed",
        "expected_behavior": "passed",
    }
    assert trial["metadata"]["context"] == {"language": "python", "level": "intermediate"}
    assert [c["triggered"] for c in result["triggers"]["cases"]] == [True, False, False, False]
    assert len(lines) == 4 + 4  # every trial and every trigger prompt
    assert metric(result, "task_completion")["value"] == 0.5 and "task python-generator-001 failed" in stderr
    root = ET.parse(tmp_path / "junit.xml").getroot()
    tasks = root.find("testsuite")
    assert tasks is not None and tasks.get("tests") == "2" and tasks.get("failures") == "1"
    markdown = (tmp_path / "report.md").read_text()
    assert markdown.startswith("# snippet-explainer-eval: failed\n")
    assert (
        "| task_completion | 0.500 | 0.5 | pass |" in markdown
        and "| shell-pipeline-001 | passed | 1.000 | 0.34-1.00 | 1.00 1.00 | 1.000 | 2 |" in markdown
    )


def test_every_grader_type_judges_mock_trials(every: Any) -> None:
    code, result, _, _stderr = every
    assert code == 1
    tasks = by_id(result)
    assert {i: t["status"] for i, t in tasks.items()} == {
        "text-and-patterns": "passed",
        "json-answer": "passed",
        "files": "passed",
        "tool-use": "passed",
        "skills": "passed",
        "external": "passed",
        "judged": "passed",
        "broken-limits": "failed",
        "agent-crash": "error",
        "human-review": "pending",
    }
    kinds = {g["name"] for t in tasks.values() for trial in t["trials"] for g in trial["grades"]}
    assert {
        "languages",
        "no_errors",
        "answer_shape",
        "readme_exists",
        "readme_matches_snapshot",
        "changes",
        "listed_files",
        "constraints",
        "efficient",
        "workflow",
        "orchestration",
        "script_check",
        "grep_42",
        "judge",
        "multi_criteria",
        "matches_reference",
        "reviewer",
        "calibration",
        "expected_behavior",
        "expected_output_contains",
        "expected_output_contains_any",
    } <= kinds
    assert result["summary"]["disabled"] == ["disabled-task"]
    assert result["summary"]["pending"] == 1  # pending is neither pass nor fail: not in missed
    assert not any("human-review" in m for m in result["summary"]["missed"])
    crash = tasks["agent-crash"]["trials"][0]
    assert crash["errors"] == ["mock agent crashed on purpose"] and crash["status"] == "error"
    git = next(g for g in tasks["files"]["trials"][0]["grades"] if g["name"] == "changes")
    assert git["outcome"]["filesCreated"] == ["README.md"] and git["outcome"]["filesDeleted"] == ["config.json"]
    usage = tasks["tool-use"]["trials"][0]["usage"]
    assert usage == {"inputTokens": 120, "outputTokens": 30}
    # The weighted score of a trial is the aggregate of its grades (weight 0.5 on one grader).
    trial = tasks["text-and-patterns"]["trials"][0]
    assert trial["score"]["score"] == 1.0 and {g["name"]: g["weight"] for g in trial["grades"]}["context_reaches_graders"] == 0.5


def test_every_grader_metrics_and_trigger_errors(every: Any) -> None:
    _, result, _, stderr = every
    assert metric(result, "grader_validation")["value"] == pytest.approx(31 / 33, abs=1e-6)  # the two pending grades are left out
    # task weights: broken-limits 0.5 fails, agent-crash 1.0 errors, seven others pass: 7 / 8.5
    assert metric(result, "task_completion")["value"] == pytest.approx(7 / 8.5, abs=1e-6)
    trig = result["triggers"]
    assert trig["errors"] == 1
    wrong = {c["prompt"]: c for c in trig["cases"] if not c["correct"]}
    assert set(wrong) == {"Roll out the new build", "Push the release", "Help me write a poem"}
    assert wrong["Push the release"]["error"] == "agent crashed" and wrong["Push the release"]["triggered"] is None
    # TP: high 1 + medium .5; FN: medium .5 + errored high 1; TN 1; FP 1 -> accuracy 2.5 / 5
    assert trig["accuracy"] == pytest.approx(0.5)
    assert "1 trigger prompts errored" in result["summary"]["missed"]
    assert "metric trigger_accuracy 0.500 < threshold 0.7" in stderr


def test_filters_parallel_workers_and_passing_exit(tmp_path: Path) -> None:
    code, result, lines, stderr = run_suite(
        tmp_path, "every-grader", "--tags", "good", "--task", "*-*", "--parallel", "--workers", "3", "--no-triggers"
    )
    assert code == 0, stderr
    assert sorted(t["id"] for t in result["tasks"]) == ["json-answer", "text-and-patterns", "tool-use"]
    assert result["summary"]["status"] == "passed" and result["summary"]["missed"] == []
    assert sorted(result["summary"]["filtered"]) == [
        "agent-crash",
        "broken-limits",
        "external",
        "files",
        "human-review",
        "judged",
        "skills",
    ]
    assert metric(result, "trigger_accuracy")["value"] is None and metric(result, "trigger_accuracy")["pass"] is None
    assert len(lines) == 3


def test_fail_fast_stops_at_the_first_failure(tmp_path: Path) -> None:
    code, result, _lines, _stderr = run_suite(tmp_path, "every-grader", "--fail-fast", "--trials", "2")
    assert code == 1
    assert [t["id"] for t in result["tasks"]] == ["broken-limits"]  # first task file in order, fails
    assert "skills" in result["summary"]["notRun"] and result["triggers"] is None
    assert any("fail_fast stopped the run" in m for m in result["summary"]["missed"])


def test_trials_keep_workspaces_and_any_adapter(tmp_path: Path) -> None:
    """The exec adapter runs a real agent program in each trial's own workspace, filled with the fixtures."""
    agent = executable(
        tmp_path / "agent.py",
        f"#!{sys.executable}\nimport os, sys\nprompt = sys.stdin.read()\n"
        "files = sorted(os.listdir('.'))\nopen('answer.txt', 'w').write(prompt)\n"
        "print('Python and JavaScript; 6 x 7 = 42; files: ' + ', '.join(files))\n",
    )
    code, result, _lines, stderr = run_suite(
        tmp_path,
        "every-grader",
        "--task",
        "external",
        "--trials",
        "2",
        "--keep-workspaces",
        "--adapter",
        "exec",
        "--no-triggers",
        "--",
        str(agent),
    )
    assert code == 0, stderr
    trials = result["tasks"][0]["trials"]
    assert [t["trial"] for t in trials] == [1, 2] and {t["adapter"] for t in trials} == {"exec"}
    workspaces = {t["cwd"] for t in trials}
    assert len(workspaces) == 2
    for ws in workspaces:
        assert sorted(p.name for p in Path(ws).iterdir()) == ["answer.txt", "sample.py"]
    assert "files: sample.py" in trials[0]["output"]


def test_report_on_stdout_and_a_task_timeout_is_an_error(tmp_path: Path) -> None:
    """An agent past its task's timeout_seconds makes that trial an error; the document can go to stdout."""
    (tmp_path / "tasks").mkdir()
    (tmp_path / "eval.yaml").write_text(
        "name: slow\nconfig:\n  command: ['./agent.py']\ngraders:\n  - type: text\n    config: {contains: [done]}\ntasks: ['tasks/*.yaml']\n"
    )
    (tmp_path / "tasks" / "slow.yaml").write_text("id: slow\ntimeout_seconds: 1\ninputs:\n  prompt: 'take your time'\n")
    (tmp_path / "tasks" / "quick.yaml").write_text("id: quick\ninputs:\n  prompt: 'be quick'\n")
    executable(
        tmp_path / "agent.py",
        f"#!{sys.executable}\nimport sys, time\nprompt = sys.stdin.read()\nif 'time' in prompt:\n    time.sleep(30)\nprint('done')\n",
    )
    jsonl = tmp_path / "trials.jsonl"
    done = run_waza(
        "run", tmp_path, "--adapter", "exec", "-o", jsonl, "--reporter", "json:-", "--reporter", f"markdown:{tmp_path / 'r.md'}"
    )
    assert done.returncode == 1
    result = orjson.loads(done.stdout)
    assert errors("SuiteResult", result) == []
    statuses = {t["id"]: t["status"] for t in result["tasks"]}
    assert statuses == {"quick": "passed", "slow": "error"}
    slow = by_id(result)["slow"]["trials"][0]
    assert slow["exit"]["timedOut"] is True and "timed out" in slow["errors"][0]
    assert [line["id"] for line in read_jsonl(jsonl)] == ["quick", "slow"]  # task files in sorted order, one worker
    assert "task slow error" in (tmp_path / "r.md").read_text()
