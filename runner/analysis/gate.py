"""The CI gate: does a run's results hold up against a baseline's, decided as the original waza decides.

The rules are microsoft/waza's ``waza gate`` (its current form), so a pipeline
moved to waza passes and fails on the same files:

- The regression is the drop of the suite's success rate (tasks passed /
  tasks, ``summary.success_rate``) in percentage points, never negative; it
  fails the gate when it exceeds ``max_regression_pct`` (equal is allowed). It
  is one number over the suite, not per task.
- A task is golden when either file marks it so: a task declared golden must
  keep passing even when the older file predates the field. A golden task
  that is not ``passed`` in the current run, or is missing from it, is a
  golden failure. Golden failures decide the verdict only with
  ``golden_must_pass`` (the default, as in the original); without it they are
  still listed.
- A task id only in the current run is new, one only in the baseline removed;
  each policy is allow (nothing), warn (a warning) or fail (an error). Tasks
  are matched on their id (``test_id``).
- The verdict, in this order: a golden failure (exit 2), a regression beyond
  the threshold (exit 1), a task-set error (exit 1), else pass (exit 0).
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
    "GateOptions",
    "GateOutcome",
    "GateReport",
    "GoldenStatus",
    "Policy",
    "decide",
]

Policy = Literal["allow", "warn", "fail"]
GateOutcome = Literal["pass", "regression", "golden_failure"]
POLICIES: tuple[Policy, ...] = ("allow", "warn", "fail")

#: The verdicts' exit statuses, as the original defines them.
PASS, REGRESSION, GOLDEN_FAILURE = 0, 1, 2


class GateOptions(msgspec.Struct, frozen=True):
    max_regression_pct: float = 0.0
    golden_must_pass: bool = True
    on_new_tasks: Policy = "allow"
    on_removed_tasks: Policy = "warn"


class GoldenStatus(msgspec.Struct, kw_only=True, omit_defaults=True):
    """A golden task that did not pass: its status in each file (``n/a``: missing from the current run)."""

    test_id: str
    display_name: str
    baseline_status: str = ""
    current_status: str


class GateReport(msgspec.Struct, kw_only=True, omit_defaults=True):
    """The decision and what it rests on; field names and order are the original's ``--format json`` ones
    (the lists are left out when empty, as the original's ``omitempty``)."""

    baseline_file: str
    current_file: str
    baseline_pass_rate: float
    current_pass_rate: float
    pass_rate_delta: float
    max_regression_pct: float
    regression_pct: float
    regression_exceeds_threshold: bool
    golden_failures: list[GoldenStatus] = []
    golden_total: int
    golden_must_pass: bool
    new_tasks: list[str] = []
    removed_tasks: list[str] = []
    on_new_tasks: str
    on_removed_tasks: str
    warnings: list[str] = []
    errors: list[str] = []
    exit_code: int
    outcome: GateOutcome


def _index(outcome: Outcome) -> dict[str, TaskOutcome]:
    """Tasks by id; of two entries with one id the later wins, as in the original."""
    return {t.test_id: t for t in outcome.tasks}


def _policy(policy: Policy, message: str, warnings: list[str], errors: list[str]) -> None:
    if policy != "allow":
        (errors if policy == "fail" else warnings).append(message)


def _golden_failures(before: dict[str, TaskOutcome], after: dict[str, TaskOutcome]) -> tuple[int, list[GoldenStatus]]:
    golden = sorted({i for i, t in after.items() if t.golden} | {i for i, t in before.items() if t.golden})
    failures: list[GoldenStatus] = []
    for task_id in golden:
        now, then = after.get(task_id), before.get(task_id)
        if now is None:
            name = then.display_name if then is not None and then.display_name else task_id
            was = then.status if then is not None else ""
            failures.append(GoldenStatus(test_id=task_id, display_name=name, baseline_status=was, current_status="n/a"))
        elif now.status != "passed":
            was = then.status if then is not None else ""
            failures.append(
                GoldenStatus(test_id=task_id, display_name=now.display_name, baseline_status=was, current_status=now.status)
            )
    return len(golden), failures


def decide(
    baseline: Outcome, current: Outcome, options: GateOptions, *, baseline_file: str = "", current_file: str = ""
) -> GateReport:
    """The gate's report on ``current`` against ``baseline``; ``exit_code`` is the verdict's status."""
    before_rate, after_rate = baseline.summary.success_rate, current.summary.success_rate
    delta = after_rate - before_rate
    regression = -delta * 100 if delta < 0 else 0.0
    exceeds = regression > options.max_regression_pct
    before, after = _index(baseline), _index(current)
    new = sorted(set(after) - set(before))
    removed = sorted(set(before) - set(after))
    golden_total, golden = _golden_failures(before, after)
    warnings: list[str] = []
    errors: list[str] = []
    if new:
        _policy(options.on_new_tasks, f"current adds {len(new)} task(s) not in baseline: {', '.join(new)}", warnings, errors)
    if removed:
        message = f"current is missing {len(removed)} task(s) present in baseline: {', '.join(removed)}"
        _policy(options.on_removed_tasks, message, warnings, errors)
    outcome: GateOutcome
    if options.golden_must_pass and golden:
        exit_code, outcome = GOLDEN_FAILURE, "golden_failure"
    elif exceeds or errors:
        exit_code, outcome = REGRESSION, "regression"
    else:
        exit_code, outcome = PASS, "pass"
    return GateReport(
        baseline_file=baseline_file,
        current_file=current_file,
        baseline_pass_rate=before_rate,
        current_pass_rate=after_rate,
        pass_rate_delta=delta,
        max_regression_pct=options.max_regression_pct,
        regression_pct=regression,
        regression_exceeds_threshold=exceeds,
        golden_failures=golden,
        golden_total=golden_total,
        golden_must_pass=options.golden_must_pass,
        new_tasks=new,
        removed_tasks=removed,
        on_new_tasks=options.on_new_tasks,
        on_removed_tasks=options.on_removed_tasks,
        warnings=warnings,
        errors=errors,
        exit_code=exit_code,
        outcome=outcome,
    )
