"""From graded trials to a TrialResult per prompt, and from TrialResults to the run summary.

Which trials count: passes and fails always; errors (agent or grader broke,
so nothing was learnt about the agent) only under ``--errors fail``, where they
count as fails; pending trials (awaiting human review) never. n is the number
that count and c the passes among them.

The summary keeps a handful of floats per prompt (not the trials), so it can
cover a run of any size, resumed or not.
"""

from __future__ import annotations

from collections.abc import Sequence

import msgspec

from waza.protocol.records import CaptureResult, PromptCase
from waza.protocol.trial_records import ErrorPolicy, MeanEstimate, TrialEntry, TrialResult, TrialsSummary
from waza.runner.analysis.error_digest import error_reasons
from waza.runner.analysis.passk import by_k
from waza.runner.analysis.stats import bootstrap_ci, mean
from waza.runner.wording import count

#: Ids listed on stderr before "and N more" (the --summary file has them all).
SHOWN_IDS = 20


def trial_entry(result: CaptureResult) -> TrialEntry:
    """The per-trial view of a graded capture (the prompt's own fields live once on the TrialResult)."""
    return TrialEntry(
        trial=result.trial or 1,
        status=result.status,
        passed=result.score.passed if result.score else None,
        score=result.score.score if result.score else None,
        output=result.output,
        trajectory=result.trajectory,
        grades=result.grades,
        duration=result.timing.total if result.timing else None,
        exit=result.exit,
        usage=result.usage,
        tool_errors=result.tool_errors,
        error=_error_text(result),
        stderr=result.stderr,
    )


def _error_text(result: CaptureResult) -> str | None:
    return "; ".join(error_reasons(result)) if result.status == "error" else None


def trial_result(
    case: PromptCase, entries: Sequence[TrialEntry], *, k: int, k_values: Sequence[int], policy: ErrorPolicy, adapter: str | None
) -> TrialResult:
    entries = sorted(entries, key=lambda e: e.trial)
    passes = sum(e.status == "passed" for e in entries)
    failed = sum(e.status == "failed" for e in entries)
    errored = sum(e.status == "error" for e in entries)
    pending = sum(e.status == "pending" for e in entries)
    n = passes + failed + (errored if policy == "fail" else 0)
    at_k, hat_k = by_k(n, passes, k_values)
    # The mean score is over the trials n counts: an error left out of n leaves the mean too, and one
    # counted as a fail scores 0 (whatever a grader made of the broken run).
    scores: list[float] = []
    for e in entries:
        if e.status in ("passed", "failed") and e.score is not None:
            scores.append(e.score)
        elif e.status == "error" and policy == "fail":
            scores.append(0.0)
    return TrialResult(
        id=case.id,
        input=case.input,
        hint=case.hint,
        reference=case.reference,
        metadata=case.metadata,
        k=k,
        n=n,
        passes=passes,
        errored=errored,
        pending=pending,
        error_policy=policy,
        pass_rate=passes / n if n else None,
        pass_at_k=at_k,
        pass_hat_k=hat_k,
        mean_score=mean(scores) if scores else None,
        flaky=0 < passes < n,
        adapter=adapter,
        trials=list(entries),
    )


def _estimate(values: list[float], seed: int, level: float) -> MeanEstimate | None:
    interval = bootstrap_ci(values, seed=seed, level=level)
    if interval is None:
        return None
    return MeanEstimate(
        estimate=interval.estimate, low=interval.low, high=interval.high, level=interval.level, prompts=len(values)
    )


class SummaryBuilder(msgspec.Struct):
    """Collects each prompt's estimates as its TrialResult is written; ``build`` adds the intervals."""

    k: int
    k_values: list[int]
    policy: ErrorPolicy
    prompts: int = 0
    trials: int = 0
    passed: int = 0
    failed: int = 0
    errored: int = 0
    pending: int = 0
    pass_rates: list[float] = msgspec.field(default_factory=list)
    scores: list[float] = msgspec.field(default_factory=list)
    at_k: dict[str, list[float]] = msgspec.field(default_factory=dict)
    hat_k: dict[str, list[float]] = msgspec.field(default_factory=dict)
    flaky: list[str] = msgspec.field(default_factory=list)
    no_verdict: list[str] = msgspec.field(default_factory=list)

    def add(self, result: TrialResult) -> None:
        self.prompts += 1
        self.trials += len(result.trials)
        self.passed += result.passes
        self.failed += sum(e.status == "failed" for e in result.trials)
        self.errored += result.errored
        self.pending += result.pending
        if result.pass_rate is not None:
            self.pass_rates.append(result.pass_rate)
        else:
            self.no_verdict.append(result.id)
        if result.mean_score is not None:
            self.scores.append(result.mean_score)
        for key, value in result.pass_at_k.items():
            if value is not None:
                self.at_k.setdefault(key, []).append(value)
        for key, value in result.pass_hat_k.items():
            if value is not None:
                self.hat_k.setdefault(key, []).append(value)
        if result.flaky:
            self.flaky.append(result.id)

    def build(self, *, seed: int, level: float = 0.95) -> TrialsSummary:
        keys = [str(k) for k in self.k_values]
        return TrialsSummary(
            prompts=self.prompts,
            k=self.k,
            trials=self.trials,
            passed=self.passed,
            failed=self.failed,
            errored=self.errored,
            pending=self.pending,
            error_policy=self.policy,
            k_values=self.k_values,
            seed=seed,
            pass_rate=_estimate(self.pass_rates, seed, level),
            mean_score=_estimate(self.scores, seed, level),
            pass_at_k={key: _estimate(self.at_k.get(key, []), seed, level) for key in keys},
            pass_hat_k={key: _estimate(self.hat_k.get(key, []), seed, level) for key in keys},
            flaky=self.flaky,
            no_verdict=self.no_verdict,
        )


def describe(summary: TrialsSummary) -> list[str]:
    """The summary as a few lines for stderr."""
    policy = "errors excluded from n" if summary.error_policy == "exclude" else "errors counted as fails"
    lines = [
        f"{count(summary.prompts, 'prompt')} x {count(summary.k, 'trial')}: {summary.passed} passed, {summary.failed} failed, "
        f"{summary.errored} errored" + (f", {summary.pending} pending" if summary.pending else "") + f" ({policy})"
    ]

    def shown(est: MeanEstimate | None) -> str:
        if est is None:
            return "undefined"
        partial = f" ({est.prompts} of {count(summary.prompts, 'prompt')})" if est.prompts < summary.prompts else ""
        return f"{est.estimate:.3f} [{est.low:.3f}, {est.high:.3f}]{partial}"

    def listed(ids: list[str]) -> str:
        more = len(ids) - SHOWN_IDS
        return ", ".join(ids[:SHOWN_IDS]) + (f" and {more} more" if more > 0 else "")

    if summary.pass_rate is not None:
        level = f"{summary.pass_rate.level:.0%}"
        lines.append(f"pass rate {shown(summary.pass_rate)} ({level} bootstrap CI over prompts, seed {summary.seed})")
    for k in summary.k_values:
        key = str(k)
        lines.append(f"pass@{k} {shown(summary.pass_at_k.get(key))}   pass^{k} {shown(summary.pass_hat_k.get(key))}")
    if summary.flaky:
        lines.append(f"flaky ({len(summary.flaky)}): {listed(summary.flaky)}")
    if summary.no_verdict:
        lines.append(f"no counted trial ({len(summary.no_verdict)}): {listed(summary.no_verdict)}")
    return lines
