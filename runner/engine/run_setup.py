"""Turning the Python API's specs into a run: the agent's adapter, the graders' runners, the prompts
source, the workspaces and settings, and the plumbing every run shares (a run's results as an async
iterator, its writer, the blocking form's collection).

``capture``, ``grade``, ``trials`` and the suites build on these; nothing here runs an agent.
"""

from __future__ import annotations

import contextlib
import functools
import os
import sys
import tempfile
from collections.abc import (
    AsyncGenerator,
    Awaitable,
    Callable,
    Iterable,
    Mapping,
)
from pathlib import Path
from typing import Any, TypeVar

import anyio
import msgspec

from waza.adapters import adapter_class
from waza.adapters.base import Adapter
from waza.adapters.sandbox.bwrap import check_available, hidden_places, plan, program_as_shown, too_high
from waza.adapters.sandbox.limits import describe
from waza.adapters.specs import HttpAgent, ProcessAgent, sandbox_of
from waza.protocol.errors import ConfigError
from waza.protocol.io.agent_command import resolve_agent_command
from waza.protocol.records import CaptureResult, PromptCase
from waza.runner.analysis.error_digest import ErrorDigest
from waza.runner.engine.blocking import run_blocking, single_error
from waza.runner.engine.datasets import TableOptions
from waza.runner.engine.inputs import PromptFile, check_resumed
from waza.runner.engine.outputs import ResultWriter, Tally
from waza.runner.engine.pipeline import (
    Settings,
    Sink,
    Workspaces,
)
from waza.runner.engine.progress import Progress, wanted
from waza.runner.engine.rerun import ErrorRecords
from waza.runner.engine.specs import AgentSpec, Graders, Limits, Output, Timeouts, Workspace, grader_specs
from waza.runner.grading.build import make_runner, resolve
from waza.runner.grading.grader_runners import GraderRunner
from waza.runner.grading.grader_specs import grader_files
from waza.runner.grading.judge_setup import finish as finish_judge

R = TypeVar("R")

#: Prompts: a JSONL file (``"-"``: stdin), or PromptCase records / dicts in memory.
Prompts = str | Path | Iterable[PromptCase | Mapping[str, Any]]


# --- turning specs into live objects --------------------------------------------------------------


def resolve_agent(agent: AgentSpec) -> tuple[type[Adapter[Any]], AgentSpec]:
    """The adapter class of an agent spec, and the spec as it runs (its command resolved, its sandbox planned),
    checked before anything runs."""
    cls = adapter_class(agent.adapter)
    command = list(agent.command)
    if cls.needs_command and not command:
        raise ConfigError(f"{type(agent).__name__}.command is empty: the {cls.name} adapter needs an agent command")
    if not cls.needs_command and command:
        raise ConfigError(
            f"{type(agent).__name__}.command: the {cls.name} adapter runs no agent command, but one was given: {' '.join(command)!r}"
        )
    if command:
        agent = msgspec.structs.replace(agent, command=tuple(resolve_agent_command(command)))
    cls.check(agent)
    if isinstance(agent, ProcessAgent) and agent.sandbox is not None:
        check_available()  # no bubblewrap or no namespaces here: one clear line before anything runs
        # what every sandbox of the run shows, decided once from this command line, before any agent runs
        planned = plan(agent.sandbox, cls.agent_command(agent))
        agent = msgspec.structs.replace(agent, sandbox=planned, command=tuple(program_as_shown(list(agent.command))))
        if planned.limits:
            say_limits()
    if isinstance(agent, HttpAgent) and agent.local_model:  # the runner owns the server, the adapter only sees its URL
        from waza.runner.local_model.server import resolve_model, with_local_model

        cls = with_local_model(resolve_model(Path(agent.model) if agent.model else None, option="HttpAgent.model"))
    return cls, agent


@functools.cache
def say_limits() -> None:
    """Say once on stderr which mechanism holds the sandbox's limits on this machine."""
    print(describe(), file=sys.stderr)


