"""``waza calibrate``: is the grader right? A blind labelling sheet, then agreement with the labels.

Three uses, chosen by the options:

- ``--sample N``: write a stratified, blind labelling sheet (JSONL, and Markdown with --markdown);
- ``--labels SHEET``: compare the results' verdicts with the human labels (kappa, confusion, rates);
- ``--grader NEW``: re-grade (the labelled items, the --sample, or every item) and compare.

The first comparison of the report is the one ``--min-kappa`` gates: the new
grader against the labels, else the results' verdict against the labels, else
the new grader against the results' verdict.
"""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import AsyncIterator, Callable, Iterable
from pathlib import Path
from typing import Annotated

import typer

from waza.protocol.errors import ConfigError
from waza.protocol.jsonl import JsonlError, JsonlWriter, display_name, dumps, read_records
from waza.protocol.records import CaptureResult
from waza.protocol.trial_records import Agreement, CalibrationLabel, CalibrationReport

from ..agreement import Pair, agreement
from ..calibration import StratifiedSample, items, markdown_sheet, reasoning, sheet_item, verdict
from ..cli_options import GraderOptions, with_groups
from ..grader_runners import GraderRunner
from ..inputs import in_batches
from ..runs import check_readable
from ..runtime import EXIT_FAILED, EXIT_OK, Interrupt, run
from ..option_values import finite_number
from .capture import entered
from .grade import grade_stream

Key = tuple[str, int | None]

HUMAN = "human"
VERDICT = "verdict"
SHOWN_DISAGREEMENTS = 10

HELP = """Check a grader against human labels (or another grader): agreement, kappa, error rates.

--sample N --seed S: write a blind labelling sheet of N graded items drawn
equally from each verdict stratum (pass/fail, per grader): input, output,
hint and a trajectory excerpt, not the verdict. JSONL to -o, and Markdown
with --markdown FILE.

--labels SHEET.jsonl (the sheet with "pass" set): a CalibrationReport with raw
agreement, Cohen's kappa, the confusion matrix, false-pass and false-fail
rates and every disagreement.

--grader NEW: re-grade the labelled items (or the --sample, or all items) and
compare NEW with the labels and with the old verdicts.

--min-kappa X exits 1 when the first comparison's kappa is below X or undefined.

Examples:

  waza calibrate results.jsonl --sample 40 --seed 7 -o sheet.jsonl --markdown sheet.md

  waza calibrate results.jsonl --labels sheet.jsonl --min-kappa 0.6

  waza calibrate results.jsonl --labels sheet.jsonl --grader ./stricter_judge.py
"""


def register(app: typer.Typer) -> None:
    @app.command("calibrate", help=HELP)
    @with_groups(graders=GraderOptions)
    def calibrate(
        results: Annotated[str, typer.Argument(help="CaptureResult or TrialResult JSONL, or - for stdin.")] = "-",
        sample: Annotated[int | None, typer.Option("--sample", help="Draw a labelling sheet of N items.", min=1)] = None,
        seed: Annotated[int, typer.Option("--seed", help="Seed of the sample.")] = 0,
        labels: Annotated[str | None, typer.Option("--labels", help="The labelled sheet (JSONL with pass true/false).")] = None,
        markdown: Annotated[Path | None, typer.Option("--markdown", help="Also write the sheet as Markdown to FILE.")] = None,
        min_kappa: Annotated[float | None, typer.Option("--min-kappa", help="Exit 1 when kappa is below this.", parser=finite_number(-1, 1))] = None,
        concurrency: Annotated[int, typer.Option("-j", "--concurrency", help="Items re-graded at once.", min=1)] = 1,
        output: Annotated[str, typer.Option("-o", "--output", help="Sheet or report file, or - for stdout.")] = "-",
        *,
        graders: GraderOptions,
    ) -> None:
        options = Options(results, sample, seed, labels, markdown, min_kappa, concurrency, output)
        raise typer.Exit(run(lambda interrupt: _calibrate(options, graders, interrupt)))


