"""``waza grade``: apply graders to results already captured (stdin to stdout by default)."""

from __future__ import annotations

import sys
from typing import Annotated

import typer

from waza.adapters.sandbox.bwrap import Sandbox
from waza.protocol.errors import ConfigError
from waza.protocol.jsonl import display_name
from waza.runner.cli.metavars import argument, option
from waza.runner.cli.option_values import parse_gates
from waza.runner.cli.options import GraderOptions, OutputOptions, with_groups
from waza.runner.cli.run_summary import finish_run
from waza.runner.cli.runtime import Interrupt, fail, run
from waza.runner.engine.grade import GradeRun
from waza.runner.engine.specs import Timeouts
from waza.runner.wording import count

HELP = """Grade CaptureResult lines again with other graders; earlier grades are replaced.

Examples:

  cat results.jsonl | waza grade --grader ./other_grader.js > regraded.jsonl

  waza grade results.jsonl --sandbox bwrap -g git=builtin:git --grader-config 'git={"test_command": "./run_tests.sh"}'

  waza grade results.jsonl -g builtin:regex --grader-config '{"must_match": ["\\\\d+"]}' -o regraded.jsonl
"""


def register(app: typer.Typer) -> None:
    @app.command("grade", help=HELP)
    @with_groups(graders=GraderOptions, out=OutputOptions)
    def grade(
        results: Annotated[str, argument(metavar="RESULTS", value="FILE", help="CaptureResult JSONL, or - for stdin.")] = "-",
        concurrency: Annotated[int, option("-j", "--concurrency", help="Results graded at once.", min=1)] = 1,
        skip_invalid: Annotated[bool, option("--skip-invalid", help="Skip (and count) bad lines instead of stopping.")] = False,
        sandbox: Annotated[
            str | None,
            option("--sandbox", help="bwrap: a grader command running the agent's work (git test_command) runs sandboxed."),
        ] = None,
        *,
        graders: GraderOptions,
        out: OutputOptions,
    ) -> None:
        raise typer.Exit(run(lambda interrupt: _grade(results, concurrency, skip_invalid, sandbox, graders, out, interrupt)))


async def _grade(
    results: str,
    concurrency: int,
    skip_invalid: bool,
    sandbox: str | None,
    graders: GraderOptions,
    out: OutputOptions,
    interrupt: Interrupt,
) -> int:
    gates = parse_gates(out.fail_under)
    if sandbox not in (None, "bwrap"):
        raise ConfigError(f"--sandbox takes bwrap (bubblewrap), got {sandbox!r}")
    grading = GradeRun.prepare(
        results,
        graders.specs(),
        timeouts=Timeouts(grader=graders.grader_timeout),
        concurrency=concurrency,
        output=out.spec(),
        limits=out.limits(),
        skip_invalid=skip_invalid,
        sandbox=None if sandbox is None else Sandbox(),
    )
    interrupt.summary = lambda: f"{count(grading.tally.total, 'result')} written to {out.output}"
    await grading.run_to()
    if grading.skipped:
        print(f"waza: skipped {len(grading.skipped)} invalid lines; first: {grading.skipped[0]}", file=sys.stderr)
    elif grading.tally.total == 0:
        return fail(f"{display_name(results)}: holds no results")
    return finish_run(grading.tally, gates, errors=grading.errors)
