"""Grading again, as a Python API: CaptureResult lines (a file or records) through other graders.

``agrade`` yields each regraded result as it finishes, ``grade`` returns them all;
``GradeRun`` splits the run into ``prepare`` (checks, opens nothing) and ``stream()``.
"""

from __future__ import annotations

import contextlib
import functools
import sys
from collections.abc import (
    AsyncGenerator,
    AsyncIterator,
    Callable,
    Iterable,
)
from pathlib import Path
from typing import TypedDict, Unpack

import msgspec

from waza.adapters.sandbox.bwrap import Sandbox, check_available, plan, wrap_command
from waza.graders._commands import AGENTS_CODE_CONFINEMENT
from waza.protocol.errors import ConfigError
from waza.protocol.jsonl import (
    DEFAULT_MAX_LINE,
    JsonlError,
    decode_line,
    display_name,
    iter_lines,
    open_input,
)
from waza.protocol.records import CaptureResult
from waza.runner.analysis.error_digest import ErrorDigest
from waza.runner.engine.inputs import in_batches, require_lines
from waza.runner.engine.outputs import Tally
from waza.runner.engine.pipeline import (
    Sink,
    entered,
    grade_stream,
)
from waza.runner.engine.run_setup import (
    as_stream,
    build_graders,
    collect,
    counted,
    discard,
    result_writer,
)
from waza.runner.engine.specs import Graders, Limits, Output, Timeouts
from waza.runner.grading.grader_runners import GraderRunner


def read_results(
    path: str, skipped: list[str] | None = None, max_line: int = DEFAULT_MAX_LINE
) -> AsyncGenerator[CaptureResult, None]:
    """CaptureResults from a JSONL file or ``-``; a bad line stops the run, or is skipped (and noted) when
    ``skipped`` is a list."""
    source = display_name(path)

    def lines(on_wait: Callable[[], None]) -> Iterable[tuple[int, bytes]]:
        with open_input(path, on_wait) as stream:
            yield from iter_lines(stream, source, max_line)

    async def decoded() -> AsyncGenerator[CaptureResult, None]:
        async for number, line in in_batches(lines):
            try:
                yield decode_line(source, number, line, CaptureResult)
            except JsonlError as exc:
                if skipped is None:
                    raise
                skipped.append(str(exc))

    return decoded()


class GradeOptions(TypedDict, total=False):
    """The keyword options of :func:`grade` and :func:`agrade`, spelled once; ``GradeRun.prepare`` takes the
    same (and gives their defaults), plus the command line's ``skip_invalid``."""

    timeouts: Timeouts
    concurrency: int
    output: Output | None
    limits: Limits
    #: A grader command that runs the agent's work (git's ``test_command``) runs inside this sandbox.
    sandbox: Sandbox | None


class GradeRun(msgspec.Struct):
    """Results already captured, graded again (earlier grades replaced)."""

    results: str | Iterable[CaptureResult]
    runners: list[GraderRunner]
    concurrency: int
    output: Output | None
    skipped: list[str] | None
    max_line: int = DEFAULT_MAX_LINE
    tally: Tally = msgspec.field(default_factory=Tally)
    #: Why results errored, for a one-look summary at the end.
    errors: ErrorDigest = msgspec.field(default_factory=ErrorDigest)
    #: Planned: a grader command that runs the agent's work (git's ``test_command``) runs in this sandbox.
    sandbox: Sandbox | None = None

    @classmethod
    def prepare(
        cls,
        results: str | Path | Iterable[CaptureResult],
        graders: Graders,
        *,
        timeouts: Timeouts = Timeouts(),
        concurrency: int = 1,
        output: Output | None = None,
        skip_invalid: bool = False,
        limits: Limits = Limits(),
        sandbox: Sandbox | None = None,
    ) -> GradeRun:
        if sandbox is not None:  # the agent's work is run again by a grader: in a sandbox like a capture's
            check_available()
            sandbox = plan(sandbox, [sys.executable])
        if output is not None:
            output.check()
            if output.resume:
                raise ConfigError("Output.resume applies to capture and trials, not grade")
        runners = build_graders(graders, timeouts)
        if not runners:
            raise ConfigError("grade needs at least one grader in graders=")
        if isinstance(results, (str, Path)):
            results = str(results)
            if results != "-":
                open_input(results).close()  # an unreadable input fails before the output is opened
            require_lines(results, "results")
        if output is not None:
            output.check()
        skipped: list[str] | None = [] if skip_invalid else None
        return cls(results, runners, concurrency, output, skipped, limits.line_bytes, sandbox=sandbox)

    async def stream(self) -> AsyncGenerator[CaptureResult, None]:
        async with contextlib.aclosing(as_stream(self.run_to)) as results:  # closed in this task when the caller stops early
            async for result in results:
                yield result

    async def run_to(self, sink: Sink[CaptureResult] = discard) -> None:
        """The whole run, each result handed to ``sink`` once written (see ``CaptureRun.run_to``)."""
        writer, progress = result_writer(self.output, None, "grade", self.tally, self.errors)
        source: AsyncIterator[CaptureResult]
        if isinstance(self.results, str):
            source = read_results(self.results, self.skipped, self.max_line)
        else:
            source = in_batches(self.results)

        each = counted(writer, self.tally, self.errors, sink)

        complete = False
        policy = self.sandbox
        confined = AGENTS_CODE_CONFINEMENT.set(None if policy is None else lambda argv, cwd: wrap_command(argv, policy, cwd))
        try:
            async with entered(self.runners):
                await grade_stream(source, self.runners, self.concurrency, each)
            complete = True
        finally:
            AGENTS_CODE_CONFINEMENT.reset(confined)
            if writer is not None:
                writer.close(complete=complete)
            progress.close()


async def agrade(
    results: str | Path | Iterable[CaptureResult],
    graders: Graders,
    **options: Unpack[GradeOptions],
) -> AsyncGenerator[CaptureResult, None]:
    """Grade CaptureResults again with ``graders`` (a JSONL file, ``-``, or records); yield each as it is graded."""
    run = GradeRun.prepare(results, graders, **options)
    async with contextlib.aclosing(run.stream()) as graded:  # closed in this task when the caller stops early
        async for result in graded:
            yield result


def grade(
    results: str | Path | Iterable[CaptureResult],
    graders: Graders,
    **options: Unpack[GradeOptions],
) -> list[CaptureResult]:
    """Blocking :func:`agrade`."""
    return collect(functools.partial(agrade, results, graders, **options), "grade")


__all__ = ["GradeOptions", "GradeRun", "agrade", "grade", "read_results"]
