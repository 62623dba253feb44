"""``waza export``: write a results or trials file in another tool's shape (acp-harness's, Harbor's ATIF)."""

from __future__ import annotations

from typing import Annotated

import typer

from waza.protocol.errors import ConfigError
from waza.protocol.jsonl import dumps
from waza.runner.analysis.atif_format import to_atif
from waza.runner.analysis.harness_format import to_harness
from waza.runner.analysis.runs import ResultsFile, check_readable
from waza.runner.cli.metavars import argument, option
from waza.runner.cli.sync_command import run_sync
from waza.runner.engine.sink import output_stream

HELP = """Write CaptureResult or TrialResult lines in another tool's shape.

--to acp-harness: acp-harness's shapes, so its summarize, calibrate and compare
read them. Only acp-harness's fields are written, absent rather than null: permission and
event steps and user turns are left out, `score` is the aggregate verdict
(left out when it is an error or pending), and a TrialResult gets `passAtK` and
`passExpK` as numbers for the run's k and `trialNum` on each trial.

--to atif: each trial's trajectory as a Harbor Agent Trajectory Interchange
Format document (ATIF-v1.8, what Harbor 0.26 reads), one JSON document per
line: a CaptureResult gives one, a TrialResult one per trial. Steps are
regrouped into user turns and agent responses (reasoning, text, tool calls and
their results); usage becomes final_metrics; the verdict and what ATIF has no
field for are kept under extra.waza.

Examples:

  waza export results.jsonl --to acp-harness -o harness-results.jsonl

  waza trials prompts.jsonl --adapter exec -g ./grade.py -- ./agent.sh | waza export - --to acp-harness > trials.jsonl

  waza export results.jsonl --to atif -o trajectories.jsonl
"""

FORMATS = ("acp-harness", "atif")


def register(app: typer.Typer) -> None:
    @app.command("export", help=HELP)
    def export_cmd(
        results: Annotated[
            str, argument(metavar="RESULTS", value="FILE", help="CaptureResult or TrialResult JSONL, or - for stdin.")
        ] = "-",
        to: Annotated[str, option("--to", help="The shape to write: acp-harness or atif.")] = "",
        output: Annotated[str, option("-o", "--output", help="Write here instead of stdout.")] = "-",
    ) -> None:
        raise typer.Exit(run_sync(lambda: _export(results, to, output)))


def _export(results: str, to: str, output: str) -> int:
    if to not in FORMATS:
        raise ConfigError(f"--to takes {', '.join(FORMATS)}, got {to!r}" if to else "--to is required (acp-harness or atif)")
    check_readable(results)
    with output_stream(output) as out:
        for _, result in ResultsFile(results):
            for shaped in to_atif(result) if to == "atif" else [to_harness(result)]:
                out.write(dumps(shaped))
            out.flush()
    return 0
