"""Grader calibration: graded items from any results file, a stratified blind sample, the sheet.

An *item* is one graded output: a CaptureResult line, or one trial of a
TrialResult line, keyed by (id, trial). Only items with a verdict (passed or
failed) can be calibrated; errors, pending and ungraded ones are counted and
left out.

The sample is stratified by the verdict pattern (``pass``/``fail``, or with
several graders ``judge=pass,regex=fail``) and allocated equally across strata,
a stratum with too few items giving its share to the others, so rare failures
are as well represented as common passes. Each stratum keeps a seeded
reservoir of at most N items while the file streams past, so memory is bounded
by N times the number of strata, whatever the file size.
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Iterator
from typing import Any

import msgspec

from waza.protocol.records import CaptureResult, TrajectoryStep, Verdict
from waza.protocol.trial_records import CalibrationItem, TrialResult
from waza.runner.analysis.markdown import fence
from waza.runner.analysis.runs import ResultsFile

EXCERPT_STEPS = 20
EXCERPT_WIDTH = 240


def items(path: str) -> Iterator[CaptureResult]:
    """Every graded output in a capture or trials file, as a CaptureResult (trials carry their number)."""
    return items_of(record for _, record in ResultsFile(path))


def items_of(records: Iterable[CaptureResult | TrialResult]) -> Iterator[CaptureResult]:
    """:func:`items` over records already read."""
    for record in records:
        if isinstance(record, TrialResult):
            yield from _trial_items(record)
        else:
            yield record


def _trial_items(result: TrialResult) -> Iterator[CaptureResult]:
    for entry in result.trials:
        yield CaptureResult(
            id=result.id,
            input=result.input,
            output=entry.output,
            hint=result.hint,
            reference=result.reference,
            trajectory=entry.trajectory,
            metadata=result.metadata,
            exit=entry.exit,
            usage=entry.usage,
            tool_errors=entry.tool_errors,
            grades=entry.grades,
            score=Verdict(status=entry.status, passed=entry.passed, score=entry.score)
            if entry.status in ("passed", "failed", "error", "pending")
            else None,
            status=entry.status,
            trial=entry.trial,
            adapter=result.adapter,
        )


def verdict(result: CaptureResult) -> bool | None:
    """The aggregate pass/fail, or None when the item has none to calibrate."""
    if result.status not in ("passed", "failed") or result.score is None:
        return None
    return result.score.passed


def reasoning(result: CaptureResult) -> str:
    parts = [f"{g.name}: {g.reasoning}" for g in result.grades if g.reasoning]
    return "; ".join(parts) or (result.score.reasoning if result.score else "")


def stratum(result: CaptureResult) -> str:
    """``pass``/``fail`` with one grader; ``name=pass,name=fail`` (sorted by name) with several."""
    judged = sorted((g.name, g.passed) for g in result.grades if g.status in ("passed", "failed"))
    if len(result.grades) <= 1:
        return "pass" if verdict(result) else "fail"
    return ",".join(f"{name}={'pass' if ok else 'fail'}" for name, ok in judged)


def _clip(text: str, width: int = EXCERPT_WIDTH) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1] + "…"


def _brief(value: Any) -> str:
    if value is None:
        return ""
    return value if isinstance(value, str) else str(value)


def step_line(step: TrajectoryStep) -> str:
    """One trajectory step as a line a person can read."""
    if step.type == "tool_call":
        head = f"tool {step.name or step.title or '?'}" + (f" [{step.status}]" if step.status else "")
        io = " -> ".join(x for x in (_brief(step.input), _brief(step.output)) if x)
        return _clip(f"{head}: {io}" if io else head)
    if step.type == "plan":
        return _clip("plan: " + "; ".join(_brief(e.get("content") if isinstance(e, dict) else e) for e in step.entries or []))
    if step.type in ("message", "thought"):
        who = "user" if step.role == "user" else step.type
        return _clip(f"{who}: {step.content or ''}")
    return _clip(f"{step.type}: {_brief(step.extra)}")


def excerpt(steps: list[TrajectoryStep], limit: int = EXCERPT_STEPS) -> list[str]:
    """The first and last steps (the middle elided past ``limit``), one line each."""
    lines = [step_line(s) for s in steps]
    if len(lines) <= limit:
        return lines
    head = limit // 2
    tail = limit - head - 1
    return [*lines[:head], f"... {len(lines) - head - tail} steps elided ...", *lines[-tail:]]


def sheet_item(result: CaptureResult, number: int) -> CalibrationItem:
    return CalibrationItem(
        sample=number,
        id=result.id,
        trial=result.trial,
        input=result.input,
        output=result.output,
        hint=result.hint,
        reference=result.reference,
        trajectory=excerpt(result.trajectory),
    )


class Reservoir(msgspec.Struct):
    """A uniform random sample of at most ``size`` items from a stream of unknown length (algorithm R)."""

    size: int
    seen: int = 0
    kept: list[CaptureResult] = msgspec.field(default_factory=list)

    def offer(self, result: CaptureResult, rng: random.Random) -> None:
        self.seen += 1
        if len(self.kept) < self.size:
            self.kept.append(result)
            return
        slot = rng.randrange(self.seen)
        if slot < self.size:
            self.kept[slot] = result


class StratifiedSample(msgspec.Struct):
    """Stratified sample of graded items; ``skipped`` counts items without a verdict."""

    size: int
    seed: int
    strata: dict[str, Reservoir] = msgspec.field(default_factory=dict)
    skipped: int = 0
    shares: dict[str, int] = msgspec.field(default_factory=dict)
    #: Seeded from ``seed`` when the sample is made, so the same seed draws the same sample.
    _rng: random.Random = msgspec.field(default_factory=random.Random)

    def __post_init__(self) -> None:
        self._rng.seed(self.seed)

    def offer(self, result: CaptureResult) -> None:
        if verdict(result) is None:
            self.skipped += 1
            return
        reservoir = self.strata.setdefault(stratum(result), Reservoir(self.size))
        reservoir.offer(result, self._rng)

    def allocation(self) -> dict[str, int]:
        """Equal shares, one at a time round the strata (in seeded order) until N or the strata run out."""
        order = sorted(self.strata)
        self._rng.shuffle(order)
        share = dict.fromkeys(order, 0)
        left = self.size
        while left and any(share[s] < len(self.strata[s].kept) for s in order):
            for s in order:
                if left and share[s] < len(self.strata[s].kept):
                    share[s] += 1
                    left -= 1
        return share

    def draw(self) -> list[CaptureResult]:
        """Each stratum's share drawn from its reservoir, then all shuffled together (no stratum runs)."""
        chosen: list[CaptureResult] = []
        self.shares = self.allocation()
        for name, count in sorted(self.shares.items()):
            chosen.extend(self._rng.sample(self.strata[name].kept, count))
        self._rng.shuffle(chosen)
        return chosen

    def describe(self) -> str:
        """Per stratum: how many were drawn of how many there were (after ``draw``)."""
        return "; ".join(f"{name} {self.shares.get(name, 0)} of {r.seen}" for name, r in sorted(self.strata.items()))


def markdown_sheet(sheet: list[CalibrationItem], source: str) -> str:
    """The sheet for reading: one section per item; the verdict is not shown (the labelling is blind)."""
    out = [
        f"# Calibration sheet for {source}\n",
        f'{len(sheet)} items. For each, decide whether the output is acceptable and set `"pass"` to',
        "true or false on the line with the same `sample` number in the JSONL sheet",
        '(notes go in `"notes"`), then run `waza calibrate RESULTS --labels SHEET.jsonl`.\n',
    ]
    for item in sheet:
        trial = f" (trial {item.trial})" if item.trial is not None else ""
        out.append(f"## {item.sample}. `{item.id}`{trial}\n")
        turns = [item.input] if isinstance(item.input, str) else item.input
        out.append("**Input**\n\n" + "".join(fence(t) for t in turns))
        if item.hint:
            out.append("**Hint**\n\n" + fence(item.hint))
        if item.reference:
            out.append("**Reference**\n\n" + fence(item.reference))
        out.append("**Output**\n\n" + fence(item.output))
        if item.trajectory:
            out.append("**Trajectory**\n\n" + fence("\n".join(item.trajectory)))
        out.append("**Label**: pass / fail\n")
    return "\n".join(out)
