"""Suite metrics: what each name means, computed from the run.

- ``task_completion``: per task, passed trials / judged trials (pending ones
  are not judged); the mean over tasks weighted by each task's ``weight``.
- ``trigger_accuracy``: the confidence-weighted accuracy of the trigger tests.
- ``behavior_quality``: the mean score of every behaviour grade (behavior,
  action_sequence, skill_invocation, tool_calls, tool_constraint, including
  ``expected.behavior``) over all trials; a grade that errored counts as 0.
- ``efficiency``: the same value as behavior_quality, under the name the
  grader-showcase suite uses ("tool usage, time": what those graders judge).
- ``grader_validation``: the share of all grades over all trials that passed;
  errored grades count as not passed, pending ones are left out.

Any other name (the original allows any) has no value and the detail "waza
does not compute this metric"; ``behavior_quality`` in a suite without a
behaviour grader likewise has no value. A metric passes when its value is at or above its threshold. A metric with no
data in this run (trigger tests skipped, every task filtered away) has no
value and neither passes nor fails; ``detail`` says why.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from waza.protocol.records import Grade
from waza.protocol.suite_records import SuiteMetric, SuiteTask, TriggerReport
from waza.runner.suites.models import BEHAVIOUR_GRADERS, Metric, Task
from waza.runner.wording import count

Value = tuple[float | None, str]


def compute(metrics: list[Metric], tasks: list[tuple[Task, SuiteTask]], triggers: TriggerReport | None) -> list[SuiteMetric]:
    out = []
    for metric in metrics:
        value, detail = (None, "disabled") if not metric.enabled else MEASURES.get(metric.name, _unknown)(tasks, triggers)
        passed = None if value is None or metric.threshold is None else value >= metric.threshold
        out.append(
            SuiteMetric(
                name=metric.name,
                value=None if value is None else round(value, 6),
                threshold=metric.threshold,
                passed=passed,
                weight=metric.weight,
                enabled=metric.enabled,
                description=metric.description,
                detail=detail,
            )
        )
    return out


def overall(metrics: list[SuiteMetric]) -> float | None:
    """Weighted mean of the enabled metrics that have a value (plain mean when all weights are 0)."""
    valued = [(m.value, m.weight) for m in metrics if m.enabled and m.value is not None]
    if not valued:
        return None
    weight = sum(w for _, w in valued)
    if weight == 0:
        return sum(v for v, _ in valued) / len(valued)
    return sum(v * w for v, w in valued) / weight


def task_completion(tasks: list[tuple[Task, SuiteTask]], _: TriggerReport | None) -> Value:
    judged = [(t.weight, r.pass_rate) for t, r in tasks if r.pass_rate is not None]
    if not judged:
        return None, "no task has a judged trial"
    weight = sum(w for w, _ in judged)
    value = sum(w * rate for w, rate in judged) / weight if weight else sum(rate for _, rate in judged) / len(judged)
    return value, f"weighted mean pass rate over {count(len(judged), 'task')}"


def trigger_accuracy(_: list[tuple[Task, SuiteTask]], triggers: TriggerReport | None) -> Value:
    if triggers is None or triggers.accuracy is None:
        return None, "trigger tests were not run"
    return triggers.accuracy, f"weighted accuracy over {count(triggers.prompts, 'prompt')} ({triggers.errors} errored)"


def behavior_quality(tasks: list[tuple[Task, SuiteTask]], _: TriggerReport | None) -> Value:
    behaviour = _grades(tasks, lambda t, g: t.grader_type(g.name) in BEHAVIOUR_GRADERS)
    scores = [s for s in (0.0 if g.status == "error" else g.score for g in behaviour) if s is not None]
    if not scores:
        return None, "no behaviour grades in this run"
    return sum(scores) / len(scores), f"mean score of {len(scores)} behaviour grades"


def grader_validation(tasks: list[tuple[Task, SuiteTask]], _: TriggerReport | None) -> Value:
    verdicts = [g.status == "passed" for g in _grades(tasks, lambda t, g: g.status != "pending")]
    if not verdicts:
        return None, "no grades in this run"
    return sum(verdicts) / len(verdicts), f"{sum(verdicts)} of {len(verdicts)} grades passed"


def _grades(tasks: list[tuple[Task, SuiteTask]], keep: Callable[[Task, Grade], bool]) -> Iterator[Grade]:
    for task, result in tasks:
        for trial in result.trials:
            yield from (g for g in trial.grades if keep(task, g))


def _unknown(_: list[tuple[Task, SuiteTask]], __: TriggerReport | None) -> Value:
    return None, "waza does not compute this metric"


MEASURES: dict[str, Callable[[list[tuple[Task, SuiteTask]], TriggerReport | None], Value]] = {
    "task_completion": task_completion,
    "trigger_accuracy": trigger_accuracy,
    "behavior_quality": behavior_quality,
    "efficiency": behavior_quality,
    "grader_validation": grader_validation,
}
