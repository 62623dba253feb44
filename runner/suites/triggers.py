"""Trigger tests: does the agent invoke the skill for the prompts it should, and only those?

Each prompt of trigger_tests.yaml runs as many times as each task (the
suite's trials) through the same adapter as the tasks, each time in an empty
fresh workspace. "Triggered" means the skill appears among the skills the
trajectory shows invoked (skill events, or tool calls named ``skill``: the same
reading the skill_invocation grader uses); a prompt's ``trigger_rate`` is the
share of its runs that triggered, and it counts as triggered when more than
half of its runs did. In the confusion matrix each run counts for its share of
the prompt's weight (confidence: high 1.0, medium 0.5), so with one trial a
prompt counts whole. A run that errored counts as a wrong answer (a false
negative if the prompt should have triggered, a false positive if not); a
prompt with an errored run is counted in ``errors``.
"""

from __future__ import annotations

from waza.graders._trajectory import skills
from waza.protocol.records import CaptureResult, PromptCase
from waza.protocol.suite_records import TriggerCase, TriggerReport
from waza.runner.engine.pipeline import WorkItem
from waza.runner.suites.models import TriggerPrompt, TriggerTests


def case_id(index: int) -> str:
    return f"trigger-{index + 1:03d}"


def work_items(tests: TriggerTests, trials: int = 1) -> list[WorkItem]:
    """One ungraded work item per prompt and trial, in file order (should-trigger prompts first); the trial
    number is set only when there are several."""
    items = []
    for i, prompt in enumerate(tests.prompts):
        metadata = {"skill": tests.skill, "trigger": {"shouldTrigger": prompt.should_trigger, "confidence": prompt.confidence}}
        unknown = {"mock": prompt.mock} if prompt.mock is not None else {}
        case = PromptCase(id=case_id(i), input=prompt.prompt, metadata=metadata, unknown=unknown)
        items += [WorkItem(case=case, trial=t if trials > 1 else None, graders=[]) for t in range(1, trials + 1)]
    return items


def is_trigger(result: CaptureResult) -> bool:
    """Whether a result is a trigger prompt's run (not a task's trial)."""
    return "trigger" in result.metadata


def judge(prompt: TriggerPrompt, results: list[CaptureResult], skill: str) -> tuple[TriggerCase, list[bool]]:
    """The prompt's case over its runs, and whether each run was right."""
    invoked: list[str] = []
    fired: list[bool] = []
    right: list[bool] = []
    errors = []
    for result in sorted(results, key=lambda r: r.trial or 0):
        names, _ = skills([step.to_dict() for step in result.trajectory])
        invoked += [n for n in names if n not in invoked]
        if result.errors:
            errors.append("; ".join(result.errors))
            right.append(False)
        else:
            fired.append(skill in names)
            right.append(fired[-1] == prompt.should_trigger)
    rate = sum(fired) / len(fired) if fired else None
    triggered = None if rate is None else rate > 0.5
    case = TriggerCase(
        prompt=prompt.prompt,
        should_trigger=prompt.should_trigger,
        confidence=prompt.confidence,
        weight=prompt.weight,
        triggered=triggered,
        correct=not errors and triggered == prompt.should_trigger,
        skills=invoked,
        reason=prompt.reason,
        error="; ".join(errors) or None,
        runs=len(results),
        trigger_rate=rate,
    )
    return case, right


def report(tests: TriggerTests, results: dict[str, list[CaptureResult]]) -> TriggerReport:
    """The weighted confusion matrix (each run its share of the prompt's weight) and its rates over the
    prompts that ran."""
    judged = [(p, *judge(p, results[case_id(i)], tests.skill)) for i, p in enumerate(tests.prompts) if results.get(case_id(i))]
    cases = [case for _, case, _ in judged]

    def weighted(should: bool, correct: bool) -> float:
        return sum(p.weight * runs.count(correct) / len(runs) for p, _, runs in judged if p.should_trigger == should)

    tp, fn, tn, fp = weighted(True, True), weighted(True, False), weighted(False, True), weighted(False, False)
    total = tp + fn + tn + fp
    # undefined ratios (nothing predicted / nothing to find) are 0.0, as the original waza reports them
    precision = tp / (tp + fp) if tp + fp else 0.0
    recall = tp / (tp + fn) if tp + fn else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return TriggerReport(
        skill=tests.skill,
        file=tests.file,
        prompts=len(cases),
        errors=sum(1 for c in cases if c.error is not None),
        true_positives=tp,
        false_negatives=fn,
        true_negatives=tn,
        false_positives=fp,
        accuracy=(tp + tn) / total if total else None,
        precision=precision,
        recall=recall,
        f1=f1,
        cases=cases,
    )
