"""``waza gate`` and the original waza's results.json: the gate decides as the original does on the
original's files (written here by hand from its documented model) and on waza's own results, with the
original's exit codes; waza writes results.json (``--reporter results:FILE``) and reads it back.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import orjson
import pytest

from tests.conftest import run_waza
from waza.protocol.errors import ConfigError
from waza.runner.analysis import outcome_inputs
from waza.runner.analysis.gate import GateOptions, decide
from waza.runner.analysis.outcome_format import TaskRuns, build
from waza.runner.analysis.outcome_inputs import load


def task(test_id: str, status: str = "passed", *, golden: bool = False, pass_rate: float | None = None) -> dict[str, Any]:
    """A ``tasks[]`` entry as the original writes it (with a run, whose extra keys a reader must ignore)."""
    rate = (1.0 if status == "passed" else 0.0) if pass_rate is None else pass_rate
    entry: dict[str, Any] = {
        "test_id": test_id,
        "display_name": test_id.title(),
        "status": status,
        "runs": [{"run_number": 1, "attempts": 1, "status": status, "duration_ms": 12, "validations": {}, "final_output": "x"}],
        "stats": {"pass_rate": rate, "avg_score": rate, "flaky": False, "ci95_lo": 0, "ci95_hi": 1},
    }
    if golden:
        entry["golden"] = True
    return entry


def results(tasks: list[dict[str, Any]], *, model: str = "gpt-4o", success_rate: float | None = None) -> dict[str, Any]:
    """A whole results.json of the original: ``summary.success_rate`` is what the gate compares."""
    passed = sum(t["status"] == "passed" for t in tasks)
    rate = passed / len(tasks) if success_rate is None and tasks else (success_rate or 0.0)
    return {
        "eval_id": "run-1",
        "skill": "demo-skill",
        "eval_name": "demo",
        "timestamp": "2026-05-01T10:00:00Z",
        "config": {"runs_per_test": 1, "model_id": model, "engine_type": "copilot-sdk", "timeout_sec": 300},
        "summary": {"total_tests": len(tasks), "succeeded": passed, "success_rate": rate, "aggregate_score": rate},
        "metrics": {
            "task_completion": {"identifier": "task_completion", "value": rate, "threshold": 0, "passed": True, "weight": 1}
        },
        "tasks": tasks,
    }


def write(path: Path, doc: dict[str, Any], *, compact: bool = False) -> Path:
    path.write_bytes(orjson.dumps(doc) if compact else orjson.dumps(doc, option=orjson.OPT_INDENT_2))
    return path


def gate(tmp_path: Path, baseline: dict[str, Any], current: dict[str, Any], *args: str, env: dict[str, str] | None = None) -> Any:
    base, cur = write(tmp_path / "baseline.json", baseline), write(tmp_path / "current.json", current)
    return run_waza("gate", "--baseline", base, "--current", cur, *args, cwd=tmp_path, env=env)


FOUR = [task("a"), task("b"), task("c"), task("d")]


# --- the decision, in-process on the original's documents -------------------------------------------


def decide_docs(tmp_path: Path, baseline: dict[str, Any], current: dict[str, Any], **options: Any) -> Any:
    b = load(str(write(tmp_path / "b.json", baseline)))
    c = load(str(write(tmp_path / "c.json", current)))
    return decide(b, c, GateOptions(**options))


def test_the_regression_is_the_drop_of_the_suite_pass_rate_in_points(tmp_path: Path) -> None:
    current = [task("a"), task("b"), task("c"), task("d", "failed")]
    report = decide_docs(tmp_path, results(FOUR), results(current), max_regression_pct=20)
    assert report.regression_pct == 25.0 and report.exit_code == 1 and report.verdict == "fail"
    assert report.failures[0].kind == "regression"
    assert "regressed by 25.00 percentage points, exceeding 20.00" in report.failures[0].message


def test_a_drop_equal_to_the_threshold_passes_and_an_improvement_is_no_regression(tmp_path: Path) -> None:
    current = [task("a"), task("b"), task("c"), task("d", "failed")]
    assert decide_docs(tmp_path, results(FOUR), results(current), max_regression_pct=25).passed
    better = decide_docs(tmp_path, results(current), results(FOUR))
    assert better.passed and better.regression_pct == 0.0


def test_the_gate_is_one_number_over_the_suite_not_per_task(tmp_path: Path) -> None:
    """a fails where it passed, b passes where it failed: the rate holds, so the gate passes (as the original)."""
    before = [task("a"), task("b", "failed")]
    after = [task("a", "failed"), task("b")]
    assert decide_docs(tmp_path, results(before), results(after)).passed


def test_a_golden_failure_wins_over_a_regression(tmp_path: Path) -> None:
    current = [task("a", "failed", golden=True), task("b"), task("c"), task("d")]
    report = decide_docs(tmp_path, results(FOUR), results(current), golden_must_pass=True)
    assert report.exit_code == 2 and report.verdict == "golden-failure"
    assert [t.task_id for t in report.golden_failures] == ["a"]
    assert [i.kind for i in report.failures] == ["regression", "golden_failure"]


def test_golden_tasks_count_only_in_the_current_run_and_only_with_golden_must_pass(tmp_path: Path) -> None:
    failing_golden = [task("a", "error", golden=True), task("b")]
    without = decide_docs(tmp_path, results(failing_golden), results(failing_golden))
    assert without.passed and without.golden_failures == []
    only_in_baseline = decide_docs(
        tmp_path, results(failing_golden), results([task("a", "error"), task("b")]), golden_must_pass=True
    )
    assert only_in_baseline.passed


@pytest.mark.parametrize(
    ("policy", "passed", "warnings", "failures"), [("allow", True, 0, 0), ("warn", True, 1, 0), ("fail", False, 0, 1)]
)
def test_new_task_policies(tmp_path: Path, policy: str, passed: bool, warnings: int, failures: int) -> None:
    report = decide_docs(tmp_path, results(FOUR), results([*FOUR, task("e")]), on_new_tasks=policy)
    assert report.passed is passed and [t.task_id for t in report.new_tasks] == ["e"]
    assert (len(report.warnings), len(report.failures)) == (warnings, failures)
    if not passed:
        assert report.exit_code == 1 and report.failures[0].kind == "new_task"
        assert report.failures[0].message == 'task "E" (e) is present only in current results and policy is fail'


@pytest.mark.parametrize(
    ("policy", "passed", "warnings", "failures"), [("allow", True, 0, 0), ("warn", True, 1, 0), ("fail", False, 0, 1)]
)
def test_removed_task_policies(tmp_path: Path, policy: str, passed: bool, warnings: int, failures: int) -> None:
    report = decide_docs(tmp_path, results(FOUR), results(FOUR[:3]), on_removed_tasks=policy)
    assert report.passed is passed and [t.task_id for t in report.removed_tasks] == ["d"]
    assert (len(report.warnings), len(report.failures)) == (warnings, failures)


def test_the_default_policies_allow_new_tasks_and_warn_on_removed_ones(tmp_path: Path) -> None:
    report = decide_docs(tmp_path, results(FOUR[:3]), results([*FOUR[1:], task("e")]))
    assert report.passed and report.new_task_policy == "allow" and report.removed_task_policy == "warn"
    assert [i.kind for i in report.warnings] == ["removed_task"]


# --- the command: exit codes, formats, configuration errors ----------------------------------------


def test_exit_0_on_a_pass(tmp_path: Path) -> None:
    done = gate(tmp_path, results(FOUR), results(FOUR))
    assert done.returncode == 0, done.stderr
    assert done.stdout.decode().startswith("Waza gate: PASS\n\nBaseline: 100.0% pass rate (4 tasks, model: gpt-4o)")


def test_exit_1_on_a_regression_beyond_max_regression_pct(tmp_path: Path) -> None:
    current = [task("a"), task("b", "failed"), task("c"), task("d")]
    done = gate(tmp_path, results(FOUR), results(current), "--max-regression-pct", "5")
    assert done.returncode == 1
    out = done.stdout.decode()
    assert "Waza gate: FAIL" in out and "Regression: 25.00 percentage points (max allowed 5.00)" in out
    assert b"gate failed: 1 failure(s)" in done.stderr
    assert gate(tmp_path, results(FOUR), results(current), "--max-regression-pct", "25.0").returncode == 0


def test_exit_2_on_a_golden_failure(tmp_path: Path) -> None:
    current = [task("a", "failed", golden=True), *FOUR[1:]]
    done = gate(tmp_path, results(FOUR), results(current), "--golden-must-pass", "--max-regression-pct", "50")
    assert done.returncode == 2
    assert "Waza gate: GOLDEN-FAILURE" in done.stdout.decode()
    assert 'golden task "A" (a) did not pass; status=failed' in done.stdout.decode()


def test_exit_1_when_a_task_set_policy_fails(tmp_path: Path) -> None:
    assert gate(tmp_path, results(FOUR), results([*FOUR, task("e")]), "--on-new-tasks", "fail").returncode == 1
    assert gate(tmp_path, results(FOUR), results(FOUR[:3]), "--on-removed-tasks", "FAIL").returncode == 1


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--on-new-tasks", "block"], "--on-new-tasks: unsupported policy 'block'"),
        (["--on-removed-tasks", "ignore"], "--on-removed-tasks: unsupported policy 'ignore'"),
        (["--max-regression-pct", "-1"], "--max-regression-pct must be >= 0"),
        (["--max-regression-pct", "five"], "'five' is not a number"),
        (["--max-regression-pct", "nan"], "--max-regression-pct must be >= 0"),
        (["--format", "xml"], "unsupported format 'xml'"),
    ],
)
def test_exit_3_on_a_bad_option_value(tmp_path: Path, args: list[str], message: str) -> None:
    done = gate(tmp_path, results(FOUR), results(FOUR), *args)
    assert done.returncode == 3
    assert message in done.stderr.decode() and b"Traceback" not in done.stderr
    assert done.stdout == b""


def test_exit_3_without_baseline_or_current(tmp_path: Path) -> None:
    path = write(tmp_path / "r.json", results(FOUR))
    done = run_waza("gate", "--current", path)
    assert done.returncode == 3 and b"--baseline is required" in done.stderr
    assert run_waza("gate", "--baseline", path).returncode == 3


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (None, "cannot be read"),
        (b"", "empty; no results to gate on"),
        (b'{"summary": {"success_rate": "high"}, "tasks": []}', "not a results.json of the original waza"),
        (b'{"summary": {"success_rate": 1},\n "tasks": [', "neither a results document nor JSON lines"),
        (b'{"summary": {"status": "passed"}, "tasks": 3}', "not a waza suite result"),
        (b'{"no": "results"}\n', "current.json"),
    ],
)
def test_exit_3_on_an_unreadable_or_malformed_results_file(tmp_path: Path, content: bytes | None, message: str) -> None:
    base = write(tmp_path / "baseline.json", results(FOUR))
    cur = tmp_path / "current.json"
    if content is not None:
        cur.write_bytes(content)
    done = run_waza("gate", "--baseline", base, "--current", cur)
    assert done.returncode == 3, done.stderr
    assert message in done.stderr.decode() and b"Traceback" not in done.stderr


def test_json_format_has_the_original_report_fields(tmp_path: Path) -> None:
    current = [task("a", "failed", golden=True), *FOUR[1:], task("e")]
    done = gate(tmp_path, results(FOUR, model="m1"), results(current, model="m2"), "-f", "json", "--golden-must-pass")
    assert done.returncode == 2
    report = orjson.loads(done.stdout)
    assert report["passed"] is False and report["exit_code"] == 2 and report["verdict"] == "golden-failure"
    assert report["baseline_success_rate"] == 1.0 and report["current_success_rate"] == 0.8
    assert math.isclose(report["regression_pct"], 20.0)
    assert (report["baseline_model"], report["current_model"]) == ("m1", "m2")
    assert (report["baseline_task_count"], report["current_task_count"]) == (4, 5)
    assert report["golden_failures"] == [
        {"task_id": "a", "display_name": "A", "golden": True, "status": "failed", "pass_rate": 0.0}
    ]
    assert [t["task_id"] for t in report["new_tasks"]] == ["e"]
    assert "warnings" not in report and "removed_tasks" not in report  # empty lists are left out, as in the original


def test_markdown_format(tmp_path: Path) -> None:
    done = gate(tmp_path, results(FOUR), results(FOUR[:3]), "--format", "markdown")
    out = done.stdout.decode()
    assert done.returncode == 0
    assert out.startswith("## Waza gate: PASS\n\n| Metric | Baseline | Current |")
    assert "- Removed tasks: 1 (`warn`)" in out and "### Warnings" in out


def test_github_actions_format_annotates_and_appends_the_step_summary(tmp_path: Path) -> None:
    summary = tmp_path / "summary.md"
    summary.write_text("earlier step\n")
    current = [task("a"), task("b", "failed"), task("c"), task("d")]
    done = gate(tmp_path, results(FOUR), results(current), "-f", "github-actions", env={"GITHUB_STEP_SUMMARY": str(summary)})
    assert done.returncode == 1
    assert done.stdout.decode() == (
        "::error title=Waza gate::aggregate pass rate regressed by 25.00 percentage points%2C exceeding 0.00\n"
    )
    text = summary.read_text()
    assert text.startswith("earlier step\n## Waza gate: FAIL") and "| Pass rate | 100.0% | 75.0% |" in text


def test_github_actions_format_without_a_step_summary_prints_it(tmp_path: Path) -> None:
    done = gate(tmp_path, results(FOUR), results(FOUR[:3]), "-f", "github-actions", env={"GITHUB_STEP_SUMMARY": ""})
    out = done.stdout.decode()
    assert done.returncode == 0
    assert out.startswith('::warning title=Waza gate::task "D" (d) is present only in baseline results and policy is warn\n')
    assert "## Waza gate: PASS" in out


def test_a_compact_one_line_results_document_is_read_as_a_document(tmp_path: Path) -> None:
    base = write(tmp_path / "b.json", results(FOUR), compact=True)
    cur = write(tmp_path / "c.json", results([task("a", "failed"), *FOUR[1:]]), compact=True)
    assert run_waza("gate", "--baseline", base, "--current", cur).returncode == 1


def test_a_document_over_the_bound_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = write(tmp_path / "big.json", results(FOUR * 50))
    monkeypatch.setattr(outcome_inputs, "MAX_DOCUMENT", 1024)
    with pytest.raises(ConfigError, match="larger than"):
        load(str(path))


# --- the statistics of results.json ----------------------------------------------------------------


def test_wilson_interval_and_pass_hat_k_curve_are_the_originals() -> None:
    """Three tasks of five trials passing 5, 4 and 2 times: the figures of the original's documentation."""
    runs = [
        TaskRuns(id="a", name="a", statuses=["passed"] * 5),
        TaskRuns(id="b", name="b", statuses=["passed"] * 4 + ["failed"]),
        TaskRuns(id="c", name="c", statuses=["passed", "failed", "passed", "failed", "error"]),
    ]
    outcome = build(runs, name="s", runs_per_test=5)
    b = outcome.tasks[1]
    assert b.status == "failed" and b.stats is not None and b.stats.flaky
    assert b.stats.pass_rate_ci is not None
    assert (round(b.stats.pass_rate_ci.lower, 4), round(b.stats.pass_rate_ci.upper, 4)) == (0.3755, 0.9638)
    assert outcome.tasks[2].status == "error"
    summary = outcome.summary
    assert (summary.succeeded, summary.failed, summary.errors) == (1, 1, 1)
    assert summary.statistics is not None and summary.statistics.success_rate_ci is not None
    assert [round(v, 4) for v in summary.statistics.pass_hat_k] == [0.7333, 0.5667, 0.4667, 0.4, 0.3333]
    ci = summary.statistics.success_rate_ci
    assert (round(ci.lower, 4), round(ci.upper, 4)) == (0.0615, 0.7923)


