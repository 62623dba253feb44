"""The analysis runs of the Python API: calibrate a grader against labels, compare runs.

``calibrate`` re-grades (with new graders) or reads the verdicts of a results
file and measures agreement with human labels (a labelled sheet) and/or with
the old verdicts: raw agreement, Cohen's kappa, the confusion matrix and every
disagreement. ``compare`` pairs two or more runs prompt by prompt (bootstrap
intervals of the differences, McNemar's test, regressions and improvements).
"""

from __future__ import annotations

import functools
from collections.abc import AsyncIterator, Callable, Iterable, Sequence
from typing import TypedDict, Unpack

import msgspec

from waza.protocol.analysis_records import ComparisonReport
from waza.protocol.errors import ConfigError
from waza.protocol.jsonl import JsonlError, display_name, read_records
from waza.protocol.records import CaptureResult
from waza.protocol.trial_records import (
    Agreement,
    CalibrationLabel,
    CalibrationReport,
    ErrorPolicy,
)
from waza.runner.analysis.agreement import Pair, agreement
from waza.runner.analysis.calibration import StratifiedSample, items, reasoning, verdict
from waza.runner.analysis.comparison import Bootstrap, labels_for, load_run
from waza.runner.analysis.comparison import compare as compare_runs
from waza.runner.analysis.runs import check_readable
from waza.runner.engine.blocking import run_blocking
from waza.runner.engine.inputs import in_batches
from waza.runner.engine.pipeline import entered, grade_stream
from waza.runner.engine.run_setup import build_graders
from waza.runner.engine.specs import Graders, Timeouts
from waza.runner.engine.trial_runs import check_policy
from waza.runner.grading.grader_runners import GraderRunner

Key = tuple[str, int | None]

HUMAN = "human"
VERDICT = "verdict"


def show_key(key: Key) -> str:
    return key[0] if key[1] is None else f"{key[0]}#{key[1]}"


def load_labels(path: str) -> tuple[dict[Key, CalibrationLabel], int]:
    """Labels by (id, trial); lines still null are counted, a repeated (id, trial) is an error."""
    return labels_from(read_records(path, CalibrationLabel), display_name(path))


def labels_from(numbered: Iterable[tuple[int, CalibrationLabel]], source: str) -> tuple[dict[Key, CalibrationLabel], int]:
    """:func:`load_labels` over labels already read (``source`` names them in errors)."""
    labels: dict[Key, CalibrationLabel] = {}
    lines: dict[Key, int] = {}
    unlabelled = 0
    for number, label in numbered:
        key = (label.id, label.trial)
        if key in lines:
            raise JsonlError(source, number, f"{show_key(key)} is labelled twice (first on line {lines[key]})", "id")
        lines[key] = number
        if label.passed is None:
            unlabelled += 1
        else:
            labels[key] = label
    if not labels:
        raise ConfigError(f'{source}: no line has "pass" set to true or false yet')
    return labels, unlabelled


class Comparisons(msgspec.Struct):
    """Pairs per (grader, reference), in report order; an item missing a verdict it needs is skipped."""

    pairs: dict[tuple[str, str], list[Pair]]
    items: int = 0
    skipped: int = 0

    @classmethod
    def ordered(cls, new: str | None, *, labelled: bool) -> Comparisons:
        keys: list[tuple[str, str]] = []
        if labelled:
            keys += [(new, HUMAN)] if new else []
            keys += [(VERDICT, HUMAN)]
        if new:
            keys += [(new, VERDICT)]
        return cls(pairs={k: [] for k in keys})

    def add(self, old: CaptureResult, new: CaptureResult | None, label: CalibrationLabel | None, new_name: str | None) -> None:
        self.items += 1
        before = verdict(old)
        after = verdict(new) if new is not None else None
        if before is None or (new is not None and after is None):
            self.skipped += 1
            return
        key = (old.id, old.trial)
        if label is not None:
            truth = bool(label.passed)
            if new is not None and after is not None:
                self._pair(new_name, HUMAN, key, truth, after, reasoning(new), label.notes)
            self._pair(VERDICT, HUMAN, key, truth, before, reasoning(old), label.notes)
            if len({g.name for g in old.grades}) > 1:
                for g in old.grades:
                    self._pair(g.name, HUMAN, key, truth, bool(g.passed), g.reasoning, label.notes)
        if new is not None and after is not None:
            self._pair(new_name, VERDICT, key, before, after, reasoning(new), "")

    def _pair(self, grader: str | None, reference: str, key: Key, truth: bool, said: bool, why: str, notes: str) -> None:
        self.pairs.setdefault((grader or VERDICT, reference), []).append(
            Pair(id=key[0], trial=key[1], reference=truth, verdict=said, reasoning=why, notes=notes)
        )

    def agreements(self) -> list[Agreement]:
        return [agreement(p, grader=g, reference=r) for (g, r), p in self.pairs.items()]


async def regrade(
    scope: Iterable[CaptureResult],
    runners: list[GraderRunner],
    concurrency: int,
    judge: Callable[[CaptureResult, CaptureResult], None],
) -> None:
    """Grade a copy of every item with the new graders; ``judge`` gets (original, re-graded)."""
    originals: dict[int, CaptureResult] = {}

    async def copies() -> AsyncIterator[CaptureResult]:
        async for result in in_batches(scope):
            copy = msgspec.structs.replace(result)
            originals[id(copy)] = result
            yield copy

    async def judged(new: CaptureResult) -> None:
        judge(originals.pop(id(new)), new)

    await grade_stream(copies(), runners, concurrency, judged)


