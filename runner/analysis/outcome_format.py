"""The original waza's results.json (its ``EvaluationOutcome``): the fields waza writes and the gate reads.

microsoft/waza writes one JSON document per run (``waza run -o results.json``)
and gates CI on two of them. waza writes the same document (``--reporter
results:FILE``) so a team can keep its baselines and its gate, and reads it
back (``waza gate``). The model holds the keys the gate and the statistics
use; every other key of the original's document (per-run transcripts,
validations, usage) is ignored on reading, so a file the original wrote loads
whole. The statistics are the original's: per task a 95 % Wilson interval on
the pass rate over its trials (``stats.pass_rate_ci``, when it ran more than
one), and for the suite the pass^k curve (``summary.statistics.pass_hat_k``:
element k-1 is the mean over tasks of C(c, k)/C(n, k), up to the fewest
trials any task ran) and a Wilson interval on the success rate, counting each
task as one sample (when tasks ran more than one trial and at least two ran).
"""

from __future__ import annotations

import math
from typing import Literal

import msgspec

from waza.runner.analysis.passk import pass_hat_k
from waza.runner.analysis.stats import wilson

__all__ = [
    "Interval",
    "Outcome",
    "OutcomeSetup",
    "OutcomeStatistics",
    "OutcomeSummary",
    "TaskOutcome",
    "TaskRuns",
    "TaskStats",
    "build",
    "encode",
]

#: A task's status as the original records it: passed only when every trial that ran passed.
Status = Literal["passed", "failed", "error", "skipped"]

LEVEL = 0.95


class Interval(msgspec.Struct):
    """The original's ``ConfidenceInterval`` (lower, upper, the point estimate and the level)."""

    lower: float
    upper: float
    mean: float
    confidence_level: float = LEVEL


class TaskStats(msgspec.Struct):
    pass_rate: float = 0.0
    passed_runs: int = 0
    failed_runs: int = 0
    error_runs: int = 0
    total_runs: int = 0
    avg_score: float = 0.0
    avg_weighted_score: float = 0.0
    min_score: float = 0.0
    max_score: float = 0.0
    flaky: bool = False
    pass_rate_ci: Interval | None = None


class TaskOutcome(msgspec.Struct, omit_defaults=True):
    """One entry of ``tasks``: the gate keys tasks by ``test_id``. The keys the original leaves out when
    empty (golden, group, stats) are left out here too; the others it always writes, and requires."""

    test_id: str
    display_name: str
    status: str
    golden: bool = False
    group: str = ""
    stats: TaskStats | None = None
    runs: list[dict[str, object]] = []


class OutcomeStatistics(msgspec.Struct):
    success_rate_ci: Interval | None = None
    pass_hat_k: list[float] = []


class OutcomeSummary(msgspec.Struct):
    total_tests: int = 0
    succeeded: int = 0
    failed: int = 0
    errors: int = 0
    skipped: int = 0
    success_rate: float = 0.0
    aggregate_score: float = 0.0
    weighted_score: float = 0.0
    min_score: float = 0.0
    max_score: float = 0.0
    std_dev: float = 0.0
    duration_ms: int = 0
    statistics: OutcomeStatistics | None = None


class OutcomeSetup(msgspec.Struct):
    runs_per_test: int = 0
    model_id: str = ""
    engine_type: str = ""
    timeout_sec: int = 0


class Outcome(msgspec.Struct):
    """The document: ``summary.success_rate`` and ``tasks`` are what the gate decides on."""

    eval_id: str = ""
    skill: str = ""
    eval_name: str = ""
    timestamp: str = ""
    config: OutcomeSetup = msgspec.field(default_factory=OutcomeSetup)
    summary: OutcomeSummary = msgspec.field(default_factory=OutcomeSummary)
    metrics: dict[str, object] = {}
    tasks: list[TaskOutcome] = []


class TaskRuns(msgspec.Struct):
    """One task as any of waza's results hold it: its trials' statuses and scores, in trial order."""

    id: str
    name: str
    statuses: list[str]
    #: The scores of the trials that have one; the others score 0.
    scores: list[float] = []
    golden: bool = False
    #: The original's ``runs[]`` entries, when there is more to say per trial than its status (a conversation).
    runs: list[dict[str, object]] = []


