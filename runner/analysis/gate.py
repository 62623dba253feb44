"""The CI gate: does a run's results hold up against a baseline's, decided as the original waza decides.

The rules are microsoft/waza's ``waza gate``, so a pipeline moved to waza
passes and fails on the same files:

- The regression is the drop of the suite's success rate (tasks passed /
  tasks, ``summary.success_rate``) in percentage points, never negative; the
  gate fails when it exceeds ``max_regression_pct`` (equal is allowed). It is
  one number over the suite, not per task: a task that went from passing to
  failing counts only through that rate.
- With ``golden_must_pass``, every task of the *current* run marked golden
  must have status passed; golden tasks of the baseline are not looked at.
- A task id only in the current run is new, one only in the baseline removed;
  each policy is allow (nothing), warn (a warning) or fail (a failure).
  Tasks are matched on their id (``test_id``).
- A golden failure wins: the verdict is golden-failure (exit 2) even when
  other failures exist; otherwise any failure is fail (exit 1); else pass.
"""

from __future__ import annotations

from typing import Literal

import msgspec

from waza.runner.analysis.outcome_format import Outcome, TaskOutcome

__all__ = [
    "GOLDEN_FAILURE",
    "PASS",
    "POLICIES",
    "REGRESSION",
    "GateIssue",
    "GateOptions",
    "GateReport",
    "GateTask",
    "Policy",
    "decide",
]

Policy = Literal["allow", "warn", "fail"]
POLICIES: tuple[Policy, ...] = ("allow", "warn", "fail")

#: The verdicts' exit statuses, as the original defines them.
PASS, REGRESSION, GOLDEN_FAILURE = 0, 1, 2


class GateOptions(msgspec.Struct, frozen=True):
    max_regression_pct: float = 0.0
    golden_must_pass: bool = False
    on_new_tasks: Policy = "allow"
    on_removed_tasks: Policy = "warn"


class GateTask(msgspec.Struct, omit_defaults=True):
    task_id: str
    display_name: str
    status: str
    pass_rate: float
    golden: bool = False


class GateIssue(msgspec.Struct, omit_defaults=True):
    kind: str
    severity: str
    message: str
    task_id: str = ""
    task_name: str = ""


class GateReport(msgspec.Struct, omit_defaults=True):
    """The decision and what it rests on; the field names are the original's ``--format json`` ones."""

    passed: bool
    exit_code: int
    verdict: Literal["pass", "fail", "golden-failure"]
    baseline_file: str
    current_file: str
    baseline_success_rate: float
    current_success_rate: float
    regression_pct: float
    max_regression_pct: float
    golden_must_pass: bool
    baseline_task_count: int
    current_task_count: int
    new_task_policy: str
    removed_task_policy: str
    baseline_aggregate_score: float
    current_aggregate_score: float
    golden_failures: list[GateTask] = []
    new_tasks: list[GateTask] = []
    removed_tasks: list[GateTask] = []
    warnings: list[GateIssue] = []
    failures: list[GateIssue] = []
    baseline_model: str = ""
    current_model: str = ""
    baseline_runs_per_test: int = 0
    current_runs_per_test: int = 0


def _task(outcome: TaskOutcome) -> GateTask:
    rate = outcome.stats.pass_rate if outcome.stats is not None else 0.0
    return GateTask(
        task_id=outcome.test_id, display_name=outcome.display_name, status=outcome.status, pass_rate=rate, golden=outcome.golden
    )


def _policy_issue(policy: Policy, kind: str, task: GateTask) -> GateIssue:
    where = "current" if kind == "new_task" else "baseline"
    return GateIssue(
        kind=kind,
        severity="error" if policy == "fail" else "warning",
        message=f'task "{task.display_name}" ({task.task_id}) is present only in {where} results and policy is {policy}',
        task_id=task.task_id,
        task_name=task.display_name,
    )


def _index(outcome: Outcome) -> dict[str, TaskOutcome]:
    """Tasks by id; of two entries with one id the later wins, as in the original."""
    return {t.test_id: t for t in outcome.tasks}


def decide(
    baseline: Outcome, current: Outcome, options: GateOptions, *, baseline_file: str = "", current_file: str = ""
) -> GateReport:
    """The gate's report on ``current`` against ``baseline``; ``exit_code`` is the verdict's status."""
    drop = (baseline.summary.success_rate - current.summary.success_rate) * 100
    regression = drop if drop > 0 else 0.0
    failures: list[GateIssue] = []
    warnings: list[GateIssue] = []
    if regression > options.max_regression_pct:
        failures.append(
            GateIssue(
                kind="regression",
                severity="error",
                message=f"aggregate pass rate regressed by {regression:.2f} percentage points, "
                f"exceeding {options.max_regression_pct:.2f}",
            )
        )
    before, after = _index(baseline), _index(current)
    new: list[GateTask] = []
    removed: list[GateTask] = []
    golden: list[GateTask] = []

    def apply(policy: Policy, kind: str, task: GateTask) -> None:
        if policy != "allow":
            (failures if policy == "fail" else warnings).append(_policy_issue(policy, kind, task))

    for task_id in sorted(after):
        outcome = after[task_id]
        if task_id not in before:
            new.append(_task(outcome))
            apply(options.on_new_tasks, "new_task", new[-1])
        if options.golden_must_pass and outcome.golden and outcome.status != "passed":
            golden.append(_task(outcome))
    for task_id in sorted(before):
        if task_id not in after:
            removed.append(_task(before[task_id]))
            apply(options.on_removed_tasks, "removed_task", removed[-1])
    for task in golden:
        failures.append(
            GateIssue(
                kind="golden_failure",
                severity="error",
                message=f'golden task "{task.display_name}" ({task.task_id}) did not pass; status={task.status}',
                task_id=task.task_id,
                task_name=task.display_name,
            )
        )
    exit_code = GOLDEN_FAILURE if golden else REGRESSION if failures else PASS
    return GateReport(
        passed=exit_code == PASS,
        exit_code=exit_code,
        verdict="golden-failure" if golden else "fail" if failures else "pass",
        baseline_file=baseline_file,
        current_file=current_file,
        baseline_success_rate=baseline.summary.success_rate,
        current_success_rate=current.summary.success_rate,
        regression_pct=regression,
        max_regression_pct=options.max_regression_pct,
        golden_must_pass=options.golden_must_pass,
        baseline_task_count=len(baseline.tasks),
        current_task_count=len(current.tasks),
        new_task_policy=options.on_new_tasks,
        removed_task_policy=options.on_removed_tasks,
        baseline_aggregate_score=baseline.summary.aggregate_score,
        current_aggregate_score=current.summary.aggregate_score,
        golden_failures=golden,
        new_tasks=new,
        removed_tasks=removed,
        warnings=warnings,
        failures=failures,
        baseline_model=baseline.config.model_id,
        current_model=current.config.model_id,
        baseline_runs_per_test=baseline.config.runs_per_test,
        current_runs_per_test=current.config.runs_per_test,
    )
