"""Records written by the analysis commands (summarize, balance, compare).

They are outputs for people and for other tools, so like the run records they
have generated JSON Schemas and camelCase names; a number that cannot be
computed (no pairs, k larger than the trials) is ``null``, never a made-up 0.
"""

from __future__ import annotations

from typing import Annotated, Literal

from msgspec import Meta, field

from .codec import Record
from .records import GradeStatus, ResultStatus, StepType, Unit

RunKind = Literal["capture", "trials"]
Change = Literal["regression", "improvement", "same", "not-judged"]


# ---------------------------------------------------------------- summarize


class StepView(Record, kw_only=True, omit_defaults=True):
    """One trajectory step, reduced to what a person scans: what, when, how long, a short text."""

    type: StepType
    at: Annotated[int, Meta(description="ms since the prompt started.")]
    turn: int | None = None
    role: Annotated[str | None, Meta(description="agent or user, on message steps.")] = None
    name: Annotated[str | None, Meta(description="Tool name, on tool_call steps.")] = None
    status: Annotated[
        str | None, Meta(description="Tool call status: pending, in_progress, completed or failed, or the step's own string.")
    ] = None
    duration: Annotated[int | None, Meta(description="Tool call duration in ms.")] = None
    text: Annotated[str | None, Meta(description="Message or thought text, a tool's input, or plan entries; shortened.")] = None


class GradeView(Record, kw_only=True, omit_defaults=True):
    """One grader's verdict without its details."""

    name: str
    status: GradeStatus
    passed: Annotated[bool | None, Meta(description="The verdict; null on error or pending.")] = field(default=None, name="pass")
    score: float | None = None
    reasoning: Annotated[str | None, Meta(description="The grader's reasoning, or its error; shortened.")] = None


class ResultSummary(Record, kw_only=True):
    """A compact view of one CaptureResult (or one trial of a TrialResult): `waza summarize` output."""

    id: str
    trial: Annotated[int | None, Meta(description="Trial number, for results of `waza trials`.")] = None
    status: ResultStatus
    passed: Annotated[bool | None, Meta(description="Aggregate verdict.")] = field(default=None, name="pass")
    score: Annotated[float | None, Meta(description="Aggregate score.")] = None
    output: Annotated[str, Meta(description="The agent's final answer, shortened.")]
    duration: Annotated[int | None, Meta(description="Total ms the agent took (timing.total).")] = None
    first_response: Annotated[int | None, Meta(description="ms to the agent's first event.")] = None
    turns: Annotated[int, Meta(description="User turns in the conversation.")]
    tool_calls: Annotated[int, Meta(description="Tool calls made.")]
    failed_tool_calls: Annotated[int, Meta(description="Tool calls whose status is failed.")]
    tools: Annotated[dict[str, int], Meta(description="Calls per tool name.")] = {}
    tool_time: Annotated[int, Meta(description="Sum of tool call durations in ms.")] = 0
    input_tokens: int | None = None
    output_tokens: int | None = None
    steps: Annotated[list[StepView], Meta(description="Every step, in order.")] = []
    grades: list[GradeView] = []
    errors: Annotated[list[str], Meta(description="Agent-side errors.")] = []


# ---------------------------------------------------------------- balance


class CategoryCount(Record, kw_only=True):
    """How many prompts carry one value of the balanced key."""

    value: Annotated[str, Meta(description="The key's value (a list value counts once for each member).")]
    count: int
    share: Annotated[Unit, Meta(description="count / tagged prompts.")]
    under_represented: Annotated[bool, Meta(description="count < threshold x mean count per category.")]


class BalanceReport(Record, kw_only=True):
    """Coverage of a prompts file over one metadata key: `waza balance` output."""

    key: Annotated[str, Meta(description="The metadata key (or top-level field) counted.")]
    prompts: Annotated[int, Meta(description="Prompts read.")]
    tagged: Annotated[int, Meta(description="Prompts that carry the key.")]
    untagged: Annotated[list[str], Meta(description="Ids of prompts without the key.")] = []
    categories: Annotated[list[CategoryCount], Meta(description="Largest first.")] = []
    mean_count: Annotated[float | None, Meta(description="Mean prompts per category; null with none.")] = None
    threshold: Annotated[float, Meta(description="A category under threshold x mean count is under-represented.")]
    under_represented: Annotated[list[str], Meta(description="Values, smallest first.")] = []
    suggestions: Annotated[list[str], Meta(description="What to add or fix, in words.")] = []


# ---------------------------------------------------------------- compare


class RunInfo(Record, kw_only=True):
    """One input of a comparison."""

    label: Annotated[str, Meta(description="Name used in the report (--label, else the file name).")]
    source: Annotated[str, Meta(description="The file read (<stdin> for -).")]
    kind: Annotated[RunKind, Meta(description="capture (CaptureResult lines) or trials (TrialResult lines), auto-detected.")]
    results: Annotated[int, Meta(description="Lines read.")]


