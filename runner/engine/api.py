"""waza's engine as a Python API: typed specs in, typed records out.

``run_one`` is the unit of work: one prompt, one trial, through one agent and
its graders, with no state outside the call; its arguments are picklable specs
and its answer is a CaptureResult, so it can run in another process or on
another machine. ``capture``, ``trials`` and ``grade`` are fan-out, resume and
an output sink around the same pipeline.

Each has an async form that yields records as they finish, for use inside an
event loop that is already running (``acapture``, ``atrials``, ``agrade``,
``arun_one``), and a blocking form for scripts and notebooks that returns them
all. Leave an async iterator early inside ``contextlib.aclosing(...)`` so its
agents and graders are stopped at once. Everything that can be wrong with the
specs raises ConfigError before any agent runs or any output is touched.

Trials (``TrialsRun``, ``trials``, ``atrials``, ``summarize_trials``) are in
:mod:`.api_trials`, so a capture or a grade does not load the trial records and
statistics. The ``Run`` classes (``CaptureRun``, ``TrialsRun``, ``GradeRun``) are the same
runs split in two: ``prepare`` checks and opens nothing, ``stream()`` runs;
between them the caller can read the totals (the CLI uses them for its progress
and its exit code).
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
from collections.abc import (
    AsyncGenerator,
    AsyncIterator,
    Awaitable,
    Callable,
    Iterable,
    Mapping,
)
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import anyio

from waza.adapters import adapter_class
from waza.adapters.base import Adapter, AdapterOptions
from waza.protocol.agent_command import resolve_agent_command
from waza.protocol.errors import ConfigError
from waza.protocol.jsonl import (
    DEFAULT_MAX_LINE,
    JsonlError,
    decode_line,
    display_name,
    iter_lines,
    open_input,
)
from waza.protocol.records import CaptureResult, PromptCase
from waza.protocol.sandbox import check_available
from waza.runner.analysis.error_digest import ErrorDigest
from waza.runner.engine.blocking import run_blocking, single_error
from waza.runner.engine.datasets import TableOptions
from waza.runner.engine.inputs import check_resumed, in_batches, prescan, prompt_cases, require_lines
from waza.runner.engine.outputs import ResultWriter, Tally, resume_state
from waza.runner.engine.pipeline import (
    Executor,
    Settings,
    Sink,
    WorkItem,
    Workspaces,
    entered,
    grade_stream,
    open_adapter,
    run_item,
    run_items,
)
from waza.runner.engine.progress import Progress, wanted
from waza.runner.engine.specs import AgentSpec, Graders, Limits, Output, Timeouts, Workspace, grader_specs
from waza.runner.grading.build import make_runner
from waza.runner.grading.grader_runners import GraderRunner
from waza.runner.grading.judges import finish as finish_judge

R = TypeVar("R")

#: Prompts: a JSONL file (``"-"``: stdin), or PromptCase records / dicts in memory.
Prompts = str | Path | Iterable[PromptCase | Mapping[str, Any]]


# --- turning specs into live objects --------------------------------------------------------------


def resolve_agent(agent: AgentSpec) -> tuple[type[Adapter], list[str], AdapterOptions]:
    """The adapter class, command and options of an agent spec, checked before anything runs."""
    cls = adapter_class(agent.adapter)
    command = list(agent.command)
    opts = agent.options()
    if cls.needs_command and not command:
        raise ConfigError(f"{type(agent).__name__}.command is empty: the {cls.name} adapter needs an agent command")
    if not cls.needs_command and command:
        raise ConfigError(
            f"{type(agent).__name__}.command: the {cls.name} adapter runs no agent command, but one was given: {' '.join(command)!r}"
        )
    if command:
        command = resolve_agent_command(command)
    cls.check(command, opts)
    if opts.sandbox is not None:
        check_available()  # no bubblewrap or no namespaces here: one clear line before anything runs
    if opts.local_model:  # the runner owns the server: the adapter only sees its URL
        from waza.runner.local_model.server import resolve_model, with_local_model

        cls = with_local_model(cls, resolve_model(Path(opts.model) if opts.model else None, option="HttpAgent.model"))
    return cls, command, opts


def build_graders(graders: Graders, timeouts: Timeouts) -> list[GraderRunner]:
    """One checked runner per grader spec (ConfigError on the first problem, or on two graders of one name)."""
    specs = grader_specs(graders)
    internal = [g.internal() for g in specs]
    seen: set[str] = set()
    for spec in internal:
        if spec.name in seen:
            raise ConfigError(f"two graders are named {spec.name!r}; give one another GraderBase.name")
        seen.add(spec.name)
        if spec.timeout is None:
            spec.timeout = timeouts.grader
    return [
        finish_judge(make_runner(spec, isolate=getattr(g, "isolate", False))) for g, spec in zip(specs, internal, strict=True)
    ]


def _workspaces(workspace: Workspace, *, fresh: bool = False) -> Workspaces:
    if workspace.root is not None:
        workspace.root.mkdir(parents=True, exist_ok=True)
    return Workspaces(cwd=workspace.cwd or Path.cwd(), root=workspace.root, fresh=workspace.fresh or fresh, keep=workspace.keep)


def _settings(
    agent: AgentSpec,
    runners: list[GraderRunner],
    timeouts: Timeouts,
    concurrency: int,
    workspaces: Workspaces,
    limits: Limits = Limits(),
) -> Settings:
    adapter, command, opts = resolve_agent(agent)
    if concurrency < 1:
        raise ConfigError(f"concurrency must be at least 1, got {concurrency}", field="concurrency")
    return Settings(
        adapter=adapter,
        command=command,
        opts=opts,
        graders=runners,
        concurrency=concurrency,
        timeout=timeouts.prompt,
        workspaces=workspaces,
        limits=limits,
    )


def _case(value: PromptCase | Mapping[str, Any], where: str) -> PromptCase:
    if isinstance(value, PromptCase):
        return value
    try:
        return PromptCase.from_dict(dict(value))
    except Exception as exc:  # noqa: BLE001 - a bad record is the caller's config error
        raise ConfigError(str(exc), source=where) from None


class _Prompts:
    """A prompts source checked whole before the run: its size, and its cases as a stream."""

    def __init__(
        self, prompts: Prompts, timeouts: Timeouts, table: TableOptions | None = None, limits: Limits = Limits()
    ) -> None:
        self.path: str | None = None
        self.unit = timeouts.prompt_unit
        self.table = table
        self.max_line = limits.line_bytes
        self.cases: list[PromptCase] = []
        if isinstance(prompts, (str, Path)):
            self.path = str(prompts)
            self.ids = prescan(self.path, self.unit, table, self.max_line)
            self.total: int | None = None if self.ids is None else len(self.ids)
            return
        seen: set[str] = set()
        for i, value in enumerate(prompts):
            case = _case(value, f"prompts[{i}]")
            if case.id in seen:
                raise ConfigError(f"duplicate id {case.id!r}", source=f"prompts[{i}]", field="id")
            seen.add(case.id)
            self.cases.append(case)
        if not self.cases:
            raise ConfigError("no prompts given")
        self.ids = seen
        self.total = len(self.cases)

    def check_resumed(self, output: str, done: set[str]) -> None:
        """Refuse to resume into an output holding results of prompts this source does not have."""
        check_resumed(output, done, self.ids, self.path or "the prompts given")

    async def stream(self, keep: Callable[[PromptCase], bool]) -> AsyncGenerator[PromptCase, None]:
        if self.path is not None:
            async for case in prompt_cases(self.path, keep, self.unit, self.table, self.max_line):
                yield case
            return
        for case in self.cases:
            if keep(case):
                yield case


async def _as_stream(run: Callable[[Sink[R]], Awaitable[None]]) -> AsyncGenerator[R, None]:
    """Turn a run that hands each result to a sink into an async iterator (a result waits to be taken)."""
    send, receive = anyio.create_memory_object_stream[R](0)

    async def body() -> None:
        async with send:
            await run(send.send)

    with single_error():
        async with anyio.create_task_group() as tg, receive:
            tg.start_soon(body)
            try:
                async for result in receive:
                    yield result
            except GeneratorExit:  # the caller stopped early (aclose): stop the agents and graders, then return
                tg.cancel_scope.cancel()


async def _discard(_result: object) -> None:
    """A sink that keeps nothing (the CLI reads the tally and the output file, not the results)."""


def _writer(
    output: Output | None, total: int | None, label: str, tally: Tally, errors: ErrorDigest
) -> tuple[ResultWriter | None, Progress]:
    """The run's writer (None without an output), counting what it writes into the run's ``tally`` and ``errors``."""
    progress = Progress(total, enabled=wanted(output.progress) if output else False, label=label)
    if output is None:
        return None, progress
    return ResultWriter(output.path, append=output.resume, progress=progress, tally=tally, errors=errors), progress


# --- capture --------------------------------------------------------------------------------------


@dataclass
class CaptureRun:
    """Prompts through an agent and graders; one CaptureResult per prompt, as each finishes."""

    prompts: _Prompts
    settings: Settings
    runners: list[GraderRunner]
    output: Output | None
    done: set[str]
    #: Prompts skipped because the output already held them (counted as they are read).
    skipped: list[str] = dataclasses.field(default_factory=list)
    #: Where the items run: this process (``run_items``) or Ray tasks (``runner.executors``).
    executor: Executor = run_items
    tally: Tally = dataclasses.field(default_factory=Tally)
    #: Why results errored, for a one-look summary at the end.
    errors: ErrorDigest = dataclasses.field(default_factory=ErrorDigest)

    @classmethod
    def prepare(
        cls,
        prompts: Prompts,
        agent: AgentSpec,
        graders: Graders = (),
        *,
        timeouts: Timeouts = Timeouts(),
        concurrency: int = 1,
        workspace: Workspace = Workspace(),
        output: Output | None = None,
        table: TableOptions | None = None,
        executor: Executor = run_items,
        limits: Limits = Limits(),
    ) -> CaptureRun:
        if output is not None:
            output.check()
        source = _Prompts(prompts, timeouts, table, limits)
        settings = _settings(agent, [], timeouts, concurrency, _workspaces(workspace), limits)
        settings.graders = build_graders(graders, timeouts)
        done: set[str] = set()
        if output and output.resume:
            done = {key[0] for key in resume_state(output.path, max_line=limits.line_bytes) if isinstance(key[0], str)}
            source.check_resumed(output.path, done)
        return cls(source, settings, settings.graders, output, done, executor=executor)

    @property
    def todo(self) -> int | None:
        return None if self.prompts.total is None else self.prompts.total - len(self.done)

    async def stream(self) -> AsyncGenerator[CaptureResult, None]:
        async with contextlib.aclosing(_as_stream(self.run_to)) as results:  # closed in this task when the caller stops early
            async for result in results:
                yield result

    async def run_to(self, sink: Sink[CaptureResult] = _discard) -> None:
        """The whole run, each result handed to ``sink`` once written: the CLI's path, which takes
        no result and so skips ``stream``'s hand-over (two event-loop switches per result)."""
        writer, progress = _writer(self.output, self.todo, "capture", self.tally, self.errors)

        def keep(case: PromptCase) -> bool:
            if case.id in self.done:
                self.skipped.append(case.id)  # counted only when the prompt is really there
                return False
            return True

        async def items() -> AsyncGenerator[WorkItem, None]:
            async for case in self.prompts.stream(keep):
                yield WorkItem(case=case)

        async def each(result: CaptureResult) -> None:
            if writer is not None:
                writer.write(result)  # counted in self.tally and self.errors as it is written
            else:
                self.tally.add(result.status, result.score.score if result.score else None)
                self.errors.add(result)
            await sink(result)

        complete = False
        try:
            async with entered(self.runners):
                await self.executor(items(), self.settings, each)
            complete = True
        finally:
            if writer is not None:
                writer.close(complete=complete)
            progress.close()


