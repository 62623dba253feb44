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
    assert report.regression_pct == 25.0 and report.exit_code == 1 and report.outcome == "regression"
    assert report.regression_exceeds_threshold and math.isclose(report.pass_rate_delta, -0.25)


def test_a_drop_equal_to_the_threshold_passes_and_an_improvement_is_no_regression(tmp_path: Path) -> None:
    current = [task("a"), task("b"), task("c"), task("d", "failed")]
    assert decide_docs(tmp_path, results(FOUR), results(current), max_regression_pct=25).exit_code == 0
    better = decide_docs(tmp_path, results(current), results(FOUR))
    assert better.exit_code == 0 and better.regression_pct == 0.0 and better.pass_rate_delta == 0.25


def test_the_gate_is_one_number_over_the_suite_not_per_task(tmp_path: Path) -> None:
    """a fails where it passed, b passes where it failed: the rate holds, so the gate passes (as the original)."""
    before = [task("a"), task("b", "failed")]
    after = [task("a", "failed"), task("b")]
    assert decide_docs(tmp_path, results(before), results(after)).outcome == "pass"


def test_a_golden_failure_wins_over_a_regression(tmp_path: Path) -> None:
    current = [task("a", "failed", golden=True), task("b"), task("c"), task("d")]
    report = decide_docs(tmp_path, results(FOUR), results(current))
    assert report.exit_code == 2 and report.outcome == "golden_failure" and report.regression_exceeds_threshold
    assert [(g.test_id, g.baseline_status, g.current_status) for g in report.golden_failures] == [("a", "passed", "failed")]


def test_golden_must_pass_is_the_default_and_can_be_turned_off(tmp_path: Path) -> None:
    failing_golden = [task("a", "error", golden=True), task("b")]
    on = decide_docs(tmp_path, results(failing_golden), results(failing_golden))
    assert on.golden_must_pass and on.exit_code == 2 and on.golden_total == 1
    off = decide_docs(tmp_path, results(failing_golden), results(failing_golden), golden_must_pass=False)
    assert off.exit_code == 0 and [g.test_id for g in off.golden_failures] == ["a"]  # still listed


def test_a_task_golden_in_either_file_must_pass_and_must_not_go_missing(tmp_path: Path) -> None:
    """The baseline marks a golden, the current file predates the field: a still counts; b, golden in the
    baseline, is gone from the current run: a golden failure with status n/a."""
    baseline = [task("a", golden=True), task("b", golden=True), task("c")]
    current = [task("a", "failed"), task("c")]
    report = decide_docs(tmp_path, results(baseline), results(current), on_removed_tasks="allow")
    assert report.exit_code == 2 and report.golden_total == 2
    assert [(g.test_id, g.current_status) for g in report.golden_failures] == [("a", "failed"), ("b", "n/a")]


@pytest.mark.parametrize(("policy", "code", "warnings", "errors"), [("allow", 0, 0, 0), ("warn", 0, 1, 0), ("fail", 1, 0, 1)])
def test_new_task_policies(tmp_path: Path, policy: str, code: int, warnings: int, errors: int) -> None:
    report = decide_docs(tmp_path, results(FOUR), results([*FOUR, task("e")]), on_new_tasks=policy)
    assert report.exit_code == code and report.new_tasks == ["e"]
    assert (len(report.warnings), len(report.errors)) == (warnings, errors)
    if errors:
        assert report.outcome == "regression" and report.errors == ["current adds 1 task(s) not in baseline: e"]


@pytest.mark.parametrize(("policy", "code", "warnings", "errors"), [("allow", 0, 0, 0), ("warn", 0, 1, 0), ("fail", 1, 0, 1)])
def test_removed_task_policies(tmp_path: Path, policy: str, code: int, warnings: int, errors: int) -> None:
    report = decide_docs(tmp_path, results(FOUR), results(FOUR[:3]), on_removed_tasks=policy)
    assert report.exit_code == code and report.removed_tasks == ["d"]
    assert (len(report.warnings), len(report.errors)) == (warnings, errors)


def test_the_default_policies_allow_new_tasks_and_warn_on_removed_ones(tmp_path: Path) -> None:
    report = decide_docs(tmp_path, results(FOUR[:3]), results([*FOUR[1:], task("e")]))
    assert report.exit_code == 0 and report.on_new_tasks == "allow" and report.on_removed_tasks == "warn"
    assert report.warnings == ["current is missing 1 task(s) present in baseline: a"]