class Difference(Record, kw_only=True):
    """candidate - baseline over paired prompts, with a paired percentile bootstrap interval."""

    pairs: Annotated[int, Meta(description="Prompts both runs judged; the means below are over these.")]
    baseline: float
    candidate: float
    difference: Annotated[float, Meta(description="Mean of per-prompt (candidate - baseline).")]
    low: Annotated[float, Meta(description="Lower end of the bootstrap interval of the difference.")]
    high: float
    level: Annotated[float, Meta(description="Confidence level, e.g. 0.95.")]


class McNemar(Record, kw_only=True):
    """McNemar's exact test on paired pass/fail: a two-sided binomial test on the discordant pairs."""

    both_pass: int
    baseline_only: Annotated[int, Meta(description="Passed in the baseline, failed in the candidate (b).")]
    candidate_only: Annotated[int, Meta(description="Failed in the baseline, passed in the candidate (c).")]
    both_fail: int
    p_value: Annotated[
        float, Meta(description="min(1, 2 * P(X <= min(b, c))), X ~ Binomial(b + c, 1/2); 1 with no discordant pairs.")
    ]


class KDifference(Record, kw_only=True):
    """A pass@k or pass^k difference for one k; null where k exceeds a prompt's trials."""

    k: int
    difference: Annotated[Difference | None, Meta(description="Null when no prompt has k defined in both runs.")] = None


class Side(Record, kw_only=True, omit_defaults=True):
    """One run's result for one prompt."""

    status: Annotated[
        str,
        Meta(
            description="The result's status; for trials: passed (all counted trials), failed (none), flaky (some), or error/pending/ungraded (none counted)."
        ),
    ]
    passed: Annotated[bool | None, Meta(description="Pass used for pairing; null when not judged.")] = field(
        default=None, name="pass"
    )
    score: float | None = None
    pass_rate: Annotated[float | None, Meta(description="Trials only: passing trials / judged trials.")] = None
    trials: Annotated[int | None, Meta(description="Trials only: trials run.")] = None


# gc=False: not tracked by the garbage collector (it holds two Sides and scalars, so it cannot be part of
# a cycle); a comparison keeps one per shared prompt, and every full collection would walk them all.
class PromptDelta(Record, kw_only=True, omit_defaults=True, gc=False):
    """How one shared prompt changed from the baseline to the candidate."""

    id: str
    baseline: Side
    candidate: Side
    score_delta: Annotated[float | None, Meta(description="candidate - baseline score.")] = None
    pass_rate_delta: Annotated[float | None, Meta(description="Trials only: candidate - baseline pass rate.")] = None
    change: Annotated[
        Change, Meta(description="regression (passed, now fails), improvement, same, or not-judged (an error/pending side).")
    ]


class PairedComparison(Record, kw_only=True):
    """One candidate run against the baseline (the first run)."""

    baseline: Annotated[str, Meta(description="Label of the baseline run.")]
    candidate: Annotated[str, Meta(description="Label of the candidate run.")]
    shared: Annotated[int, Meta(description="Ids in both runs; only these are compared.")]
    only_baseline: Annotated[list[str], Meta(description="Ids only in the baseline (not compared).")] = []
    only_candidate: Annotated[list[str], Meta(description="Ids only in the candidate (not compared).")] = []
    not_judged: Annotated[
        list[str], Meta(description="Shared ids left out of pass statistics (error, pending or ungraded on a side).")
    ] = []
    pass_rate: Annotated[Difference | None, Meta(description="Pass-rate difference; null without judged pairs.")] = None
    mean_score: Annotated[Difference | None, Meta(description="Mean-score difference over pairs scored on both sides.")] = None
    mcnemar: Annotated[McNemar | None, Meta(description="Capture runs only; null for trials or without judged pairs.")] = None
    pass_at_k: Annotated[list[KDifference], Meta(description="Trials only: unbiased pass@k differences.")] = []
    pass_hat_k: Annotated[list[KDifference], Meta(description="Trials only: pass^k differences.")] = []
    regressions: Annotated[list[str], Meta(description="Ids that got worse (trials: lower pass rate).")] = []
    improvements: Annotated[list[str], Meta(description="Ids that got better.")] = []
    deltas: Annotated[list[PromptDelta], Meta(description="Every shared id, in baseline order.")] = []


class ComparisonReport(Record, kw_only=True):
    """`waza compare` output: every run against the first, paired on shared ids."""

    runs: list[RunInfo]
    errors: Annotated[
        Literal["exclude", "fail"], Meta(description="How errored results count: left out of pass statistics, or as fails.")
    ]
    seed: int
    resamples: int
    comparisons: list[PairedComparison]