async def acapture(
    prompts: Prompts,
    agent: AgentSpec,
    graders: Graders = (),
    *,
    timeouts: Timeouts = Timeouts(),
    concurrency: int = 1,
    workspace: Workspace = Workspace(),
    output: Output | None = None,
    limits: Limits = Limits(),
) -> AsyncGenerator[CaptureResult, None]:
    """Run every prompt through the agent and the graders; yield each CaptureResult as it finishes.

    With ``output``, each result is also written (secrets masked) to that JSONL
    file as it finishes; ``Output(path, resume=True)`` skips prompts already there.
    """
    run = CaptureRun.prepare(
        prompts, agent, graders, timeouts=timeouts, concurrency=concurrency, workspace=workspace, output=output, limits=limits
    )
    async with contextlib.aclosing(run.stream()) as results:  # closed in this task when the caller stops early
        async for result in results:
            yield result


def capture(
    prompts: Prompts,
    agent: AgentSpec,
    graders: Graders = (),
    *,
    timeouts: Timeouts = Timeouts(),
    concurrency: int = 1,
    workspace: Workspace = Workspace(),
    output: Output | None = None,
    limits: Limits = Limits(),
) -> list[CaptureResult]:
    """Blocking :func:`acapture`: every CaptureResult, in the order they finished."""
    return _collect(
        functools.partial(
            acapture,
            prompts,
            agent,
            graders,
            timeouts=timeouts,
            concurrency=concurrency,
            workspace=workspace,
            output=output,
            limits=limits,
        ),
        "capture",
    )