def build_graders(graders: Graders, timeouts: Timeouts) -> list[GraderRunner]:
    """One checked runner per grader spec (ConfigError on the first problem, or on two graders of one name)."""
    resolved = [resolve(g, timeout=timeouts.grader) for g in grader_specs(graders)]
    seen: set[str | None] = set()
    for spec in resolved:
        if spec.name in seen:
            raise ConfigError(f"two graders are named {spec.name!r}; give one another GraderBase.name")
        seen.add(spec.name)
    return [finish_judge(make_runner(spec)) for spec in resolved]


def workspaces_of(workspace: Workspace, *, fresh: bool = False, agent: AgentSpec | None = None) -> Workspaces:
    """Where the prompts run. A sandboxed ``agent`` with no workspace chosen gets a fresh temporary one
    per prompt: the current directory (the home, the prompts, the graders) is never its default."""
    if getattr(agent, "sandbox", None) is not None and workspace.cwd is None and workspace.root is None:
        fresh = True
    if workspace.root is not None:
        _check_writable(workspace.root)
    return Workspaces(cwd=workspace.cwd or Path.cwd(), root=workspace.root, fresh=workspace.fresh or fresh, keep=workspace.keep)


def _check_writable(root: Path) -> None:
    """Workspace.root is made, and a directory made and removed in it, before the run: a folder waza cannot
    write in (read-only, another owner's, a file on the way) is one error now rather than one per prompt."""
    try:
        root.mkdir(parents=True, exist_ok=True)
        os.rmdir(tempfile.mkdtemp(prefix=".waza-probe-", dir=root))
    except OSError as exc:
        why = "it is not a directory" if isinstance(exc, (FileExistsError, NotADirectoryError)) else exc.strerror or str(exc)
        raise ConfigError(f"cannot make workspaces in {root}: {why}", field="Workspace.root") from None


def check_sandbox_workspaces(settings: Settings, files: Mapping[str, str | Path | None]) -> None:
    """ConfigError when a sandboxed agent's workspace would be, or hold, ``/``, a home, a temporary
    folder of the host, or one of ``files`` (the results, the prompts) or a grader's file: the agent
    could read or rewrite them."""
    if sandbox_of(settings.agent) is None:
        return
    places = [("Workspace.root", settings.workspaces.root)] if settings.workspaces.root is not None else []
    if not places and not settings.workspaces.fresh:
        places = [("Workspace.cwd", settings.workspaces.cwd)]
    graders = [p for g in settings.graders for p in grader_files(g.spec) if os.path.isfile(p)]
    named = [(what, f) for what, f in files.items() if f and str(f) != "-"] + [("grader", g) for g in graders]
    for field, place in places:
        real = os.path.realpath(place)
        if too_high(real, hidden_places()):
            raise ConfigError(
                f"{place} is or holds a home or a temporary folder of the host; with a sandbox, "
                "give the agent a workspace of its own",
                field=field,
            )
        for what, path in named:
            target = os.path.realpath(path)
            if target == real or target.startswith(real.rstrip("/") + "/"):
                raise ConfigError(
                    f"{place} holds the {what} {path}; with a sandbox the agent could rewrite it: "
                    "give the agent a workspace of its own",
                    field=field,
                )


def run_settings(
    agent: AgentSpec,
    runners: list[GraderRunner],
    timeouts: Timeouts,
    concurrency: int,
    workspaces: Workspaces,
    limits: Limits = Limits(),
) -> Settings:
    adapter, agent = resolve_agent(agent)
    sandbox = sandbox_of(agent)
    if concurrency < 1:
        raise ConfigError(f"concurrency must be at least 1, got {concurrency}", field="concurrency")
    return Settings(
        adapter=adapter,
        agent=agent,
        graders=runners,
        concurrency=concurrency,
        timeout=timeouts.prompt,
        workspaces=workspaces,
        limits=limits,
        grading_sandbox=None if sandbox is None else plan(sandbox, [sys.executable]),
    )


def as_case(value: PromptCase | Mapping[str, Any], where: str) -> PromptCase:
    if isinstance(value, PromptCase):
        return value
    try:
        return PromptCase.from_dict(dict(value))
    except Exception as exc:  # a bad record is the caller's config error
        raise ConfigError(str(exc), source=where) from None