def test_single_trial_runs_carry_no_intervals() -> None:
    outcome = build(
        [TaskRuns(id="a", name="a", statuses=["passed"]), TaskRuns(id="b", name="b", statuses=["failed"])],
        name="s",
        runs_per_test=1,
    )
    assert outcome.summary.statistics is None
    assert all(t.stats is not None and t.stats.pass_rate_ci is None for t in outcome.tasks)


# --- waza's own results, and the round trip ---------------------------------------------------------

EVAL = """\
name: gated
config:
  trials_per_task: 3
  executor: mock
tasks:
  - "tasks/*.yaml"
"""

TASK = """\
id: {id}
golden: {golden}
inputs:
  prompt: "Say the word"
mock:
  - message: "{said}"
graders:
  - type: text
    name: says_ok
    config:
      contains: ["ok"]
"""


def suite(root: Path, said: dict[str, str], golden: str = "a") -> Path:
    (root / "tasks").mkdir(parents=True)
    (root / "eval.yaml").write_text(EVAL)
    for task_id, text in said.items():
        (root / "tasks" / f"{task_id}.yaml").write_text(TASK.format(id=task_id, golden=str(task_id == golden).lower(), said=text))
    return root / "eval.yaml"


def run_suite(tmp_path: Path, name: str, said: dict[str, str]) -> Path:
    root = tmp_path / name
    eval_yaml = suite(root, said)
    out = root / "results.json"
    done = run_waza(
        "run", eval_yaml, "-o", root / "trials.jsonl", "--reporter", f"results:{out}",
        "--reporter", f"json:{root / 'suite.json'}", "--reporter", f"markdown:{root / 'report.md'}", "--no-progress", cwd=root,
    )  # fmt: skip
    assert done.returncode in (0, 1), done.stderr.decode()
    return root


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    tmp = tmp_path_factory.mktemp("gate-runs")
    good = run_suite(tmp, "good", {"a": "ok", "b": "ok", "c": "ok"})
    bad = run_suite(tmp, "bad", {"a": "no", "b": "ok", "d": "ok"})
    return good, bad