def _task(runs: TaskRuns) -> tuple[TaskOutcome, int, int]:
    """The task's entry and its (passes, trials) for the suite's pass^k.

    As in the original, every trial counts in ``total_runs`` and the pass rate, a skipped one (waza's
    pending or ungraded) as neither passed nor failed, and a trial without a score scores 0."""
    c = runs.statuses.count("passed")
    failed = runs.statuses.count("failed")
    errors = runs.statuses.count("error")
    n = len(runs.statuses)
    status: Status = "error" if errors else "failed" if failed else "passed" if c else "skipped"
    rate = c / n if n else 0.0
    scores = [*runs.scores, *[0.0] * (n - len(runs.scores))]
    avg = math.fsum(scores) / n if n else 0.0
    stats = TaskStats(
        pass_rate=rate,
        passed_runs=c,
        failed_runs=failed,
        error_runs=errors,
        total_runs=n,
        avg_score=avg,
        avg_weighted_score=avg,
        min_score=min(scores, default=0.0),
        max_score=max(scores, default=0.0),
        flaky=0 < c < n,
        pass_rate_ci=_interval(c, n) if n > 1 else None,
    )
    outcome = TaskOutcome(test_id=runs.id, display_name=runs.name, status=status, golden=runs.golden, stats=stats, runs=runs.runs)
    return outcome, c, n


def _interval(successes: int, n: int) -> Interval:
    low, high = wilson(successes, n, LEVEL)
    return Interval(lower=low, upper=high, mean=successes / n)


def build(
    tasks: list[TaskRuns],
    *,
    name: str,
    skill: str = "",
    model: str = "",
    engine: str = "",
    runs_per_test: int,
    timestamp: str = "",
    duration_ms: int = 0,
    timeout_sec: int = 0,
) -> Outcome:
    """The document for these tasks, with the original's per-task and suite statistics."""
    entries = [_task(t) for t in tasks]
    outcomes = [e for e, _, _ in entries]
    counted = [(c, n) for _, c, n in entries if n]
    succeeded = sum(1 for o in outcomes if o.status == "passed")
    total = len(outcomes)
    # every task counts in the suite's scores, as in the original (one that ran no trial scores 0)
    averages = [o.stats.avg_score if o.stats is not None else 0.0 for o in outcomes]
    mean = math.fsum(averages) / len(averages) if averages else 0.0
    statistics = None
    if runs_per_test > 1 and len(counted) >= 2:
        fewest = min(n for _, n in counted)
        curve = [math.fsum(pass_hat_k(n, c, k) or 0.0 for c, n in counted) / len(counted) for k in range(1, fewest + 1)]
        statistics = OutcomeStatistics(success_rate_ci=_interval(succeeded, total), pass_hat_k=curve)
    summary = OutcomeSummary(
        total_tests=total,
        succeeded=succeeded,
        failed=sum(1 for o in outcomes if o.status == "failed"),
        errors=sum(1 for o in outcomes if o.status == "error"),
        skipped=sum(1 for o in outcomes if o.status == "skipped"),
        success_rate=succeeded / total if total else 0.0,
        aggregate_score=mean,
        weighted_score=mean,
        min_score=min(averages, default=0.0),
        max_score=max(averages, default=0.0),
        std_dev=math.sqrt(math.fsum((a - mean) ** 2 for a in averages) / len(averages)) if averages else 0.0,
        duration_ms=duration_ms,
        statistics=statistics,
    )
    setup = OutcomeSetup(runs_per_test=runs_per_test, model_id=model, engine_type=engine, timeout_sec=timeout_sec)
    return Outcome(eval_id=name, skill=skill, eval_name=name, timestamp=timestamp, config=setup, summary=summary, tasks=outcomes)


def encode(outcome: Outcome) -> bytes:
    """The document as indented JSON, as the original writes it."""
    import orjson

    return orjson.dumps(msgspec.to_builtins(outcome), option=orjson.OPT_INDENT_2) + b"\n"
