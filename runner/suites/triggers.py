"""Trigger tests: does the agent invoke the skill for the prompts it should, and only those?

Each prompt of trigger_tests.yaml runs once through the same adapter as the
tasks, in an empty fresh workspace. "Triggered" means the skill appears among
the skills the trajectory shows invoked (skill events, or tool calls named
``skill``: the same reading the skill_invocation grader uses). Counts are
weighted by confidence (high 1.0, medium 0.5). A prompt whose run errored
counts as a wrong answer (a false negative if it should have triggered, a
false positive if not) and is counted separately in ``errors``.
"""

from __future__ import annotations

from waza.graders._trajectory import skills
from waza.protocol.records import CaptureResult, PromptCase
from waza.protocol.suite_records import TriggerCase, TriggerReport
from waza.runner.engine.pipeline import WorkItem
from waza.runner.suites.models import TriggerPrompt, TriggerTests


def case_id(index: int) -> str:
    return f"trigger-{index + 1:03d}"


def work_items(tests: TriggerTests) -> list[WorkItem]:
    """One ungraded work item per prompt, in file order (should-trigger prompts first)."""
    items = []
    for i, prompt in enumerate(tests.prompts):
        metadata = {"skill": tests.skill, "trigger": {"shouldTrigger": prompt.should_trigger, "confidence": prompt.confidence}}
        unknown = {"mock": prompt.mock} if prompt.mock is not None else {}
        items.append(
            WorkItem(case=PromptCase(id=case_id(i), input=prompt.prompt, metadata=metadata, unknown=unknown), graders=[])
        )
    return items


def judge(prompt: TriggerPrompt, result: CaptureResult, skill: str) -> TriggerCase:
    invoked, _ = skills([step.to_dict() for step in result.trajectory])
    error = "; ".join(result.errors) or None
    triggered = None if error else skill in invoked
    return TriggerCase(
        prompt=prompt.prompt,
        should_trigger=prompt.should_trigger,
        confidence=prompt.confidence,
        weight=prompt.weight,
        triggered=triggered,
        correct=triggered is not None and triggered == prompt.should_trigger,
        skills=invoked,
        reason=prompt.reason,
        error=error,
    )


def report(tests: TriggerTests, results: dict[str, CaptureResult]) -> TriggerReport:
    """The weighted confusion matrix and its rates over the prompts that ran."""
    cases = [judge(p, results[case_id(i)], tests.skill) for i, p in enumerate(tests.prompts) if case_id(i) in results]
    tp = sum(c.weight for c in cases if c.should_trigger and c.correct)
    fn = sum(c.weight for c in cases if c.should_trigger and not c.correct)
    tn = sum(c.weight for c in cases if not c.should_trigger and c.correct)
    fp = sum(c.weight for c in cases if not c.should_trigger and not c.correct)
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