def test_waza_writes_results_json_in_the_original_format(runs: tuple[Path, Path]) -> None:
    bad = runs[1]
    doc = orjson.loads((bad / "results.json").read_bytes())
    assert doc["eval_name"] == "gated" and doc["config"]["runs_per_test"] == 3 and doc["config"]["engine_type"] == "mock"
    by_id = {t["test_id"]: t for t in doc["tasks"]}
    assert by_id["a"]["golden"] is True and by_id["a"]["status"] == "failed" and "golden" not in by_id["b"]
    assert by_id["a"]["stats"]["total_runs"] == 3 and by_id["a"]["stats"]["pass_rate_ci"]["upper"] < 0.6
    assert doc["summary"]["success_rate"] == pytest.approx(2 / 3)
    assert [round(v, 4) for v in doc["summary"]["statistics"]["pass_hat_k"]] == [0.6667, 0.6667, 0.6667]


def test_the_markdown_report_shows_each_tasks_interval_and_pass_hat_k(runs: tuple[Path, Path]) -> None:
    report = (runs[1] / "report.md").read_text()
    assert "| task | status | pass rate | 95% CI | pass^k (k = 1, 2, ...) | score | trials |" in report
    assert "| a | failed | 0.000 | 0.00-0.56 | 0.00 0.00 0.00 |" in report
    assert "Reliability over tasks: pass^1=67%  pass^2=67%  pass^3=67%." in report


