"""``waza report``: results as Markdown, CSV, JUnit XML or a single-file HTML page."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Annotated, Literal

import typer

from waza.runner.analysis.runs import check_readable
from waza.runner.cli.metavars import argument, option
from waza.runner.cli.sync_command import run_sync
from waza.runner.engine.sink import output_stream
from waza.runner.reports.report_formats import CsvReport, Format, JunitReport, MarkdownReport, render
from waza.runner.reports.report_html import HtmlReport

HELP = """Turn a results file into a report for people or CI systems.

Reads CaptureResult or TrialResult lines (auto-detected).

  markdown  a summary table, then details of every prompt that did not pass
  csv       one row per result (per trial for trials files)
  junit     JUnit XML: one testcase per prompt; a failure carries the graders' reasoning,
            an error the cause; the output, steps and trials are in system-out
  html      one self-contained page (no server, no network): a summary table and,
            per prompt, a collapsible trajectory viewer with thoughts, messages, tool
            calls with inputs and outputs, plans, and grades with their reasoning

Examples:

  waza report results.jsonl --format html -o report.html

  waza report results.jsonl --format junit -o junit.xml

  waza capture prompts.jsonl --adapter exec -- ./agent.sh | waza report - --format markdown >> "$GITHUB_STEP_SUMMARY"
"""

FORMATS: dict[str, Callable[[int], Format]] = {
    "markdown": MarkdownReport,
    "csv": CsvReport,
    "junit": JunitReport,
    "html": lambda width: HtmlReport(),
}


def register(app: typer.Typer) -> None:
    @app.command("report", help=HELP)
    def report_cmd(
        results: Annotated[
            str, argument(metavar="RESULTS", value="FILE", help="CaptureResult or TrialResult JSONL, or - for stdin.")
        ] = "-",
        format: Annotated[
            Literal["markdown", "csv", "junit", "html"], option("--format", "-f", help="markdown, csv, junit or html.")
        ] = "markdown",
        title: Annotated[str | None, option("--title", help="Report title / JUnit suite name (default: the file name).")] = None,
        width: Annotated[
            int, option("--width", help="markdown, csv, junit: shorten texts to this many characters (0: never).", min=0)
        ] = 500,
        output: Annotated[str, option("-o", "--output", help="Write here instead of stdout.")] = "-",
    ) -> None:
        raise typer.Exit(run_sync(lambda: _report(results, format, title, width, output)))


def _report(results: str, format: str, title: str | None, width: int, output: str) -> int:
    check_readable(results)
    name = title or ("waza results" if results == "-" else results.rsplit("/", 1)[-1])
    with output_stream(output) as out:
        totals = render(results, FORMATS[format](width), name, out)
    print(f"waza: report of {totals.describe()}", file=sys.stderr)
    return 0
