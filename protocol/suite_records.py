"""The result document of ``waza run eval.yaml``: one JSON object for the whole suite.

Per-trial detail is the CaptureResult record itself (grades, weighted score,
trajectory as the transcript), so a trial in the document and a line of the
JSONL stream are the same thing and the same tools read both.
"""

from __future__ import annotations

from typing import Annotated, Literal

from msgspec import Meta, field

from .codec import Record
from .records import CaptureResult, Unit

TaskStatus = Literal["passed", "failed", "error", "pending"]


class SuiteMetric(Record, kw_only=True):
    """One suite metric, computed from the run and compared with its threshold."""

    name: str
    value: Annotated[Unit | None, Meta(description="In [0, 1]; null when the run gave it no data (see detail).")]
    threshold: float | None = None
    passed: Annotated[bool | None, Meta(description="value >= threshold; null without a threshold or a value.")] = field(
        default=None, name="pass"
    )
    weight: Annotated[float, Meta(ge=0, description="Weight in the suite's overall score.")] = 1.0
    enabled: bool = True
    description: str = ""
    detail: Annotated[str, Meta(description="How the value was computed, or why there is none.")] = ""


class SuiteTask(Record, kw_only=True):
    """One task: its status over all trials and each trial's full result."""

    id: str
    name: str
    file: Annotated[str, Meta(description="The task file.")]
    status: Annotated[
        TaskStatus,
        Meta(description="error if a trial errored, else failed if one failed, else pending if one awaits review, else passed."),
    ]
    pass_rate: Annotated[Unit | None, Meta(description="Passed trials / judged trials (pending ones are not judged).")]
    score: Annotated[Unit | None, Meta(description="Mean weighted score of the trials that have one.")]
    weight: Annotated[float, Meta(ge=0, description="The task's weight in task_completion.")] = 1.0
    golden: Annotated[bool, Meta(description="The task file marks it golden: waza gate --golden-must-pass needs it passed.")] = (
        False
    )
    tags: list[str] = []
    description: str = ""
    trials: Annotated[list[CaptureResult], Meta(description="One CaptureResult per trial, in trial order.")] = []


class TriggerCase(Record, kw_only=True):
    """One trigger-test prompt and what the agent did with it."""

    prompt: str
    should_trigger: bool
    confidence: Literal["high", "medium"]
    weight: Annotated[float, Meta(description="1.0 for high confidence, 0.5 for medium.")]
    triggered: Annotated[bool | None, Meta(description="The skill was invoked; null when the run errored.")]
    correct: Annotated[bool, Meta(description="triggered == shouldTrigger; an errored run is never correct.")]
    skills: Annotated[list[str], Meta(description="Every skill the agent invoked, in order.")] = []
    reason: str = ""
    error: str | None = None
    runs: Annotated[int, Meta(ge=1, description="Times the prompt ran (the suite's trials).")] = 1
    trigger_rate: Annotated[
        Unit | None, Meta(description="Share of the runs that did not error in which the skill was invoked.")
    ] = None


class TriggerReport(Record, kw_only=True):
    """Confidence-weighted classification of trigger prompts: did the skill activate when it should?"""

    skill: str
    file: str
    prompts: Annotated[int, Meta(description="Prompts run.")]
    errors: Annotated[int, Meta(description="Prompts whose run errored (each counted as a wrong answer).")]
    true_positives: Annotated[float, Meta(description="Weighted: should trigger, did.")]
    false_negatives: Annotated[float, Meta(description="Weighted: should trigger, did not (or errored).")]
    true_negatives: Annotated[float, Meta(description="Weighted: should not trigger, did not.")]
    false_positives: Annotated[float, Meta(description="Weighted: should not trigger, did (or errored).")]
    accuracy: Annotated[Unit | None, Meta(description="(TP + TN) / all, weighted.")]
    precision: Annotated[Unit | None, Meta(description="TP / (TP + FP); null when nothing triggered.")]
    recall: Annotated[Unit | None, Meta(description="TP / (TP + FN); null without should-trigger prompts.")]
    f1: Annotated[Unit | None, Meta(description="Harmonic mean of precision and recall.")]
    cases: list[TriggerCase] = []


class SuiteSummary(Record, kw_only=True):
    """Counts over the tasks that ran, and the overall verdict."""

    status: Annotated[
        Literal["passed", "failed"],
        Meta(description="passed: every task passed or is pending, every threshold met, no trigger prompt errored."),
    ]
    tasks: Annotated[int, Meta(description="Tasks run.")]
    passed: int
    failed: int
    errored: int
    pending: int
    trials: Annotated[int, Meta(description="Trials run, over all tasks.")]
    disabled: Annotated[list[str], Meta(description="Ids of tasks with enabled: false.")] = []
    filtered: Annotated[list[str], Meta(description="Ids left out by --task / --tags.")] = []
    not_run: Annotated[list[str], Meta(description="Ids not run because fail_fast stopped the run.")] = []
    score: Annotated[Unit | None, Meta(description="Weighted mean of the enabled metrics that have a value.")] = None
    missed: Annotated[list[str], Meta(description="Why the suite failed, one line per reason.")] = []


class SuiteResult(Record, kw_only=True):
    """Everything ``waza run`` found: summary, metrics against thresholds, tasks, trials and trigger tests."""

    suite: Annotated[str, Meta(description="The suite's name.")]
    file: Annotated[str, Meta(description="The eval.yaml that was run.")]
    description: str = ""
    skill: str | None = None
    version: str | None = None
    adapter: Annotated[str, Meta(description="Adapter that ran the agent (mock, exec, ...).")]
    model: str | None = None
    trials_per_task: int
    started: Annotated[int, Meta(description="Epoch ms.")]
    finished: Annotated[int, Meta(description="Epoch ms.")]
    summary: SuiteSummary
    metrics: list[SuiteMetric] = []
    tasks: list[SuiteTask] = []
    triggers: TriggerReport | None = None