class PromptSource:
    """A prompts source checked whole before the run: its size, and its cases as a stream."""

    def __init__(
        self, prompts: Prompts, timeouts: Timeouts, table: TableOptions | None = None, limits: Limits = Limits()
    ) -> None:
        self.path: str | None = None
        self.file: PromptFile | None = None
        self.cases: list[PromptCase] = []
        if isinstance(prompts, (str, Path)):
            self.path = str(prompts)
            self.file = PromptFile(self.path, table, timeout_unit=timeouts.prompt_unit, max_line=limits.line_bytes)
            self.ids = self.file.scan()
            self.total: int | None = None if self.ids is None else len(self.ids)
            return
        seen: set[str] = set()
        for i, value in enumerate(prompts):
            case = as_case(value, f"prompts[{i}]")
            if case.id in seen:
                raise ConfigError(f"duplicate id {case.id!r}", source=f"prompts[{i}]", field="id")
            seen.add(case.id)
            self.cases.append(case)
        if not self.cases:
            raise ConfigError("no prompts given")
        self.ids = seen
        self.total = len(self.cases)

    def check_resumed(self, output: str, done: set[str], rerun: ErrorRecords | None = None) -> None:
        """Refuse to resume into an output holding results of prompts this source does not have, and to
        remove error records (``rerun``) whose prompts a stream might not bring (they would be lost)."""
        if rerun is not None and rerun.ids and self.ids is None:
            raise ConfigError(
                "Output.retry_errors needs the prompts in a file, not a stream: their error records are removed"
                " before the prompts are read, and a stream cannot be checked ahead for their ids"
            )
        check_resumed(output, (done | rerun.ids) if rerun is not None else done, self.ids, self.path or "the prompts given")

    async def stream(self, keep: Callable[[PromptCase], bool]) -> AsyncGenerator[PromptCase, None]:
        if self.file is not None:
            async for case in self.file.stream(keep):
                yield case
            return
        for case in self.cases:
            if keep(case):
                yield case


async def as_stream(run: Callable[[Sink[R]], Awaitable[None]]) -> AsyncGenerator[R, None]:
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


async def discard(_result: object) -> None:
    """A sink that keeps nothing (the CLI reads the tally and the output file, not the results)."""


def counted(writer: ResultWriter | None, tally: Tally, errors: ErrorDigest, sink: Sink[CaptureResult]) -> Sink[CaptureResult]:
    """A sink that writes each result (the writer counts what it writes) or, with no writer, counts it into
    ``tally`` and ``errors`` itself, then hands it on to ``sink``."""

    async def each(result: CaptureResult) -> None:
        if writer is not None:
            writer.write(result)
        else:
            tally.add(result.status, result.score.score if result.score else None)
            errors.add(result)
        await sink(result)

    return each


def result_writer(
    output: Output | None,
    total: int | None,
    label: str,
    tally: Tally,
    errors: ErrorDigest,
    rerun: ErrorRecords | None = None,
) -> tuple[ResultWriter | None, Progress]:
    """The run's writer (None without an output), counting what it writes into the run's ``tally`` and ``errors``;
    ``rerun``: the resumed output's error records, removed before the first result is written."""
    progress = Progress(total, enabled=wanted(output.progress) if output else False, label=label)
    if output is None:
        return None, progress
    first = rerun.remove if rerun is not None else None
    writer = ResultWriter(output.path, append=output.resume, progress=progress, tally=tally, errors=errors, first=first)
    return writer, progress


def collect(stream: Callable[[], AsyncGenerator[R, None]], name: str) -> list[R]:
    async def main() -> list[R]:
        async with contextlib.aclosing(stream()) as results:
            return [r async for r in results]

    return run_blocking(main, name)


__all__ = [
    "PromptSource",
    "Prompts",
    "as_case",
    "as_stream",
    "build_graders",
    "check_sandbox_workspaces",
    "collect",
    "counted",
    "discard",
    "resolve_agent",
    "result_writer",
    "run_settings",
    "workspaces_of",
]
