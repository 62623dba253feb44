"""What the viewer keeps of each result: a few numbers per line, and running totals per file.

A results file can hold a million results of megabytes each, so the index
never keeps records: per line it keeps the id, status, score, duration,
tokens and tool calls (enough to list, filter, sort and plot), and per file
the totals the runs page shows. The record itself is read again from its byte
offset when a page needs it.
"""

from __future__ import annotations

from collections import Counter

import msgspec

from waza.protocol.records import CaptureResult, Usage
from waza.protocol.trial_records import TrialResult
from waza.runner.analysis.attempts import attempts, first_error_line, from_capture, trials_status
from waza.runner.analysis.pass_rate import pass_rate, trials_pass_rate
from waza.runner.analysis.trial_stats import SummaryBuilder

__all__ = ["ID_LIMIT", "Fact", "FileTotals", "fact_of"]

#: Ids longer than this are shortened in the index (the whole id is on the prompt page).
ID_LIMIT = 300
#: Distinct adapter names remembered per file (a hostile file cannot grow this set without bound).
ADAPTER_LIMIT = 8
GRADER_LIMIT = 50


class Fact(msgspec.Struct):
    """The numbers of one line (a capture result, a trials result, or one trial of a suite)."""

    id: str
    status: str
    score: float | None
    duration: int | None
    tokens: int | None
    tool_calls: int
    trials: str | None = None  # "passes/n" for trials files
    trial: int | None = None
    why: str = ""  # an errored result: the first line of its first error


def _tokens(usage: Usage | None) -> int | None:
    if usage is None:
        return None
    if usage.total_tokens is not None:
        return usage.total_tokens
    if usage.input_tokens is None:
        return usage.output_tokens
    return usage.input_tokens + (usage.output_tokens or 0)


def _sum(values: list[int | None]) -> int | None:
    known = [v for v in values if v is not None]
    return sum(known) if known else None


def fact_of(result: CaptureResult | TrialResult) -> Fact:
    """The numbers of one result; an errored capture has no score (its graders judged an output that never came)."""
    short = result.id[:ID_LIMIT]
    if isinstance(result, TrialResult):
        tries = list(attempts(result))
        return Fact(
            short,
            trials_status(result.n, result.passes, [a.status for a in tries]),
            result.mean_score,
            _sum([a.duration for a in tries]),
            _sum([_tokens(a.usage) for a in tries]),
            sum(1 for a in tries for s in a.trajectory if s.type == "tool_call"),
            trials=f"{result.passes}/{result.n}",
            why=first_error_line(tries),
        )
    # A capture directly, without building its Attempt: this runs once per line of every file indexed.
    errored = result.status == "error"
    return Fact(
        short,
        result.status,
        None if errored or result.score is None else result.score.score,
        result.timing.total if result.timing is not None else None,
        _tokens(result.usage),
        sum(1 for s in result.trajectory if s.type == "tool_call"),
        trial=result.trial,
        why=first_error_line([from_capture(result)]) if errored else "",
    )


class FileTotals(msgspec.Struct):
    """Running totals of a file, updated line by line as the index grows."""

    results: int = 0
    statuses: Counter[str] = msgspec.field(default_factory=Counter)
    score_sum: float = 0.0
    scored: int = 0
    errors: int = 0
    adapters: list[str] = msgspec.field(default_factory=list)
    graders: dict[str, Counter[str]] = msgspec.field(default_factory=dict)
    first_start: int | None = None
    last_end: int | None = None
    trials: SummaryBuilder | None = None
    trial_rates: list[float] = msgspec.field(default_factory=list)  # each prompt's pass rate (``analysis.pass_rate``)

    def add(self, result: CaptureResult | TrialResult, fact: Fact) -> None:
        self.results += 1
        self.statuses[fact.status] += 1
        if fact.score is not None and fact.status != "error":  # an error's score says nothing (``analysis.pass_rate``)
            self.score_sum += fact.score
            self.scored += 1
        if result.adapter and result.adapter not in self.adapters and len(self.adapters) < ADAPTER_LIMIT:
            self.adapters.append(result.adapter[:80])
        for a in result.trials if isinstance(result, TrialResult) else (result,):
            if a.status == "error":
                self.errors += 1
            for g in a.grades:
                name = g.name[:80]
                counts = self.graders.get(name)
                if counts is None:
                    if len(self.graders) >= GRADER_LIMIT:
                        continue
                    counts = self.graders[name] = Counter()
                counts[g.status] += 1
        if isinstance(result, TrialResult):
            if self.trials is None:
                self.trials = SummaryBuilder(k=result.k, k_values=[], policy=result.error_policy)
            self.trials.add(result)
            rate = trials_pass_rate([t.status for t in result.trials])
            if rate is not None:
                self.trial_rates.append(rate)
            ks = {int(k) for k in result.pass_at_k if k.isdigit()}
            self.trials.k_values = sorted(set(self.trials.k_values) | ks)
            self.trials.k = max(self.trials.k, result.k)
        elif result.timing is not None:
            start, end = result.timing.start, result.timing.end
            self.first_start = start if self.first_start is None else min(self.first_start, start)
            self.last_end = end if self.last_end is None else max(self.last_end, end)

    @property
    def pass_rate(self) -> float | None:
        """``analysis.pass_rate``'s figure (for trials files the mean over prompts); None before any is judged."""
        if self.trials is not None:
            return sum(self.trial_rates) / len(self.trial_rates) if self.trial_rates else None
        return pass_rate(self.statuses["passed"], self.statuses["failed"])

    @property
    def mean_score(self) -> float | None:
        return self.score_sum / self.scored if self.scored else None

    @property
    def duration(self) -> int | None:
        if self.first_start is None or self.last_end is None:
            return None
        return self.last_end - self.first_start
