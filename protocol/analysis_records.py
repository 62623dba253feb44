"""Records written by the analysis commands (summarize, balance, compare).

They are outputs for people and for other tools, so like the run records they
have generated JSON Schemas and camelCase names; a number that cannot be
computed (no pairs, k larger than the trials) is ``null``, never a made-up 0.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar, Literal

from .codec import Record, doc
from .records import GradeStatus, ResultStatus, StepType, ToolStatus

RunKind = Literal["capture", "trials"]
Change = Literal["regression", "improvement", "same", "not-judged"]


# ---------------------------------------------------------------- summarize


@dataclass(slots=True, kw_only=True)
class StepView(Record):
    """One trajectory step, reduced to what a person scans: what, when, how long, a short text."""

    _omit_none: ClassVar[bool] = True

    type: StepType
    at: int = field(metadata=doc("ms since the prompt started."))
    turn: int | None = None
    role: str | None = field(default=None, metadata=doc("agent or user, on message steps."))
    name: str | None = field(default=None, metadata=doc("Tool name, on tool_call steps."))
    status: ToolStatus | None = field(default=None, metadata=doc("Tool call status."))
    duration: int | None = field(default=None, metadata=doc("Tool call duration in ms."))
    text: str | None = field(default=None, metadata=doc("Message or thought text, a tool's input, or plan entries; shortened."))


@dataclass(slots=True, kw_only=True)
class GradeView(Record):
    """One grader's verdict without its details."""

    _omit_none: ClassVar[bool] = True

    name: str
    status: GradeStatus
    passed: bool | None = field(default=None, metadata=doc("The verdict; null on error or pending.", json="pass"))
    score: float | None = None
    reasoning: str | None = field(default=None, metadata=doc("The grader's reasoning, or its error; shortened."))


@dataclass(slots=True, kw_only=True)
class ResultSummary(Record):
    """A compact view of one CaptureResult (or one trial of a TrialResult): `waza summarize` output."""

    id: str
    trial: int | None = field(default=None, metadata=doc("Trial number, for results of `waza trials`."))
    status: ResultStatus
    passed: bool | None = field(default=None, metadata=doc("Aggregate verdict.", json="pass"))
    score: float | None = field(default=None, metadata=doc("Aggregate score."))
    output: str = field(metadata=doc("The agent's final answer, shortened."))
    duration: int | None = field(default=None, metadata=doc("Total ms the agent took (timing.total)."))
    first_response: int | None = field(default=None, metadata=doc("ms to the agent's first event."))
    turns: int = field(metadata=doc("User turns in the conversation."))
    tool_calls: int = field(metadata=doc("Tool calls made."))
    failed_tool_calls: int = field(metadata=doc("Tool calls whose status is failed."))
    tools: dict[str, int] = field(default_factory=dict, metadata=doc("Calls per tool name."))
    tool_time: int = field(default=0, metadata=doc("Sum of tool call durations in ms."))
    input_tokens: int | None = None
    output_tokens: int | None = None
    steps: list[StepView] = field(default_factory=list, metadata=doc("Every step, in order."))
    grades: list[GradeView] = field(default_factory=list)
    errors: list[str] = field(default_factory=list, metadata=doc("Agent-side errors."))


# ---------------------------------------------------------------- balance


@dataclass(slots=True, kw_only=True)
class CategoryCount(Record):
    """How many prompts carry one value of the balanced key."""

    value: str = field(metadata=doc("The key's value (a list value counts once for each member)."))
    count: int
    share: float = field(metadata=doc("count / tagged prompts.", minimum=0, maximum=1))
    under_represented: bool = field(metadata=doc("count < threshold x mean count per category."))


@dataclass(slots=True, kw_only=True)
class BalanceReport(Record):
    """Coverage of a prompts file over one metadata key: `waza balance` output."""

    key: str = field(metadata=doc("The metadata key (or top-level field) counted."))
    prompts: int = field(metadata=doc("Prompts read."))
    tagged: int = field(metadata=doc("Prompts that carry the key."))
    untagged: list[str] = field(default_factory=list, metadata=doc("Ids of prompts without the key."))
    categories: list[CategoryCount] = field(default_factory=list, metadata=doc("Largest first."))
    mean_count: float | None = field(default=None, metadata=doc("Mean prompts per category; null with none."))
    threshold: float = field(metadata=doc("A category under threshold x mean count is under-represented."))
    under_represented: list[str] = field(default_factory=list, metadata=doc("Values, smallest first."))
    suggestions: list[str] = field(default_factory=list, metadata=doc("What to add or fix, in words."))


# ---------------------------------------------------------------- compare


@dataclass(slots=True, kw_only=True)
class RunInfo(Record):
    """One input of a comparison."""

    label: str = field(metadata=doc("Name used in the report (--label, else the file name)."))
    source: str = field(metadata=doc("The file read (<stdin> for -)."))
    kind: RunKind = field(metadata=doc("capture (CaptureResult lines) or trials (TrialResult lines), auto-detected."))
    results: int = field(metadata=doc("Lines read."))