@dataclasses.dataclass(frozen=True)
class Options:
    results: str
    sample: int | None
    seed: int
    labels: str | None
    markdown: Path | None
    min_kappa: float | None
    concurrency: int
    output: str


async def _calibrate(opts: Options, graders: GraderOptions, interrupt: Interrupt) -> int:
    runners = graders.runners()
    check_readable(opts.results)
    if opts.labels is None and not runners:
        if opts.sample is None:
            raise ConfigError("calibrate needs --sample N (write a sheet), --labels SHEET or --grader NEW")
        if opts.min_kappa is not None:
            raise ConfigError("--min-kappa gates a comparison: give --labels SHEET or --grader NEW")
        return write_sheet(opts)
    if opts.markdown is not None:
        raise ConfigError("--markdown writes the labelling sheet; it does nothing with --labels or --grader")
    if opts.labels is not None and opts.sample is not None:
        raise ConfigError("--sample draws a new sheet; with --labels the labelled items are the ones compared")
    if opts.labels == "-" and opts.results == "-":
        raise ConfigError("the results and the labels cannot both come from stdin")
    labels, unlabelled = load_labels(opts.labels) if opts.labels else ({}, 0)
    new_name = " + ".join(r.name for r in runners) + " (new)" if runners else None
    tally = Comparisons.ordered(new_name, labelled=opts.labels is not None)
    found: set[Key] = set()

    def judge(old: CaptureResult, new: CaptureResult | None) -> None:
        key = (old.id, old.trial)
        found.add(key)
        label = labels.get(key)
        tally.add(old, new, label, new_name)

    scope = _scope(opts, labels)
    if runners:
        interrupt.summary = lambda: f"{tally.items} items re-graded; no report written"
        async with entered(runners):
            await regrade(scope, runners, opts.concurrency, judge)
    else:
        async for result in in_batches(scope):
            judge(result, None)
    report = CalibrationReport(
        results=display_name(opts.results),
        items=tally.items,
        unlabelled=unlabelled,
        unmatched=[_show(k) for k in labels if k not in found],
        skipped=tally.skipped,
        comparisons=tally.agreements(),
        min_kappa=opts.min_kappa,
    )
    return finish(report, opts.output)


def _scope(opts: Options, labels: dict[Key, CalibrationLabel]) -> Iterable[CaptureResult]:
    """The items compared: the labelled ones, a fresh stratified sample, or all of them."""
    if opts.labels is not None:
        return (r for r in items(opts.results) if (r.id, r.trial) in labels)
    if opts.sample is not None:
        sampler = StratifiedSample(opts.sample, opts.seed)
        for result in items(opts.results):
            sampler.offer(result)
        return sampler.draw()
    return items(opts.results)


def _show(key: Key) -> str:
    return key[0] if key[1] is None else f"{key[0]}#{key[1]}"


def load_labels(path: str) -> tuple[dict[Key, CalibrationLabel], int]:
    """Labels by (id, trial); lines still null are counted, a repeated (id, trial) is an error."""
    labels: dict[Key, CalibrationLabel] = {}
    lines: dict[Key, int] = {}
    unlabelled = 0
    for number, label in read_records(path, CalibrationLabel):
        key = (label.id, label.trial)
        if key in lines:
            raise JsonlError(display_name(path), number, f"{_show(key)} is labelled twice (first on line {lines[key]})", "id")
        lines[key] = number
        if label.passed is None:
            unlabelled += 1
        else:
            labels[key] = label
    if not labels:
        raise ConfigError(f"{display_name(path)}: no line has \"pass\" set to true or false yet")
    return labels, unlabelled


