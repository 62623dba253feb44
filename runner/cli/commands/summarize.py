"""``waza summarize``: compact per-result views, one line of JSON (or a Markdown block) each."""

from __future__ import annotations

from typing import Annotated, Literal

import msgspec
import typer

from waza.protocol.jsonl import display_name
from waza.runner.analysis.runs import ResultsFile, check_readable
from waza.runner.analysis.summaries import summary_markdown
from waza.runner.analysis.summary_lines import capture_summary, line_summaries
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

  waza capture prompts.jsonl -- ./agent.sh | waza summarize - --width 80
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
    ) -> None:
        raise typer.Exit(run_sync(lambda: _summarize(results, wants_markdown(format, markdown), width, output)))


def _summarize(results: str, markdown: bool, width: int, output: str) -> int:
    check_readable(results)
    require_lines(results, "results")
    count = 0
    pending = bytearray()  # summaries not yet handed to ``out``: written in large pieces, and before any wait
    encode_into = msgspec.json.Encoder().encode_into  # a ResultSummary's JSON is its to_json()

    def hand_on() -> None:
        out.write(pending)
        pending.clear()
        out.flush()

    with output_stream(output) as out:
        file = ResultsFile(results, on_wait=hand_on)
        source, kind = file.source, file.kind
        try:
            for number, line in file.lines():
                count += 1
                # Every capture line after the first: the short way (capture_summary), tried first.
                if kind == "capture" and not markdown and (one := capture_summary(line, width)) is not None:
                    encode_into(one, pending, -1)
                    pending += b"\n"
                else:
                    kind, summaries = line_summaries(source, number, line, kind, width)
                    for summary in summaries:
                        if markdown:
                            pending += summary_markdown(summary).encode()
                        else:
                            encode_into(summary, pending, -1)
                            pending += b"\n"
                if len(pending) >= _PIECE:
                    out.write(pending)
                    pending.clear()
        finally:
            hand_on()
    if count == 0:  # a stream that held nothing
        return fail(f"{display_name(results)}: holds no results")
    return 0


#: Bytes of summaries gathered before a write.
_PIECE = 1 << 16