def _collect(stream: Callable[[], AsyncGenerator[R, None]], name: str) -> list[R]:
    async def main() -> list[R]:
        async with contextlib.aclosing(stream()) as results:
            return [r async for r in results]

    return run_blocking(main, name)


# --- one prompt -----------------------------------------------------------------------------------


async def arun_one(
    case: PromptCase | Mapping[str, Any],
    agent: AgentSpec,
    graders: Graders = (),
    *,
    trial: int | None = None,
    timeouts: Timeouts = Timeouts(),
    workspace: Workspace = Workspace(fresh=True),
    prepare: Callable[[Path], None] | None = None,
    limits: Limits = Limits(),
) -> CaptureResult:
    """One prompt (one trial) through a fresh agent and the graders: the unit a cluster worker runs.

    No state outlives the call: the agent is started and stopped, worker graders
    likewise, and a fresh workspace (the default) is removed after grading.
    Agent and grader faults are in the record (status ``error``), not raised.
    ``prepare`` fills the workspace before the agent starts (instead of copying
    ``workspace.template``: a suite task's fixtures, or files shipped to a worker).
    """
    prompt = _case(case, "case")
    settings = _settings(agent, build_graders(graders, timeouts), timeouts, 1, _workspaces(workspace), limits)
    if prepare is None:
        from waza.runner.engine.trial_runs import seeder

        prepare = seeder(workspace.template)
    async with entered(settings.graders), open_adapter(settings) as adapter:
        return await run_item(adapter, WorkItem(case=prompt, trial=trial, prepare=prepare), settings)