@pytest.mark.parametrize("kind", ["results.json", "suite.json", "trials.jsonl"])
def test_the_gate_reads_every_kind_of_waza_results(runs: tuple[Path, Path], kind: str) -> None:
    good, bad = runs
    done = run_waza(
        "gate", "--baseline", good / kind, "--current", bad / kind, "--golden-must-pass", "-f", "json", "--on-new-tasks", "warn"
    )
    report = orjson.loads(done.stdout)
    assert done.returncode == 2, done.stderr
    assert [t["task_id"] for t in report["golden_failures"]] == ["a"]
    assert [t["task_id"] for t in report["new_tasks"]] == ["d"] and [t["task_id"] for t in report["removed_tasks"]] == ["c"]
    assert math.isclose(report["regression_pct"], 100 / 3)


def test_round_trip_results_json_gates_against_itself_and_mixes_with_the_originals(
    runs: tuple[Path, Path], tmp_path: Path
) -> None:
    good, _ = runs
    assert run_waza("gate", "--baseline", good / "results.json", "--current", good / "results.json").returncode == 0
    original = write(tmp_path / "original.json", results([task("a"), task("b"), task("c")]))
    assert run_waza("gate", "--baseline", original, "--current", good / "suite.json").returncode == 0


def test_golden_must_be_a_boolean_in_a_task_file(tmp_path: Path) -> None:
    eval_yaml = suite(tmp_path / "s", {"a": "ok"})
    (tmp_path / "s" / "tasks" / "a.yaml").write_text(TASK.format(id="a", golden='"yes"', said="ok"))
    done = run_waza("check", eval_yaml)
    assert done.returncode == 2 and b"golden" in done.stderr


