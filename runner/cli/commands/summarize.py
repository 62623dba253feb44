"""``waza summarize``: compact per-result views, one line of JSON (or a Markdown block) each."""

from __future__ import annotations

import os
from typing import Annotated, Literal

import typer

from waza.protocol.errors import ConfigError
from waza.protocol.jsonl import display_name, is_regular
from waza.runner.analysis.runs import ResultsFile, check_readable
from waza.runner.analysis.summary_lines import write_summaries
from waza.runner.analysis.summary_workers import summarize_with_workers
from waza.runner.cli.metavars import argument, option
from waza.runner.cli.option_values import MARKDOWN_ALIAS, wants_markdown
from waza.runner.cli.runtime import fail
from waza.runner.cli.sync_command import run_sync
from waza.runner.engine.inputs import require_lines
from waza.runner.engine.sink import output_stream

HELP = """Summarize results: per result the status, score, duration, tool calls per tool,
tokens, grades, and the list of steps with short texts.

Reads CaptureResult or TrialResult lines (auto-detected; a TrialResult gives one
summary per trial) and writes one ResultSummary line each as it reads
(`waza schemas ResultSummary`), or Markdown with --format markdown.

Examples:

  waza summarize results.jsonl -f markdown | less

  waza summarize results.jsonl | jq -c 'select(.failedToolCalls > 0) | {id, tools}'

  waza capture prompts.jsonl --adapter exec -- ./agent.sh | waza summarize - --width 80
"""


def register(app: typer.Typer) -> None:
    @app.command("summarize", help=HELP)
    def summarize_cmd(
        results: Annotated[
            str, argument(metavar="RESULTS", value="FILE", help="CaptureResult or TrialResult JSONL, or - for stdin.")
        ] = "-",
        format: Annotated[
            Literal["jsonl", "markdown"] | None,
            option("--format", "-f", help="jsonl (default: one ResultSummary per line) or markdown (for people)."),
        ] = None,
        markdown: Annotated[bool, MARKDOWN_ALIAS] = False,
        width: Annotated[int, option("--width", help="Shorten texts to this many characters (0: never).", min=0)] = 200,
        output: Annotated[str, option("-o", "--output", help="Write here instead of stdout.")] = "-",
        workers: Annotated[
            int | None,
            option(
                "--workers",
                help="Processes summarizing a regular file side by side (default: 2 for a file of 64 MB or more "
                "when 2 CPUs are there, else 1: this process). Stdin and pipes are read in this process.",
                min=1,
            ),
        ] = None,
    ) -> None:
        raise typer.Exit(run_sync(lambda: _summarize(results, wants_markdown(format, markdown), width, output, workers)))


def _summarize(results: str, markdown: bool, width: int, output: str, workers: int | None) -> int:
    check_readable(results)
    require_lines(results, "results")
    jobs = _jobs(results, workers)
    pending = bytearray()  # summaries not yet handed to ``out``: written in large pieces, and before any wait

    def spill() -> None:
        out.write(pending)
        pending.clear()

    def hand_on() -> None:
        spill()
        out.flush()

    with output_stream(output) as out:
        if jobs > 1:
            count = summarize_with_workers(results, jobs, width, markdown, out.write)
        else:
            file = ResultsFile(results, on_wait=hand_on)
            try:
                _, count = write_summaries(file.lines(), file.source, None, width, markdown, pending, spill)
            finally:
                hand_on()
    if count == 0:  # a stream that held nothing
        return fail(f"{display_name(results)}: holds no results")
    return 0


def _jobs(results: str, workers: int | None) -> int:
    """Processes for ``results``: ``workers`` (more than 1 only for a regular file), or by default 2 for a
    regular file of :data:`_LARGE` bytes or more when this process may run on 2 CPUs or more, else 1."""
    regular = is_regular(results)
    if workers is not None:
        if workers > 1 and not regular:
            raise ConfigError(
                f"--workers {workers}: {display_name(results)} is not a regular file (stdin and pipes are read in this process)"
            )
        return workers
    if regular and os.stat(results).st_size >= _LARGE and _cpus() >= 2:
        return 2
    return 1


def _cpus() -> int:
    """The CPUs this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


#: The size from which a file is summarized by worker processes by default: starting them costs a
#: fraction of a second, which a smaller file would not win back.
_LARGE = 64 << 20
