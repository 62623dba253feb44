"""Assembling the SuiteResult document from a finished run.

A task's status folds its trials the way a result folds its grades: any
errored trial makes it ``error``, else any failed one ``failed``, else any
pending one ``pending``, else ``passed``. The suite passes when no task failed
or errored, every metric with a threshold met it, and no trigger prompt
errored; ``summary.missed`` lists each reason it did not.
"""

from __future__ import annotations

import msgspec

from waza.protocol.records import CaptureResult
from waza.protocol.suite_records import SuiteMetric, SuiteResult, SuiteSummary, SuiteTask, TriggerReport
from waza.runner.suites import metrics
from waza.runner.suites.models import Suite, Task
from waza.runner.wording import count

ORDER = ("error", "failed", "pending")


class RunRecord(msgspec.Struct):
    """What a run produced, gathered by the sink as trials finish."""

    adapter: str
    model: str | None
    trials_per_task: int
    started: int
    finished: int = 0
    trials: dict[str, list[CaptureResult]] = msgspec.field(default_factory=dict)
    triggers: TriggerReport | None = None
    filtered: list[str] = msgspec.field(default_factory=list)
    not_run: list[str] = msgspec.field(default_factory=list)


def task_result(task: Task, trials: list[CaptureResult]) -> SuiteTask:
    trials = sorted(trials, key=lambda r: r.trial or 0)
    statuses = [r.status for r in trials]
    status = next((s for s in ORDER if s in statuses), "passed")
    judged = [s for s in statuses if s in ("passed", "failed", "error")]
    scores = [r.score.score for r in trials if r.score is not None and r.score.score is not None]
    return SuiteTask(
        id=task.id,
        name=task.name,
        file=task.file,
        status=status,  # type: ignore[arg-type]
        pass_rate=judged.count("passed") / len(judged) if judged else None,
        score=sum(scores) / len(scores) if scores else None,
        weight=task.weight,
        golden=task.golden,
        tags=task.tags,
        description=task.description,
        trials=trials,
    )


def build(suite: Suite, run: RunRecord) -> SuiteResult:
    ran = [(t, task_result(t, run.trials[t.id])) for t in suite.tasks if run.trials.get(t.id)]
    measured = metrics.compute(suite.metrics, ran, run.triggers)
    tasks = [r for _, r in ran]
    missed = [f"task {r.id} {r.status}" for r in tasks if r.status in ("failed", "error")]
    missed += [_miss(m) for m in measured if m.passed is False]
    if run.triggers is not None and run.triggers.errors:
        missed.append(f"{run.triggers.errors} trigger prompts errored")
    if run.not_run:
        missed.append(f"{count(len(run.not_run), 'task')} not run: fail_fast stopped the run")
    summary = SuiteSummary(
        status="failed" if missed else "passed",
        tasks=len(tasks),
        passed=sum(r.status == "passed" for r in tasks),
        failed=sum(r.status == "failed" for r in tasks),
        errored=sum(r.status == "error" for r in tasks),
        pending=sum(r.status == "pending" for r in tasks),
        trials=sum(len(r.trials) for r in tasks),
        disabled=[t.id for t in suite.tasks if not t.enabled],
        filtered=run.filtered,
        not_run=run.not_run,
        score=metrics.overall(measured),
        missed=missed,
    )
    return SuiteResult(
        suite=suite.name,
        file=str(suite.file),
        description=suite.description,
        skill=suite.skill,
        version=suite.version,
        adapter=run.adapter,
        model=run.model,
        trials_per_task=run.trials_per_task,
        started=run.started,
        finished=run.finished,
        summary=summary,
        metrics=measured,
        tasks=tasks,
        triggers=run.triggers,
    )


def _miss(metric: SuiteMetric) -> str:
    return f"metric {metric.name} {metric.value:.3f} < threshold {metric.threshold:g}"