def run_one(
    case: PromptCase | Mapping[str, Any],
    agent: AgentSpec,
    graders: Graders = (),
    *,
    trial: int | None = None,
    timeouts: Timeouts = Timeouts(),
    workspace: Workspace = Workspace(fresh=True),
    prepare: Callable[[Path], None] | None = None,
    limits: Limits = Limits(),
) -> CaptureResult:
    """Blocking :func:`arun_one`."""
    return run_blocking(
        functools.partial(
            arun_one, case, agent, graders, trial=trial, timeouts=timeouts, workspace=workspace, prepare=prepare, limits=limits
        ),
        "run_one",
    )


# --- grading results that exist -------------------------------------------------------------------


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


@dataclass
class GradeRun:
    """Results already captured, graded again (earlier grades replaced)."""

    results: str | Iterable[CaptureResult]
    runners: list[GraderRunner]
    concurrency: int
    output: Output | None
    skipped: list[str] | None
    max_line: int = DEFAULT_MAX_LINE
    tally: Tally = dataclasses.field(default_factory=Tally)
    #: Why results errored, for a one-look summary at the end.
    errors: ErrorDigest = dataclasses.field(default_factory=ErrorDigest)

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
    ) -> GradeRun:
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
        return cls(results, runners, concurrency, output, [] if skip_invalid else None, limits.line_bytes)

    async def stream(self) -> AsyncGenerator[CaptureResult, None]:
        async with contextlib.aclosing(_as_stream(self.run_to)) as results:  # closed in this task when the caller stops early
            async for result in results:
                yield result

    async def run_to(self, sink: Sink[CaptureResult] = _discard) -> None:
        """The whole run, each result handed to ``sink`` once written (see ``CaptureRun.run_to``)."""
        writer, progress = _writer(self.output, None, "grade", self.tally, self.errors)
        source: AsyncIterator[CaptureResult]
        if isinstance(self.results, str):
            source = read_results(self.results, self.skipped, self.max_line)
        else:
            source = in_batches(self.results)

        async def each(result: CaptureResult) -> None:
            if writer is not None:
                writer.write(result)  # counted in self.tally and self.errors as it is written
            else:
                self.tally.add(result.status, result.score.score if result.score else None)
                self.errors.add(result)
            await sink(result)

        complete = False
        try:
            async with entered(self.runners):
                await grade_stream(source, self.runners, self.concurrency, each)
            complete = True
        finally:
            if writer is not None:
                writer.close(complete=complete)
            progress.close()


async def agrade(
    results: str | Path | Iterable[CaptureResult],
    graders: Graders,
    *,
    timeouts: Timeouts = Timeouts(),
    concurrency: int = 1,
    output: Output | None = None,
    limits: Limits = Limits(),
) -> AsyncGenerator[CaptureResult, None]:
    """Grade CaptureResults again with ``graders`` (a JSONL file, ``-``, or records); yield each as it is graded."""
    run = GradeRun.prepare(results, graders, timeouts=timeouts, concurrency=concurrency, output=output, limits=limits)
    async with contextlib.aclosing(run.stream()) as graded:  # closed in this task when the caller stops early
        async for result in graded:
            yield result


def grade(
    results: str | Path | Iterable[CaptureResult],
    graders: Graders,
    *,
    timeouts: Timeouts = Timeouts(),
    concurrency: int = 1,
    output: Output | None = None,
    limits: Limits = Limits(),
) -> list[CaptureResult]:
    """Blocking :func:`agrade`."""
    return _collect(
        functools.partial(agrade, results, graders, timeouts=timeouts, concurrency=concurrency, output=output, limits=limits),
        "grade",
    )


__all__ = [
    "CaptureRun",
    "GradeRun",
    "Prompts",
    "acapture",
    "agrade",
    "arun_one",
    "build_graders",
    "capture",
    "grade",
    "read_results",
    "resolve_agent",
    "run_one",
]
