"""Records of repeated runs and of grader calibration.

``waza trials`` writes one :class:`TrialResult` per prompt and a
:class:`TrialsSummary` for the run; ``waza calibrate`` writes a blind labelling
sheet of :class:`CalibrationItem` lines, reads the filled-in sheet back as
:class:`CalibrationLabel` lines and writes a :class:`CalibrationReport`.
Estimates that cannot be computed (pass@k with k larger than the trials that
count, kappa when both raters are constant) are ``null``, never a made-up number.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from msgspec import Meta, field

from .codec import Record
from .records import Exit, Grade, ResultStatus, TrajectoryStep, Unit, Usage

ErrorPolicy = Literal["exclude", "fail"]

_BY_K = "Keyed by k (as a string); null where k exceeds the trials that count."


class TrialEntry(Record, kw_only=True):
    """One trial of a prompt: a fresh agent session in a fresh workspace, graded on its own."""

    trial: Annotated[int, Meta(ge=1, description="Trial number, from 1.")]
    status: Annotated[ResultStatus, Meta(description="passed, failed, error (agent or grader fault), pending or ungraded.")]
    passed: Annotated[bool | None, Meta(description="The trial's verdict; null on error or pending.")] = field(
        default=None, name="pass"
    )
    score: Annotated[Unit | None, Meta(description="Aggregate grader score in [0, 1].")] = None
    output: Annotated[str, Meta(description="Final agent message text.")] = ""
    trajectory: list[TrajectoryStep] = []
    grades: list[Grade] = []
    duration: Annotated[int | None, Meta(description="ms the agent took (timing.total of the capture).")] = None
    exit: Exit | None = None
    usage: Usage | None = None
    tool_errors: Annotated[bool, Meta(description="Any tool call failed.")] = False
    error: Annotated[str | None, Meta(description="Why the trial errored (agent or grader); null otherwise.")] = None
    stderr: Annotated[str | None, Meta(description="The last lines the agent wrote to stderr (a bounded tail).")] = None


class TrialResult(Record, kw_only=True):
    """One prompt run k times: every trial, the pass rate, and unbiased pass@k / pass^k estimates.

    n is the number of trials that count (passes plus fails, plus errors under
    the ``fail`` policy); with c passes, pass@k = 1 - C(n-c, k)/C(n, k) and
    pass^k = C(c, k)/C(n, k).
    """

    id: str
    input: str | list[str]
    hint: str | None = None
    reference: str | None = None
    metadata: dict[str, Any] = {}
    k: Annotated[int, Meta(ge=1, description="Trials run for this prompt (-k).")]
    n: Annotated[int, Meta(ge=0, description="Trials that count in the estimators, after the error policy.")]
    passes: Annotated[int, Meta(ge=0, description="Trials that passed (c in the formulas).")]
    errored: Annotated[int, Meta(ge=0, description="Trials with an agent or grader error.")] = 0
    pending: Annotated[int, Meta(ge=0, description="Trials awaiting human review; never counted.")] = 0
    error_policy: Annotated[ErrorPolicy, Meta(description="exclude: errored trials leave n; fail: they count as fails.")] = (
        "exclude"
    )
    pass_rate: Annotated[Unit | None, Meta(description="passes / n; null when n is 0.")] = None
    pass_at_k: Annotated[dict[str, float | None], Meta(description="Probability at least one of k trials passes. " + _BY_K)] = {}
    pass_hat_k: Annotated[dict[str, float | None], Meta(description="Probability all of k trials pass (pass^k). " + _BY_K)] = {}
    mean_score: Annotated[
        float | None, Meta(description="Mean score of the trials n counts (an error counted as a fail scores 0).")
    ] = None
    flaky: Annotated[bool, Meta(description="Some counted trials passed and some did not (0 < passes < n).")] = False
    adapter: str | None = None
    trials: Annotated[list[TrialEntry], Meta(description="Every trial, by trial number.")] = []


class MeanEstimate(Record, kw_only=True):
    """A mean over prompts with its percentile bootstrap interval (prompts resampled, --seed)."""

    estimate: float
    low: float
    high: float
    level: Annotated[float, Meta(description="Confidence level of [low, high], e.g. 0.95.")]
    prompts: Annotated[int, Meta(description="Prompts with a defined value (the others are left out of the mean).")]


class TrialsSummary(Record, kw_only=True):
    """The run-level view of a trials file: mean pass@k and pass^k over prompts, flaky prompts."""

    prompts: int
    k: Annotated[int, Meta(description="Trials per prompt.")]
    trials: Annotated[int, Meta(description="Trials in the file (all prompts).")]
    passed: int
    failed: int
    errored: int
    pending: int = 0
    error_policy: ErrorPolicy
    k_values: list[int]
    seed: int
    pass_rate: Annotated[MeanEstimate | None, Meta(description="Mean per-prompt pass rate.")] = None
    mean_score: Annotated[MeanEstimate | None, Meta(description="Mean per-prompt mean score.")] = None
    pass_at_k: Annotated[dict[str, MeanEstimate | None], Meta(description="Mean pass@k. " + _BY_K)] = {}
    pass_hat_k: Annotated[dict[str, MeanEstimate | None], Meta(description="Mean pass^k. " + _BY_K)] = {}
    flaky: Annotated[list[str], Meta(description="Ids of prompts whose counted trials both passed and failed.")] = []
    no_verdict: Annotated[
        list[str], Meta(description="Ids of prompts with no trial that counts (n = 0), left out of every mean.")
    ] = []


class CalibrationItem(Record, kw_only=True):
    """One line of a blind labelling sheet: what the grader saw, without what it decided.

    Fill in ``pass`` (true when the output is acceptable) and hand the file back
    with ``waza calibrate RESULTS --labels SHEET``.
    """

    sample: Annotated[int, Meta(ge=1, description="Position in the sheet, from 1 (shuffled across strata).")]
    id: str
    trial: Annotated[int | None, Meta(description="Trial number for results of waza trials.")] = None
    input: str | list[str]
    output: str
    hint: str | None = None
    reference: str | None = None
    trajectory: Annotated[list[str], Meta(description="A readable excerpt of the trajectory.")] = []
    passed: Annotated[bool | None, Meta(description="Your label: true (acceptable) or false.")] = field(default=None, name="pass")
    notes: str = ""


class CalibrationLabel(Record, kw_only=True):
    """A human label: a filled-in sheet line (the sheet's other fields are accepted and not used)."""

    id: str
    trial: int | None = None
    passed: Annotated[bool | None, Meta(description="The label; null means not labelled yet (skipped).")] = field(name="pass")
    notes: str = ""
    sample: int | None = None
    input: Any = None
    output: Any = None
    hint: Any = None
    reference: Any = None
    trajectory: Any = None


class Confusion(Record, kw_only=True):
    """2x2 table of a grader's verdicts against a reference (the human label, or the first grader)."""

    true_pass: Annotated[int, Meta(description="Both pass.")]
    false_pass: Annotated[int, Meta(description="Grader passes, reference fails.")]
    false_fail: Annotated[int, Meta(description="Grader fails, reference passes.")]
    true_fail: Annotated[int, Meta(description="Both fail.")]


class Disagreement(Record, kw_only=True):
    """An item where the grader and the reference disagree."""

    id: str
    trial: int | None = None
    reference: Annotated[bool, Meta(description="The reference verdict (label or first grader).")]
    verdict: Annotated[bool, Meta(description="The grader's verdict.")]
    reasoning: Annotated[str, Meta(description="The grader's reasoning.")] = ""
    notes: Annotated[str, Meta(description="The labeller's notes.")] = ""


class Agreement(Record, kw_only=True):
    """How well one grader agrees with a reference on the same items."""

    grader: Annotated[str, Meta(description="The grader checked (a grader name, or 'verdict' for the aggregate).")]
    reference: Annotated[str, Meta(description="What it is checked against: 'human' or a grader name.")]
    items: int
    agreement: Annotated[float | None, Meta(description="Share of items with the same verdict.")] = None
    kappa: Annotated[float | None, Meta(description="Cohen's kappa; null when undefined (both raters constant).")] = None
    confusion: Confusion
    false_pass_rate: Annotated[
        float | None, Meta(description="false_pass / (false_pass + true_fail): bad outputs let through.")
    ] = None
    false_fail_rate: Annotated[
        float | None, Meta(description="false_fail / (false_fail + true_pass): good outputs rejected.")
    ] = None
    disagreements: list[Disagreement] = []


class CalibrationReport(Record, kw_only=True):
    """What ``waza calibrate --labels`` / ``--grader`` found; ``gate`` is set by --min-kappa."""

    results: Annotated[str, Meta(description="The results file calibrated.")]
    items: Annotated[int, Meta(description="Items compared.")]
    unlabelled: Annotated[int, Meta(description="Label lines with pass null, left out.")] = 0
    unmatched: Annotated[list[str], Meta(description="Labels whose id/trial is not in the results.")] = []
    skipped: Annotated[int, Meta(description="Items without a verdict to compare (error, pending, ungraded).")] = 0
    comparisons: list[Agreement] = []
    min_kappa: float | None = None
    gate: Annotated[Literal["passed", "failed"] | None, Meta(description="The --min-kappa verdict on the first comparison.")] = (
        None
    )
