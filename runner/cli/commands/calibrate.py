"""``waza calibrate``: is the grader right? A blind labelling sheet, then agreement with the labels.

Three uses, chosen by the options:

- ``--sample N``: write a stratified, blind labelling sheet (JSONL, and Markdown with --sheet-markdown);
- ``--labels SHEET``: compare the results' verdicts with the human labels (kappa, confusion, rates);
- ``--grader NEW``: re-grade (the labelled items, the --sample, or every item) and compare.

The first comparison of the report is the one ``--min-kappa`` gates: the new
grader against the labels, else the results' verdict against the labels, else
the new grader against the results' verdict.
"""

from __future__ import annotations

import sys
from collections.abc import Awaitable
from pathlib import Path
from typing import Annotated

import msgspec
import typer

from waza.protocol.errors import ConfigError
from waza.protocol.jsonl import (
    JsonlWriter,
    display_name,
    dumps,
)
from waza.protocol.trial_records import CalibrationReport
from waza.runner.analysis.calibration import (
    StratifiedSample,
    items,
    markdown_sheet,
    sheet_item,
)
from waza.runner.analysis.runs import check_readable
from waza.runner.cli.metavars import argument, option
from waza.runner.cli.option_values import finite_number, renamed
from waza.runner.cli.options import GraderOptions, with_groups
from waza.runner.cli.runtime import EXIT_FAILED, EXIT_OK, Interrupt, run
from waza.runner.engine.calibration import CalibrationRun, show_key
from waza.runner.engine.specs import Timeouts

SHOWN_DISAGREEMENTS = 10

HELP = """Check a grader against human labels (or another grader): agreement, kappa, error rates.

--sample N --seed S: write a blind labelling sheet of N graded items drawn
equally from each verdict stratum (pass/fail, per grader): input, output,
hint and a trajectory excerpt, not the verdict. JSONL to -o, and Markdown
with --sheet-markdown FILE.

--labels SHEET.jsonl (the sheet with "pass" set): a CalibrationReport with raw
agreement, Cohen's kappa, the confusion matrix, false-pass and false-fail
rates and every disagreement.

--grader NEW: re-grade the labelled items (or the --sample, or all items) and
compare NEW with the labels and with the old verdicts.

--min-kappa X exits 1 when the first comparison's kappa is below X or undefined.

Examples:

  waza calibrate results.jsonl --sample 40 --seed 7 -o sheet.jsonl --sheet-markdown sheet.md

  waza calibrate results.jsonl --labels sheet.jsonl --min-kappa 0.6

  waza calibrate results.jsonl --labels sheet.jsonl --grader ./stricter_judge.py   # your grader
"""


def register(app: typer.Typer) -> None:
    @app.command("calibrate", help=HELP)
    @with_groups(graders=GraderOptions)
    def calibrate(
        results: Annotated[
            str, argument(metavar="RESULTS", value="FILE", help="CaptureResult or TrialResult JSONL, or - for stdin.")
        ] = "-",
        sample: Annotated[int | None, option("--sample", help="Draw a labelling sheet of N items.", min=1)] = None,
        seed: Annotated[int, option("--seed", help="Seed of the sample.")] = 0,
        labels: Annotated[str | None, option("--labels", help="The labelled sheet (JSONL with pass true/false).")] = None,
        markdown: Annotated[Path | None, option("--sheet-markdown", help="Also write the sheet as Markdown to FILE.")] = None,
        old_markdown: Annotated[
            Path | None, option("--markdown", metavar="FILE", hidden=True, help="Old name of --sheet-markdown.")
        ] = None,
        min_kappa: Annotated[
            float | None, option("--min-kappa", help="Exit 1 when kappa is below this.", parser=finite_number(-1, 1))
        ] = None,
        concurrency: Annotated[int, option("-j", "--concurrency", help="Items re-graded at once.", min=1)] = 1,
        output: Annotated[str, option("-o", "--output", help="Sheet or report file, or - for stdout.")] = "-",
        *,
        graders: GraderOptions,
    ) -> None:
        def body(interrupt: Interrupt) -> Awaitable[int]:  # the old name checked where a ConfigError is a usage error
            sheet_markdown = renamed(markdown, old_markdown, "--sheet-markdown", "--markdown")
            options = Options(results, sample, seed, labels, sheet_markdown, min_kappa, concurrency, output)
            return _calibrate(options, graders, interrupt)

        raise typer.Exit(run(body))


class Options(msgspec.Struct, frozen=True):
    """The command's own options, gathered so ``_calibrate`` and ``write_sheet`` take one argument."""

    results: str
    sample: int | None
    seed: int
    labels: str | None
    markdown: Path | None
    min_kappa: float | None
    concurrency: int
    output: str


async def _calibrate(opts: Options, graders: GraderOptions, interrupt: Interrupt) -> int:
    specs = graders.specs()
    if opts.labels is None and not specs:
        check_readable(opts.results)
        if opts.sample is None:
            raise ConfigError("calibrate needs --sample N (write a sheet), --labels SHEET or --grader NEW")
        if opts.min_kappa is not None:
            raise ConfigError("--min-kappa gates a comparison: give --labels SHEET or --grader NEW")
        return write_sheet(opts)
    if opts.markdown is not None:
        raise ConfigError("--sheet-markdown writes the labelling sheet; it does nothing with --labels or --grader")
    calibration = CalibrationRun.prepare(
        opts.results,
        labels=opts.labels,
        graders=specs,
        sample=opts.sample,
        seed=opts.seed,
        min_kappa=opts.min_kappa,
        concurrency=opts.concurrency,
        timeouts=Timeouts(grader=graders.grader_timeout),
    )
    if calibration.runners:
        interrupt.summary = lambda: f"{calibration.comparisons.items} items re-graded; no report written"
    return finish(await calibration.run(), opts.output)


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
    """Write the report, print it readably on stderr; exit 1 when --min-kappa failed."""
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
            lines.append(f"  {show_key((d.id, d.trial))}: {a.grader} {said}, {a.reference} {truth}: {d.reasoning[:160]}")
        if len(a.disagreements) > SHOWN_DISAGREEMENTS:
            lines.append(f"  and {len(a.disagreements) - SHOWN_DISAGREEMENTS} more disagreements (all in the report)")
    if report.gate is not None:
        lines.append(f"--min-kappa {report.min_kappa:g}: {report.gate}")
    return lines