# --- the command: exit codes, formats, configuration errors ----------------------------------------


def test_exit_0_on_a_pass(tmp_path: Path) -> None:
    done = gate(tmp_path, results(FOUR), results(FOUR))
    assert done.returncode == 0, done.stderr
    out = done.stdout.decode()
    assert out.startswith("Waza gate: PASS\n") and out.endswith("outcome: PASS (exit 0)\n")
    assert "pass rate: 100.0% -> 100.0%" in out


def test_exit_1_on_a_regression_beyond_max_regression_pct(tmp_path: Path) -> None:
    current = [task("a"), task("b", "failed"), task("c"), task("d")]
    done = gate(tmp_path, results(FOUR), results(current), "--max-regression-pct", "5")
    assert done.returncode == 1
    out = done.stdout.decode()
    assert "regression of 25.00 points exceeds 5.00" in out and "outcome: REGRESSION (exit 1)" in out
    assert b"waza gate: regression (exit 1)" in done.stderr
    assert gate(tmp_path, results(FOUR), results(current), "--max-regression-pct", "25.0").returncode == 0


@pytest.mark.parametrize(
    ("args", "code"),
    [
        ([], 2),
        (["--golden-must-pass"], 2),
        (["--golden-must-pass=true"], 2),
        (["--golden-must-pass=false"], 1),
        (["--golden-must-pass=0"], 1),
        (["--golden-must-pass", "--golden-must-pass=F"], 1),
    ],
)
def test_golden_must_pass_reads_as_the_originals_boolean_flag(tmp_path: Path, args: list[str], code: int) -> None:
    current = [task("a", "failed", golden=True), *FOUR[1:]]
    done = gate(tmp_path, results(FOUR), results(current), *args)
    assert done.returncode == code, done.stderr
    assert "a (A): failed" in done.stdout.decode()


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
        (["--golden-must-pass=maybe"], "--golden-must-pass: 'maybe' is not true or false"),
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
        (b'{"schemaVersion": "2.0", "summary": {"success_rate": 1}, "tasks": []}', "schemaVersion '2.0'; waza reads 1.x"),
        (b'{"schemaVersion": "broken", "summary": {"success_rate": 1}, "tasks": []}', "schemaVersion 'broken'"),
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


def test_json_format_has_the_original_report_fields_in_its_order(tmp_path: Path) -> None:
    current = [task("a", "failed", golden=True), *FOUR[1:], task("e")]
    done = gate(tmp_path, results(FOUR, model="m1"), results(current, model="m2"), "-f", "json")
    assert done.returncode == 2
    report = orjson.loads(done.stdout)
    assert list(report) == [
        "baseline_file", "current_file", "baseline_pass_rate", "current_pass_rate", "pass_rate_delta",
        "max_regression_pct", "regression_pct", "regression_exceeds_threshold", "golden_failures", "golden_total",
        "golden_must_pass", "new_tasks", "on_new_tasks", "on_removed_tasks", "exit_code", "outcome",
    ]  # fmt: skip
    assert report["exit_code"] == 2 and report["outcome"] == "golden_failure" and report["golden_must_pass"] is True
    assert report["baseline_pass_rate"] == 1.0 and report["current_pass_rate"] == 0.8
    assert math.isclose(report["regression_pct"], 20.0)
    assert report["golden_failures"] == [
        {"test_id": "a", "display_name": "A", "baseline_status": "passed", "current_status": "failed"}
    ]
    assert report["new_tasks"] == ["e"]  # empty lists (warnings, removed_tasks) are left out, as in the original


def test_markdown_format(tmp_path: Path) -> None:
    done = gate(tmp_path, results(FOUR), results(FOUR[:3]), "--format", "markdown")
    out = done.stdout.decode()
    assert done.returncode == 0
    assert out.startswith("## ✅ Waza gate: `PASS`\n\n| | Baseline | Current | Delta |")
    assert "- Removed tasks (`warn`): `d`" in out and "- Warning: current is missing 1 task(s)" in out


