"""Records of repeated runs and of grader calibration.

``waza trials`` writes one :class:`TrialResult` per prompt and a
:class:`TrialsSummary` for the run; ``waza calibrate`` writes a blind labelling
sheet of :class:`CalibrationItem` lines, reads the filled-in sheet back as
:class:`CalibrationLabel` lines and writes a :class:`CalibrationReport`.
Estimates that cannot be computed (pass@k with k larger than the trials that
count, kappa when both raters are constant) are ``null``, never a made-up number.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from .codec import Record, doc
from .records import Exit, Grade, ResultStatus, TrajectoryStep, Usage

ErrorPolicy = Literal["exclude", "fail"]

_BY_K = "Keyed by k (as a string); null where k exceeds the trials that count."


@dataclass(slots=True, kw_only=True)
class TrialEntry(Record):
    """One trial of a prompt: a fresh agent session in a fresh workspace, graded on its own."""

    trial: int = field(metadata=doc("Trial number, from 1.", minimum=1))
    status: ResultStatus = field(metadata=doc("passed, failed, error (agent or grader fault), pending or ungraded."))
    passed: bool | None = field(default=None, metadata=doc("The trial's verdict; null on error or pending.", json="pass"))
    score: float | None = field(default=None, metadata=doc("Aggregate grader score in [0, 1].", minimum=0, maximum=1))
    output: str = field(default="", metadata=doc("Final agent message text."))
    trajectory: list[TrajectoryStep] = field(default_factory=list)
    grades: list[Grade] = field(default_factory=list)
    duration: int | None = field(default=None, metadata=doc("ms the agent took (timing.total of the capture)."))
    exit: Exit | None = None
    usage: Usage | None = None
    tool_errors: bool = field(default=False, metadata=doc("Any tool call failed."))
    error: str | None = field(default=None, metadata=doc("Why the trial errored (agent or grader); null otherwise."))
    stderr: str | None = field(default=None, metadata=doc("The last lines the agent wrote to stderr (a bounded tail)."))


@dataclass(slots=True, kw_only=True)
class TrialResult(Record):
    """One prompt run k times: every trial, the pass rate, and unbiased pass@k / pass^k estimates.

    n is the number of trials that count (passes plus fails, plus errors under
    the ``fail`` policy); with c passes, pass@k = 1 - C(n-c, k)/C(n, k) and
    pass^k = C(c, k)/C(n, k).
    """

    id: str
    input: str | list[str]
    hint: str | None = None
    reference: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)
    k: int = field(metadata=doc("Trials run for this prompt (-k).", minimum=1))
    n: int = field(metadata=doc("Trials that count in the estimators, after the error policy.", minimum=0))
    passes: int = field(metadata=doc("Trials that passed (c in the formulas).", minimum=0))
    errored: int = field(default=0, metadata=doc("Trials with an agent or grader error.", minimum=0))
    pending: int = field(default=0, metadata=doc("Trials awaiting human review; never counted.", minimum=0))
    error_policy: ErrorPolicy = field(
        default="exclude", metadata=doc("exclude: errored trials leave n; fail: they count as fails.")
    )
    pass_rate: float | None = field(default=None, metadata=doc("passes / n; null when n is 0.", minimum=0, maximum=1))
    pass_at_k: dict[str, float | None] = field(
        default_factory=dict, metadata=doc("Probability at least one of k trials passes. " + _BY_K)
    )
    pass_hat_k: dict[str, float | None] = field(
        default_factory=dict, metadata=doc("Probability all of k trials pass (pass^k). " + _BY_K)
    )
    mean_score: float | None = field(
        default=None, metadata=doc("Mean score of the trials n counts (an error counted as a fail scores 0).")
    )
    flaky: bool = field(default=False, metadata=doc("Some counted trials passed and some did not (0 < passes < n)."))
    adapter: str | None = None
    trials: list[TrialEntry] = field(default_factory=list, metadata=doc("Every trial, by trial number."))


@dataclass(slots=True, kw_only=True)
class MeanEstimate(Record):
    """A mean over prompts with its percentile bootstrap interval (prompts resampled, --seed)."""

    estimate: float
    low: float
    high: float
    level: float = field(metadata=doc("Confidence level of [low, high], e.g. 0.95."))
    prompts: int = field(metadata=doc("Prompts with a defined value (the others are left out of the mean)."))


@dataclass(slots=True, kw_only=True)
class TrialsSummary(Record):
    """The run-level view of a trials file: mean pass@k and pass^k over prompts, flaky prompts."""

    prompts: int
    k: int = field(metadata=doc("Trials per prompt."))
    trials: int = field(metadata=doc("Trials in the file (all prompts)."))
    passed: int
    failed: int
    errored: int
    pending: int = 0
    error_policy: ErrorPolicy
    k_values: list[int]
    seed: int
    pass_rate: MeanEstimate | None = field(default=None, metadata=doc("Mean per-prompt pass rate."))
    mean_score: MeanEstimate | None = field(default=None, metadata=doc("Mean per-prompt mean score."))
    pass_at_k: dict[str, MeanEstimate | None] = field(default_factory=dict, metadata=doc("Mean pass@k. " + _BY_K))
    pass_hat_k: dict[str, MeanEstimate | None] = field(default_factory=dict, metadata=doc("Mean pass^k. " + _BY_K))
    flaky: list[str] = field(default_factory=list, metadata=doc("Ids of prompts whose counted trials both passed and failed."))
    no_verdict: list[str] = field(
        default_factory=list, metadata=doc("Ids of prompts with no trial that counts (n = 0), left out of every mean.")
    )


@dataclass(slots=True, kw_only=True)
class CalibrationItem(Record):
    """One line of a blind labelling sheet: what the grader saw, without what it decided.

    Fill in ``pass`` (true when the output is acceptable) and hand the file back
    with ``waza calibrate RESULTS --labels SHEET``.
    """

    sample: int = field(metadata=doc("Position in the sheet, from 1 (shuffled across strata).", minimum=1))
    id: str
    trial: int | None = field(default=None, metadata=doc("Trial number for results of waza trials."))
    input: str | list[str]
    output: str
    hint: str | None = None
    reference: str | None = None
    trajectory: list[str] = field(default_factory=list, metadata=doc("A readable excerpt of the trajectory."))
    passed: bool | None = field(default=None, metadata=doc("Your label: true (acceptable) or false.", json="pass"))
    notes: str = ""


@dataclass(slots=True, kw_only=True)
class CalibrationLabel(Record):
    """A human label: a filled-in sheet line (the sheet's other fields are accepted and not used)."""

    id: str
    trial: int | None = None
    passed: bool | None = field(metadata=doc("The label; null means not labelled yet (skipped).", json="pass"))
    notes: str = ""
    sample: int | None = None
    input: Any = None
    output: Any = None
    hint: Any = None
    reference: Any = None
    trajectory: Any = None


@dataclass(slots=True, kw_only=True)
class Confusion(Record):
    """2x2 table of a grader's verdicts against a reference (the human label, or the first grader)."""

    true_pass: int = field(metadata=doc("Both pass."))
    false_pass: int = field(metadata=doc("Grader passes, reference fails."))
    false_fail: int = field(metadata=doc("Grader fails, reference passes."))
    true_fail: int = field(metadata=doc("Both fail."))


@dataclass(slots=True, kw_only=True)
class Disagreement(Record):
    """An item where the grader and the reference disagree."""

    id: str
    trial: int | None = None
    reference: bool = field(metadata=doc("The reference verdict (label or first grader)."))
    verdict: bool = field(metadata=doc("The grader's verdict."))
    reasoning: str = field(default="", metadata=doc("The grader's reasoning."))
    notes: str = field(default="", metadata=doc("The labeller's notes."))


@dataclass(slots=True, kw_only=True)
class Agreement(Record):
    """How well one grader agrees with a reference on the same items."""

    grader: str = field(metadata=doc("The grader checked (a grader name, or 'verdict' for the aggregate)."))
    reference: str = field(metadata=doc("What it is checked against: 'human' or a grader name."))
    items: int
    agreement: float | None = field(default=None, metadata=doc("Share of items with the same verdict."))
    kappa: float | None = field(default=None, metadata=doc("Cohen's kappa; null when undefined (both raters constant)."))
    confusion: Confusion
    false_pass_rate: float | None = field(
        default=None, metadata=doc("false_pass / (false_pass + true_fail): bad outputs let through.")
    )
    false_fail_rate: float | None = field(
        default=None, metadata=doc("false_fail / (false_fail + true_pass): good outputs rejected.")
    )
    disagreements: list[Disagreement] = field(default_factory=list)


@dataclass(slots=True, kw_only=True)
class CalibrationReport(Record):
    """What ``waza calibrate --labels`` / ``--grader`` found; ``gate`` is set by --min-kappa."""

    results: str = field(metadata=doc("The results file calibrated."))
    items: int = field(metadata=doc("Items compared."))
    unlabelled: int = field(default=0, metadata=doc("Label lines with pass null, left out."))
    unmatched: list[str] = field(default_factory=list, metadata=doc("Labels whose id/trial is not in the results."))
    skipped: int = field(default=0, metadata=doc("Items without a verdict to compare (error, pending, ungraded)."))
    comparisons: list[Agreement] = field(default_factory=list)
    min_kappa: float | None = None
    gate: Literal["passed", "failed"] | None = field(
        default=None, metadata=doc("The --min-kappa verdict on the first comparison.")
    )
