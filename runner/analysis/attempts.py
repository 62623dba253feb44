"""One view of "a run of one prompt" over both kinds of results file.

A CaptureResult is one attempt; a TrialResult holds k of them as TrialEntry
objects with slightly different fields (``duration`` instead of ``timing``,
one ``error`` instead of ``errors``). The summary and report writers work on
:class:`Attempt` so each is written once for both kinds.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import msgspec

from waza.protocol.records import CaptureResult, Exit, Grade, TrajectoryStep, Usage
from waza.protocol.trial_records import TrialResult


class Attempt(msgspec.Struct):
    """One run of one prompt, from a CaptureResult or one trial of a TrialResult."""

    id: str
    input: str | list[str]
    status: str
    output: str
    trial: int | None = None
    hint: str | None = None
    passed: bool | None = None
    score: float | None = None
    duration: int | None = None
    first_response: int | None = None
    trajectory: list[TrajectoryStep] = msgspec.field(default_factory=list)
    grades: list[Grade] = msgspec.field(default_factory=list)
    errors: list[str] = msgspec.field(default_factory=list)
    usage: Usage | None = None
    exit: Exit | None = None
    stderr: str | None = None

    @property
    def turns(self) -> list[str]:
        return [self.input] if isinstance(self.input, str) else list(self.input)


def from_capture(result: CaptureResult) -> Attempt:
    return Attempt(
        id=result.id,
        input=result.input,
        status=result.status,
        output=result.output,
        trial=result.trial,
        hint=result.hint,
        passed=result.score.passed if result.score else None,
        score=result.score.score if result.score else None,
        duration=result.timing.total if result.timing else None,
        first_response=result.timing.first_response if result.timing else None,
        trajectory=result.trajectory,
        grades=result.grades,
        errors=result.errors,
        usage=result.usage,
        exit=result.exit,
        stderr=result.stderr,
    )


def from_trials(result: TrialResult) -> Iterator[Attempt]:
    for entry in result.trials:
        yield Attempt(
            id=result.id,
            input=result.input,
            status=entry.status,
            output=entry.output,
            trial=entry.trial,
            hint=result.hint,
            passed=entry.passed,
            score=entry.score,
            duration=entry.duration,
            trajectory=entry.trajectory,
            grades=entry.grades,
            errors=[entry.error] if entry.error else [],
            usage=entry.usage,
            exit=entry.exit,
            stderr=entry.stderr,
        )


def attempts(result: CaptureResult | TrialResult) -> Iterator[Attempt]:
    """The attempts of a result: itself for a capture, one per trial for trials."""
    if isinstance(result, TrialResult):
        yield from from_trials(result)
    else:
        yield from_capture(result)


def trials_status(n: int, passes: int, statuses: Sequence[str]) -> str:
    """One word for a prompt's trials: passed (all counted trials), failed (none), flaky (some),
    or, with no trial that counts, error / pending / ungraded."""
    if n == 0:
        return "error" if "error" in statuses else "pending" if "pending" in statuses else "ungraded"
    return "passed" if passes == n else "failed" if passes == 0 else "flaky"


#: Characters of the reason a list shows for an errored result (the result's own page shows all of it).
WHY_LIMIT = 200


def first_error_line(tries: list[Attempt]) -> str:
    """Why a result errored, in one line: the first line of the first error of its first errored attempt
    (the agent's errors, else a grader's); empty when none errored."""
    for a in tries:
        if a.status != "error":
            continue
        for text in a.errors + [g.error for g in a.grades if g.status == "error" and g.error]:
            stripped = text.strip()
            if stripped:
                return stripped.splitlines()[0][:WHY_LIMIT]
        return "error (no message)"
    return ""