def test_github_actions_format_annotates_and_appends_the_step_summary(tmp_path: Path) -> None:
    summary = tmp_path / "summary.md"
    summary.write_text("earlier step\n")
    current = [task("a"), task("b", "failed"), task("c"), task("d")]
    done = gate(tmp_path, results(FOUR), results(current), "-f", "github-actions", env={"GITHUB_STEP_SUMMARY": str(summary)})
    assert done.returncode == 1
    assert done.stdout.decode() == (
        "::error title=Waza gate pass rate::100.0%25 -> 75.0%25 (delta -25.0 points%2C at most 0.0 allowed)\n"
    )
    text = summary.read_text()
    assert text.startswith("earlier step\n## ❌ Waza gate: `REGRESSION`") and "| Pass rate | 100.0% | 75.0% |" in text


def test_github_actions_demotes_golden_failures_to_warnings_when_they_do_not_block(tmp_path: Path) -> None:
    current = [task("a", "failed", golden=True), *FOUR[1:]]
    done = gate(
        tmp_path, results(FOUR), results(current), "-f", "github-actions", "--golden-must-pass=false",
        "--max-regression-pct", "50", env={"GITHUB_STEP_SUMMARY": ""},
    )  # fmt: skip
    out = done.stdout.decode()
    assert done.returncode == 0
    assert "::warning title=Waza gate golden task::a (A)%3A failed\n" in out and "::error" not in out
    assert "## ✅ Waza gate: `PASS`" in out  # no step summary file: the summary is printed


def test_the_originals_own_compatibility_files_gate_as_there(tmp_path: Path) -> None:
    """The original's CLI test: its results-1.0.json against itself passes; a copy whose golden task failed
    exits 1 with --golden-must-pass=false and 2 without; a missing file is 3."""
    base = tmp_path / "results-1.0.json"
    base.write_text(ORIGINAL_RESULTS)
    bad = orjson.loads(ORIGINAL_RESULTS)
    bad["summary"].update(success_rate=0, succeeded=0, failed=1)
    bad["tasks"][0]["status"] = bad["tasks"][0]["runs"][0]["status"] = "failed"
    write(tmp_path / "bad.json", bad)
    for args, code in (
        (["--current", base], 0),
        (["--current", tmp_path / "bad.json", "--golden-must-pass=false"], 1),
        (["--current", tmp_path / "bad.json"], 2),
        (["--current", tmp_path / "missing.json"], 3),
    ):
        done = run_waza("gate", "--baseline", base, *args, "--format", "json", cwd=tmp_path)
        assert done.returncode == code, done.stderr
        if code != 3:
            assert orjson.loads(done.stdout)["exit_code"] == code


@pytest.mark.parametrize("version", [None, "1.0", "1.1", "1.4", "1.99"])
def test_a_results_json_of_any_1x_version_with_fields_waza_does_not_know_is_read(tmp_path: Path, version: str | None) -> None:
    """As the original's own corpus test has it: same major, unknown fields ignored."""
    doc = orjson.loads(ORIGINAL_RESULTS)
    doc.pop("schemaVersion")
    if version is not None:
        doc["schemaVersion"] = version
    doc["future_field"] = True
    outcome = load(str(write(tmp_path / "r.json", doc)))
    assert decide(outcome, outcome, GateOptions()).exit_code == 0 and outcome.tasks[0].golden


#: The original's ``internal/testdata/compatibility/v1/results-1.0.json`` (microsoft/waza), as it is there.
ORIGINAL_RESULTS = """{
  "schemaVersion": "1.0",
  "eval_id": "compatibility-run",
  "skill": "compatibility-skill",
  "eval_name": "compatibility",
  "timestamp": "2026-01-01T00:00:00Z",
  "config": {"runs_per_test": 1, "model_id": "mock-model", "engine_type": "mock", "timeout_sec": 30},
  "summary": {"total_tests": 1, "succeeded": 1, "failed": 0, "errors": 0, "skipped": 0, "success_rate": 1,
              "aggregate_score": 1, "weighted_score": 1, "min_score": 1, "max_score": 1, "std_dev": 0, "duration_ms": 10},
  "metrics": {},
  "tasks": [{
    "test_id": "compatibility-task", "display_name": "Compatibility task", "golden": true, "status": "passed",
    "runs": [{"run_number": 1, "attempts": 1, "status": "passed", "duration_ms": 10,
              "validations": {"answer": {"identifier": "answer", "type": "text", "passed": true, "score": 1, "weight": 1}},
              "session_digest": {}, "final_output": "ready"}]
  }]
}
"""


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
    assert [t["test_id"] for t in report["golden_failures"]] == ["a"]
    assert report["new_tasks"] == ["d"] and report["removed_tasks"] == ["c"]
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