def test_golden_is_a_key_waza_honours_not_one_it_reports_as_ignored(tmp_path: Path) -> None:
    done = run_waza("check", suite(tmp_path / "s", {"a": "ok"}))
    assert done.returncode == 0, done.stderr
    assert b"not supported" not in done.stderr and done.stderr.decode().endswith("ok: 1 task, 1 grader, 0 metrics\n")


def test_jsonl_trials_are_grouped_by_id_and_trigger_prompts_are_not_tasks(tmp_path: Path) -> None:
    def line(case: str, status: str, **metadata: Any) -> bytes:
        return orjson.dumps({"id": case, "input": "p", "output": "o", "status": status, "metadata": metadata}) + b"\n"

    path = tmp_path / "run.jsonl"
    path.write_bytes(
        line("a", "passed", golden=True) + line("a", "failed", golden=True) + line("b", "passed")
        + line("trigger-001", "ungraded", trigger={"shouldTrigger": True, "confidence": "high"})
    )  # fmt: skip
    outcome = load(str(path))
    assert [(t.test_id, t.status, t.golden) for t in outcome.tasks] == [("a", "failed", True), ("b", "passed", False)]
    assert outcome.summary.success_rate == 0.5 and outcome.config.runs_per_test == 2
    only_triggers = tmp_path / "triggers.jsonl"
    only_triggers.write_bytes(line("trigger-001", "ungraded", trigger={"shouldTrigger": False, "confidence": "high"}))
    with pytest.raises(ConfigError, match="no task results"):
        load(str(only_triggers))


def test_trials_awaiting_review_count_as_skipped_runs_and_unscored_trials_score_zero() -> None:
    """As the original counts skipped runs: in total_runs and the pass rate, neither passed nor failed."""
    runs = [
        TaskRuns(id="a", name="a", statuses=["passed", "pending"], scores=[1.0]),
        TaskRuns(id="b", name="b", statuses=["pending"]),
    ]
    a, b = build(runs, name="s", runs_per_test=2).tasks
    assert a.status == "passed" and a.stats is not None
    assert (a.stats.passed_runs, a.stats.total_runs, a.stats.pass_rate, a.stats.avg_score) == (1, 2, 0.5, 0.5)
    assert b.status == "skipped"
    summary = build(runs, name="s", runs_per_test=2).summary
    assert (summary.succeeded, summary.skipped, summary.success_rate, summary.aggregate_score) == (1, 1, 0.5, 0.25)
