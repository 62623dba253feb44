"""The result document of ``waza run eval.yaml``: one JSON object for the whole suite.

Per-trial detail is the CaptureResult record itself (grades, weighted score,
trajectory as the transcript), so a trial in the document and a line of the
JSONL stream are the same thing and the same tools read both.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from .codec import Record, doc
from .records import CaptureResult

TaskStatus = Literal["passed", "failed", "error", "pending"]


@dataclass(slots=True, kw_only=True)
class SuiteMetric(Record):
    """One suite metric, computed from the run and compared with its threshold."""

    name: str
    value: float | None = field(metadata=doc("In [0, 1]; null when the run gave it no data (see detail).", minimum=0, maximum=1))
    threshold: float | None = None
    passed: bool | None = field(
        default=None, metadata=doc("value >= threshold; null without a threshold or a value.", json="pass")
    )
    weight: float = field(default=1.0, metadata=doc("Weight in the suite's overall score.", minimum=0))
    enabled: bool = True
    description: str = ""
    detail: str = field(default="", metadata=doc("How the value was computed, or why there is none."))


@dataclass(slots=True, kw_only=True)
class SuiteTask(Record):
    """One task: its status over all trials and each trial's full result."""

    id: str
    name: str
    file: str = field(metadata=doc("The task file."))
    status: TaskStatus = field(
        metadata=doc("error if a trial errored, else failed if one failed, else pending if one awaits review, else passed.")
    )
    pass_rate: float | None = field(
        metadata=doc("Passed trials / judged trials (pending ones are not judged).", minimum=0, maximum=1)
    )
    score: float | None = field(metadata=doc("Mean weighted score of the trials that have one.", minimum=0, maximum=1))
    weight: float = field(default=1.0, metadata=doc("The task's weight in task_completion.", minimum=0))
    tags: list[str] = field(default_factory=list)
    description: str = ""
    trials: list[CaptureResult] = field(default_factory=list, metadata=doc("One CaptureResult per trial, in trial order."))


@dataclass(slots=True, kw_only=True)
class TriggerCase(Record):
    """One trigger-test prompt and what the agent did with it."""

    prompt: str
    should_trigger: bool
    confidence: Literal["high", "medium"]
    weight: float = field(metadata=doc("1.0 for high confidence, 0.5 for medium."))
    triggered: bool | None = field(metadata=doc("The skill was invoked; null when the run errored."))
    correct: bool = field(metadata=doc("triggered == shouldTrigger; an errored run is never correct."))
    skills: list[str] = field(default_factory=list, metadata=doc("Every skill the agent invoked, in order."))
    reason: str = ""
    error: str | None = None


@dataclass(slots=True, kw_only=True)
class TriggerReport(Record):
    """Confidence-weighted classification of trigger prompts: did the skill activate when it should?"""

    skill: str
    file: str
    prompts: int = field(metadata=doc("Prompts run."))
    errors: int = field(metadata=doc("Prompts whose run errored (each counted as a wrong answer)."))
    true_positives: float = field(metadata=doc("Weighted: should trigger, did."))
    false_negatives: float = field(metadata=doc("Weighted: should trigger, did not (or errored)."))
    true_negatives: float = field(metadata=doc("Weighted: should not trigger, did not."))
    false_positives: float = field(metadata=doc("Weighted: should not trigger, did (or errored)."))
    accuracy: float | None = field(metadata=doc("(TP + TN) / all, weighted.", minimum=0, maximum=1))
    precision: float | None = field(metadata=doc("TP / (TP + FP); null when nothing triggered.", minimum=0, maximum=1))
    recall: float | None = field(metadata=doc("TP / (TP + FN); null without should-trigger prompts.", minimum=0, maximum=1))
    f1: float | None = field(metadata=doc("Harmonic mean of precision and recall.", minimum=0, maximum=1))
    cases: list[TriggerCase] = field(default_factory=list)


@dataclass(slots=True, kw_only=True)
class SuiteSummary(Record):
    """Counts over the tasks that ran, and the overall verdict."""

    status: Literal["passed", "failed"] = field(
        metadata=doc("passed: every task passed or is pending, every threshold met, no trigger prompt errored.")
    )
    tasks: int = field(metadata=doc("Tasks run."))
    passed: int
    failed: int
    errored: int
    pending: int
    trials: int = field(metadata=doc("Trials run, over all tasks."))
    disabled: list[str] = field(default_factory=list, metadata=doc("Ids of tasks with enabled: false."))
    filtered: list[str] = field(default_factory=list, metadata=doc("Ids left out by --task / --tags."))
    not_run: list[str] = field(default_factory=list, metadata=doc("Ids not run because fail_fast stopped the run."))
    score: float | None = field(
        default=None, metadata=doc("Weighted mean of the enabled metrics that have a value.", minimum=0, maximum=1)
    )
    missed: list[str] = field(default_factory=list, metadata=doc("Why the suite failed, one line per reason."))


@dataclass(slots=True, kw_only=True)
class SuiteResult(Record):
    """Everything ``waza run`` found: summary, metrics against thresholds, tasks, trials and trigger tests."""

    suite: str = field(metadata=doc("The suite's name."))
    file: str = field(metadata=doc("The eval.yaml that was run."))
    description: str = ""
    skill: str | None = None
    version: str | None = None
    adapter: str = field(metadata=doc("Adapter that ran the agent (mock, exec, ...)."))
    model: str | None = None
    trials_per_task: int
    started: int = field(metadata=doc("Epoch ms."))
    finished: int = field(metadata=doc("Epoch ms."))
    summary: SuiteSummary
    metrics: list[SuiteMetric] = field(default_factory=list)
    tasks: list[SuiteTask] = field(default_factory=list)
    triggers: TriggerReport | None = None