class CalibrateOptions(TypedDict, total=False):
    """The keyword options of :func:`calibrate`, :func:`acalibrate` and ``CalibrationRun.prepare`` (which gives
    their defaults), spelled once."""

    labels: str | None
    graders: Graders
    sample: int | None
    seed: int
    min_kappa: float | None
    concurrency: int
    timeouts: Timeouts


class CalibrationRun(msgspec.Struct):
    """One calibration: which items, against which labels, with which new graders (if any)."""

    results: str
    runners: list[GraderRunner]
    labels: dict[Key, CalibrationLabel]
    unlabelled: int
    labelled: bool
    sample: int | None
    seed: int
    min_kappa: float | None
    concurrency: int
    comparisons: Comparisons

    @classmethod
    def prepare(
        cls,
        results: str,
        *,
        labels: str | None = None,
        graders: Graders = (),
        sample: int | None = None,
        seed: int = 0,
        min_kappa: float | None = None,
        concurrency: int = 1,
        timeouts: Timeouts = Timeouts(),
    ) -> CalibrationRun:
        runners = build_graders(graders, timeouts)
        check_readable(results)
        if labels is None and not runners:
            raise ConfigError("calibrate needs labels= (a sheet) or graders= (new graders) to compare with")
        if labels is not None and sample is not None:
            raise ConfigError("sample= draws a new sheet; with labels= the labelled items are the ones compared")
        if labels == "-" and results == "-":
            raise ConfigError("the results and the labels cannot both come from stdin")
        by_key, unlabelled = load_labels(labels) if labels else ({}, 0)
        new_name = " + ".join(r.name for r in runners) + " (new)" if runners else None
        tally = Comparisons.ordered(new_name, labelled=labels is not None)
        return cls(results, runners, by_key, unlabelled, labels is not None, sample, seed, min_kappa, concurrency, tally)

    def scope(self) -> Iterable[CaptureResult]:
        """The items compared: the labelled ones, a fresh stratified sample, or all of them."""
        if self.labelled:
            return (r for r in items(self.results) if (r.id, r.trial) in self.labels)
        if self.sample is not None:
            sampler = StratifiedSample(self.sample, self.seed)
            for result in items(self.results):
                sampler.offer(result)
            return sampler.draw()
        return items(self.results)

    async def run(self) -> CalibrationReport:
        found: set[Key] = set()
        new_name = " + ".join(r.name for r in self.runners) + " (new)" if self.runners else None

        def judge(old: CaptureResult, new: CaptureResult | None) -> None:
            key = (old.id, old.trial)
            found.add(key)
            self.comparisons.add(old, new, self.labels.get(key), new_name)

        if self.runners:
            async with entered(self.runners):
                await regrade(self.scope(), self.runners, self.concurrency, judge)
        else:
            async for result in in_batches(self.scope()):
                judge(result, None)
        report = CalibrationReport(
            results=display_name(self.results),
            items=self.comparisons.items,
            unlabelled=self.unlabelled,
            unmatched=[show_key(k) for k in self.labels if k not in found],
            skipped=self.comparisons.skipped,
            comparisons=self.comparisons.agreements(),
            min_kappa=self.min_kappa,
        )
        if report.comparisons and report.min_kappa is not None:
            kappa = report.comparisons[0].kappa
            report.gate = "passed" if kappa is not None and kappa >= report.min_kappa else "failed"
        return report


async def acalibrate(
    results: str,
    **options: Unpack[CalibrateOptions],
) -> CalibrationReport:
    """Agreement of a results file's verdicts (or of ``graders``, re-grading) with human ``labels`` and/or
    with the old verdicts; the first comparison is the one ``min_kappa`` gates (``report.gate``)."""
    run = CalibrationRun.prepare(results, **options)
    return await run.run()


def calibrate(
    results: str,
    **options: Unpack[CalibrateOptions],
) -> CalibrationReport:
    """Blocking :func:`acalibrate`."""
    return run_blocking(functools.partial(acalibrate, results, **options), "calibrate")


def compare(
    runs: Sequence[str],
    *,
    labels: Sequence[str] | None = None,
    errors: ErrorPolicy = "exclude",
    seed: int = 0,
    resamples: int = 2000,
    level: float = 0.95,
) -> ComparisonReport:
    """Compare runs (results or trials files) with the first, prompt by prompt: paired bootstrap intervals of
    the pass-rate, score and pass@k differences, McNemar's test, regressions and improvements."""
    paths = list(runs)
    if len(paths) < 2:
        raise ConfigError("compare needs at least two runs: a baseline and a candidate")
    if paths.count("-") > 1:
        raise ConfigError("stdin (-) can be only one of the runs")
    for path in paths:
        check_readable(path)
    policy = check_policy(errors)
    boot = Bootstrap(seed, resamples, level)
    names = labels_for(paths, list(labels) if labels is not None else None)
    loaded = [load_run(path, name, policy) for path, name in zip(paths, names, strict=True)]
    return ComparisonReport(
        runs=[r.info for r in loaded],
        errors=policy,
        seed=boot.seed,
        resamples=boot.resamples,
        comparisons=[compare_runs(loaded[0], other, boot) for other in loaded[1:]],
    )


__all__ = ["CalibrateOptions", "CalibrationRun", "Comparisons", "acalibrate", "calibrate", "compare", "load_labels", "show_key"]