@dataclass(slots=True, kw_only=True)
class Difference(Record):
    """candidate - baseline over paired prompts, with a paired percentile bootstrap interval."""

    pairs: int = field(metadata=doc("Prompts both runs judged; the means below are over these."))
    baseline: float
    candidate: float
    difference: float = field(metadata=doc("Mean of per-prompt (candidate - baseline)."))
    low: float = field(metadata=doc("Lower end of the bootstrap interval of the difference."))
    high: float
    level: float = field(metadata=doc("Confidence level, e.g. 0.95."))


@dataclass(slots=True, kw_only=True)
class McNemar(Record):
    """McNemar's exact test on paired pass/fail: a two-sided binomial test on the discordant pairs."""

    both_pass: int
    baseline_only: int = field(metadata=doc("Passed in the baseline, failed in the candidate (b)."))
    candidate_only: int = field(metadata=doc("Failed in the baseline, passed in the candidate (c)."))
    both_fail: int
    p_value: float = field(metadata=doc("min(1, 2 * P(X <= min(b, c))), X ~ Binomial(b + c, 1/2); 1 with no discordant pairs."))


@dataclass(slots=True, kw_only=True)
class KDifference(Record):
    """A pass@k or pass^k difference for one k; null where k exceeds a prompt's trials."""

    k: int
    difference: Difference | None = field(default=None, metadata=doc("Null when no prompt has k defined in both runs."))


@dataclass(slots=True, kw_only=True)
class Side(Record):
    """One run's result for one prompt."""

    _omit_none: ClassVar[bool] = True

    status: str = field(
        metadata=doc(
            "The result's status; for trials: passed (all counted trials), failed (none), flaky (some), or error/pending/ungraded (none counted)."
        )
    )
    passed: bool | None = field(default=None, metadata=doc("Pass used for pairing; null when not judged.", json="pass"))
    score: float | None = None
    pass_rate: float | None = field(default=None, metadata=doc("Trials only: passing trials / judged trials."))
    trials: int | None = field(default=None, metadata=doc("Trials only: trials run."))


@dataclass(slots=True, kw_only=True)
class PromptDelta(Record):
    """How one shared prompt changed from the baseline to the candidate."""

    _omit_none: ClassVar[bool] = True

    id: str
    baseline: Side
    candidate: Side
    score_delta: float | None = field(default=None, metadata=doc("candidate - baseline score."))
    pass_rate_delta: float | None = field(default=None, metadata=doc("Trials only: candidate - baseline pass rate."))
    change: Change = field(
        metadata=doc("regression (passed, now fails), improvement, same, or not-judged (an error/pending side).")
    )


@dataclass(slots=True, kw_only=True)
class PairedComparison(Record):
    """One candidate run against the baseline (the first run)."""

    baseline: str = field(metadata=doc("Label of the baseline run."))
    candidate: str = field(metadata=doc("Label of the candidate run."))
    shared: int = field(metadata=doc("Ids in both runs; only these are compared."))
    only_baseline: list[str] = field(default_factory=list, metadata=doc("Ids only in the baseline (not compared)."))
    only_candidate: list[str] = field(default_factory=list, metadata=doc("Ids only in the candidate (not compared)."))
    not_judged: list[str] = field(
        default_factory=list, metadata=doc("Shared ids left out of pass statistics (error, pending or ungraded on a side).")
    )
    pass_rate: Difference | None = field(default=None, metadata=doc("Pass-rate difference; null without judged pairs."))
    mean_score: Difference | None = field(default=None, metadata=doc("Mean-score difference over pairs scored on both sides."))
    mcnemar: McNemar | None = field(default=None, metadata=doc("Capture runs only; null for trials or without judged pairs."))
    pass_at_k: list[KDifference] = field(default_factory=list, metadata=doc("Trials only: unbiased pass@k differences."))
    pass_hat_k: list[KDifference] = field(default_factory=list, metadata=doc("Trials only: pass^k differences."))
    regressions: list[str] = field(default_factory=list, metadata=doc("Ids that got worse (trials: lower pass rate)."))
    improvements: list[str] = field(default_factory=list, metadata=doc("Ids that got better."))
    deltas: list[PromptDelta] = field(default_factory=list, metadata=doc("Every shared id, in baseline order."))


@dataclass(slots=True, kw_only=True)
class ComparisonReport(Record):
    """`waza compare` output: every run against the first, paired on shared ids."""

    runs: list[RunInfo]
    errors: Literal["exclude", "fail"] = field(
        metadata=doc("How errored results count: left out of pass statistics, or as fails.")
    )
    seed: int
    resamples: int
    comparisons: list[PairedComparison]