@dataclasses.dataclass
class Comparisons:
    """Pairs per (grader, reference), in report order; an item missing a verdict it needs is skipped."""

    pairs: dict[tuple[str, str], list[Pair]]
    items: int = 0
    skipped: int = 0

    @classmethod
    def ordered(cls, new: str | None, *, labelled: bool) -> Comparisons:
        keys = []
        if labelled:
            keys += [(new, HUMAN)] if new else []
            keys += [(VERDICT, HUMAN)]
        if new:
            keys += [(new, VERDICT)]
        return cls(pairs={k: [] for k in keys})  # type: ignore[misc]

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
    scope: Iterable[CaptureResult], runners: list[GraderRunner], concurrency: int, judge: Callable[[CaptureResult, CaptureResult], None]
) -> None:
    """Grade a copy of every item with the new graders; ``judge`` gets (original, re-graded)."""
    originals: dict[int, CaptureResult] = {}

    async def copies() -> AsyncIterator[CaptureResult]:
        async for result in in_batches(scope):
            copy = dataclasses.replace(result)
            originals[id(copy)] = result
            yield copy

    class Judge:
        def write(self, new: CaptureResult) -> None:
            judge(originals.pop(id(new)), new)

    await grade_stream(copies(), runners, concurrency, Judge())  # type: ignore[arg-type]


def write_sheet(opts: Options) -> int:
    assert opts.sample is not None
    sampler = StratifiedSample(opts.sample, opts.seed)
    for result in items(opts.results):
        sampler.offer(result)
    sheet = [sheet_item(result, number) for number, result in enumerate(sampler.draw(), start=1)]
    if not sheet:
        raise ConfigError(f"{display_name(opts.results)}: no graded item (passed or failed) to sample")
    with JsonlWriter(opts.output) as writer:
        for item in sheet:
            writer.write(item)
    if opts.markdown is not None:
        opts.markdown.write_text(markdown_sheet(sheet, display_name(opts.results)))
    print(f"waza: sheet of {len(sheet)} items (strata: {sampler.describe()})", file=sys.stderr)
    if sampler.skipped:
        print(f"waza: {sampler.skipped} items without a verdict (error, pending, ungraded) left out", file=sys.stderr)
    return EXIT_OK


def finish(report: CalibrationReport, output: str) -> int:
    """Write the report, print it readably on stderr, apply --min-kappa to the first comparison."""
    if report.comparisons and report.min_kappa is not None:
        kappa = report.comparisons[0].kappa
        report.gate = "passed" if kappa is not None and kappa >= report.min_kappa else "failed"
    with JsonlWriter(output) as writer:
        writer.write_bytes(dumps(report))
    for line in describe(report):
        print(f"waza: {line}", file=sys.stderr)
    return EXIT_FAILED if report.gate == "failed" else EXIT_OK


def _num(value: float | None) -> str:
    return "undefined" if value is None else f"{value:.3f}"


def describe(report: CalibrationReport) -> list[str]:
    lines = [f"{report.items} items from {report.results}"]
    if report.skipped:
        lines[0] += f"; {report.skipped} without a verdict to compare, left out"
    if report.unlabelled:
        lines.append(f"{report.unlabelled} sheet lines not labelled yet (pass null), left out")
    if report.unmatched:
        lines.append(f"{len(report.unmatched)} labels match no item: {', '.join(report.unmatched[:SHOWN_DISAGREEMENTS])}")
    for a in report.comparisons:
        c = a.confusion
        lines.append(
            f"{a.grader} vs {a.reference}: {a.items} items, agreement {_num(a.agreement)}, kappa {_num(a.kappa)}; "
            f"pass/pass {c.true_pass}, pass/fail {c.false_pass}, fail/pass {c.false_fail}, fail/fail {c.true_fail} "
            f"(grader/{a.reference}); false-pass rate {_num(a.false_pass_rate)}, false-fail rate {_num(a.false_fail_rate)}"
        )
        for d in a.disagreements[:SHOWN_DISAGREEMENTS]:
            said = "pass" if d.verdict else "fail"
            truth = "pass" if d.reference else "fail"
            lines.append(f"  {_show((d.id, d.trial))}: {a.grader} {said}, {a.reference} {truth}: {d.reasoning[:160]}")
        if len(a.disagreements) > SHOWN_DISAGREEMENTS:
            lines.append(f"  and {len(a.disagreements) - SHOWN_DISAGREEMENTS} more disagreements (all in the report)")
    if report.gate is not None:
        lines.append(f"--min-kappa {report.min_kappa:g}: {report.gate}")
    return lines
