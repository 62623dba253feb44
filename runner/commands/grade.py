"""``waza grade``: apply graders to results already captured (stdin to stdout by default)."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Annotated

import typer

from waza.protocol.errors import ConfigError
from waza.protocol.jsonl import JsonlError, decode_line, display_name, iter_lines, open_input
from waza.protocol.records import CaptureResult

from ..cli_options import GraderOptions, OutputOptions, with_groups
from ..fanout import fan_out
from ..grader_runners import GraderRunner
from ..inputs import in_batches, require_lines
from ..outputs import ResultWriter, parse_gates
from ..pipeline import grade_result
from ..progress import Progress, wanted
from ..runtime import Interrupt, fail, run
from .capture import entered, finish

HELP = """Grade CaptureResult lines again with other graders; earlier grades are replaced.

Examples:

  cat results.jsonl | waza grade --grader ./other_grader.js > regraded.jsonl

  waza grade results.jsonl -g builtin:regex --grader-config '{"must_match": ["\\\\d+"]}' -o regraded.jsonl
"""


def register(app: typer.Typer) -> None:
    @app.command("grade", help=HELP)
    @with_groups(graders=GraderOptions, out=OutputOptions)
    def grade(
        results: Annotated[str, typer.Argument(help="CaptureResult JSONL, or - for stdin.")] = "-",
        concurrency: Annotated[int, typer.Option("-j", "--concurrency", help="Results graded at once.", min=1)] = 1,
        skip_invalid: Annotated[bool, typer.Option("--skip-invalid", help="Skip (and count) bad lines instead of stopping.")] = False,
        *,
        graders: GraderOptions,
        out: OutputOptions,
    ) -> None:
        raise typer.Exit(run(lambda interrupt: _grade(results, concurrency, skip_invalid, graders, out, interrupt)))


def read_results(path: str, skipped: list[str]) -> AsyncIterator[CaptureResult]:
    """CaptureResults from a file or stdin; bad lines stop the run, or are skipped when asked."""
    source = display_name(path)

    def lines() -> object:
        stream = open_input(path)
        try:
            yield from iter_lines(stream, source)
        finally:
            if path != "-":
                stream.close()

    async def decoded() -> AsyncIterator[CaptureResult]:
        async for number, line in in_batches(lines()):  # type: ignore[arg-type]
            try:
                yield decode_line(source, number, line, CaptureResult)
            except JsonlError as exc:
                if skipped is None:
                    raise
                skipped.append(str(exc))

    return decoded()


async def _grade(
    results: str, concurrency: int, skip_invalid: bool, graders: GraderOptions, out: OutputOptions, interrupt: Interrupt
) -> int:
    if out.resume:
        raise ConfigError("--resume applies to capture and trials, not grade")
    runners = graders.runners()
    if not runners:
        raise ConfigError("grade needs at least one --grader")
    gates = parse_gates(out.fail_under)
    if results != "-":
        open_input(results).close()  # an unreadable input fails before the output is opened
    require_lines(results, "results")
    progress = Progress(None, enabled=wanted(out.progress), label="grade")
    writer = ResultWriter(out.output, progress=progress)
    skipped: list[str] = [] if skip_invalid else None  # type: ignore[assignment]
    interrupt.summary = lambda: f"{writer.tally.total} results written to {out.output}"
    try:
        async with entered(runners):
            await grade_stream(read_results(results, skipped), runners, concurrency, writer)
    finally:
        writer.close()
        progress.close()
    if skipped:
        print(f"waza: skipped {len(skipped)} invalid lines; first: {skipped[0]}", file=sys.stderr)
    elif writer.tally.total == 0:
        return fail(f"{display_name(results)}: holds no results")
    return finish(writer, gates)


async def grade_stream(
    results: AsyncIterator[CaptureResult], runners: list[GraderRunner], concurrency: int, writer: ResultWriter
) -> None:
    """Grade with ``concurrency`` workers between bounded streams; the writer sees completion order."""
    if concurrency == 1:
        async for result in results:
            writer.write(await grade_result(result, runners))
        return

    @contextlib.asynccontextmanager
    async def worker() -> AsyncIterator[Callable[[CaptureResult], Awaitable[CaptureResult]]]:
        yield lambda result: grade_result(result, runners)

    await fan_out(results, worker, concurrency, writer)
