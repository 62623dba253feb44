"""Capture, as a Python API: prompts through an agent and its graders, one CaptureResult per prompt.

``run_one`` is the unit of work: one prompt, one trial, through one agent and
its graders, with no state outside the call; its arguments are picklable specs
and its answer is a CaptureResult, so it can run in another process or on
another machine. ``capture`` is fan-out, resume and an output sink around the
same pipeline.

Each has an async form that yields records as they finish, for use inside an
event loop that is already running (``acapture``, ``arun_one``), and a blocking
form for scripts that returns them all. Leave an async iterator early inside
``contextlib.aclosing(...)`` so its agents and graders are stopped at once.
Everything that can be wrong with the specs raises ConfigError before any agent
runs or any output is touched. ``CaptureRun`` is the run split in two:
``prepare`` checks and opens nothing, ``stream()`` runs; between them the caller
can read the totals (the CLI uses them for its progress and its exit code).
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import (
    AsyncGenerator,
    Callable,
    Mapping,
)
from pathlib import Path
from typing import Any, TypedDict, Unpack

import msgspec

from waza.protocol.errors import ConfigError
from waza.protocol.records import CaptureResult, PromptCase
from waza.runner.analysis.error_digest import ErrorDigest
from waza.runner.engine.blocking import run_blocking
from waza.runner.engine.datasets import TableOptions
from waza.runner.engine.outputs import Tally, resume_state
from waza.runner.engine.pipeline import (
    Executor,
    Settings,
    Sink,
    WorkItem,
    entered,
    open_adapter,
    run_item,
    run_items,
)
from waza.runner.engine.rerun import ErrorRecords
from waza.runner.engine.run_setup import (
    Prompts,
    PromptSource,
    as_case,
    as_stream,
    build_graders,
    check_sandbox_workspaces,
    collect,
    counted,
    discard,
    result_writer,
    run_settings,
    workspaces_of,
)
from waza.runner.engine.specs import AgentSpec, Graders, Limits, Output, Timeouts, Workspace
from waza.runner.grading.grader_runners import GraderRunner

# --- capture --------------------------------------------------------------------------------------


class CaptureOptions(TypedDict, total=False):
    """The keyword options of :func:`capture` and :func:`acapture`, spelled once; ``CaptureRun.prepare``
    takes the same (and gives their defaults), plus the command line's ``table`` and ``executor``."""

    timeouts: Timeouts
    concurrency: int
    workspace: Workspace
    output: Output | None
    limits: Limits


class RunOneOptions(TypedDict, total=False):
    """The keyword options of :func:`run_one`: those of :func:`arun_one` (which gives their defaults)."""

    trial: int | None
    timeouts: Timeouts
    workspace: Workspace
    prepare: Callable[[Path], None] | None
    limits: Limits


class CaptureRun(msgspec.Struct):
    """Prompts through an agent and graders; one CaptureResult per prompt, as each finishes."""

    prompts: PromptSource
    settings: Settings
    runners: list[GraderRunner]
    output: Output | None
    done: set[str]
    #: Prompts skipped because the output already held them (counted as they are read).
    skipped: list[str] = msgspec.field(default_factory=list)
    #: Where the items run: this process (``run_items``) or Ray tasks (``runner.ray_cluster``).
    executor: Executor = run_items
    tally: Tally = msgspec.field(default_factory=Tally)
    #: Why results errored, for a one-look summary at the end.
    errors: ErrorDigest = msgspec.field(default_factory=ErrorDigest)
    #: With ``Output.retry_errors``: the output's error records, run again (removed at the first result).
    rerun: ErrorRecords | None = None
    #: Fills each fresh workspace: a copy of ``Workspace.template`` (``seeder``), or None.
    seed: Callable[[Path], None] | None = None

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
        source = PromptSource(prompts, timeouts, table, limits)
        settings = run_settings(agent, [], timeouts, concurrency, workspaces_of(workspace, agent=agent), limits)
        settings.graders = build_graders(graders, timeouts)
        check_sandbox_workspaces(settings, {"results file": output.path if output else None, "prompts file": source.path})
        done: set[str] = set()
        rerun = ErrorRecords(output.path, limits.line_bytes) if output and output.retry_errors else None
        if output and output.resume:
            keys = resume_state(output.path, max_line=limits.line_bytes, retry=rerun)
            done = {key[0] for key in keys if isinstance(key[0], str)}
            source.check_resumed(output.path, done, rerun)
        if rerun is not None:
            rerun.announce("result")
        if workspace.template is not None and not (workspace.fresh or workspace.root):
            raise ConfigError("Workspace.template needs Workspace.fresh or Workspace.root: it is copied into fresh workspaces")
        seed = None
        if workspace.template is not None:  # as arun_one: only a run with a template needs trial_runs
            from waza.runner.engine.trial_runs import seeder

            seed = seeder(workspace.template)
        return cls(source, settings, settings.graders, output, done, executor=executor, rerun=rerun, seed=seed)

    @property
    def todo(self) -> int | None:
        return None if self.prompts.total is None else self.prompts.total - len(self.done)

    async def stream(self) -> AsyncGenerator[CaptureResult, None]:
        async with contextlib.aclosing(as_stream(self.run_to)) as results:  # closed in this task when the caller stops early
            async for result in results:
                yield result

    async def run_to(self, sink: Sink[CaptureResult] = discard) -> None:
        """The whole run, each result handed to ``sink`` once written: the CLI's path, which takes
        no result and so skips ``stream``'s hand-over (two event-loop switches per result)."""
        writer, progress = result_writer(self.output, self.todo, "capture", self.tally, self.errors, self.rerun)

        def keep(case: PromptCase) -> bool:
            if case.id in self.done:
                self.skipped.append(case.id)  # counted only when the prompt is really there
                return False
            return True

        async def items() -> AsyncGenerator[WorkItem, None]:
            async for case in self.prompts.stream(keep):
                yield WorkItem(case=case, prepare=self.seed)

        each = counted(writer, self.tally, self.errors, sink)

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
    **options: Unpack[CaptureOptions],
) -> AsyncGenerator[CaptureResult, None]:
    """Run every prompt through the agent and the graders; yield each CaptureResult as it finishes.

    With ``output``, each result is also written (secrets masked) to that JSONL
    file as it finishes; ``Output(path, resume=True)`` skips prompts already there (those that ended
    as errors too, unless ``retry_errors=True``).
    """
    run = CaptureRun.prepare(prompts, agent, graders, **options)
    async with contextlib.aclosing(run.stream()) as results:  # closed in this task when the caller stops early
        async for result in results:
            yield result


def capture(
    prompts: Prompts,
    agent: AgentSpec,
    graders: Graders = (),
    **options: Unpack[CaptureOptions],
) -> list[CaptureResult]:
    """Blocking :func:`acapture`: every CaptureResult, in the order they finished."""
    return collect(functools.partial(acapture, prompts, agent, graders, **options), "capture")


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
    prompt = as_case(case, "case")
    settings = run_settings(agent, build_graders(graders, timeouts), timeouts, 1, workspaces_of(workspace, agent=agent), limits)
    check_sandbox_workspaces(settings, {})
    if prepare is None and workspace.template is not None:
        from waza.runner.engine.trial_runs import seeder

        prepare = seeder(workspace.template)
    async with entered(settings.graders), open_adapter(settings) as adapter:
        return await run_item(adapter, WorkItem(case=prompt, trial=trial, prepare=prepare), settings)


def run_one(
    case: PromptCase | Mapping[str, Any],
    agent: AgentSpec,
    graders: Graders = (),
    **options: Unpack[RunOneOptions],
) -> CaptureResult:
    """Blocking :func:`arun_one`."""
    return run_blocking(functools.partial(arun_one, case, agent, graders, **options), "run_one")


# --- grading results that exist -------------------------------------------------------------------


__all__ = ["CaptureOptions", "CaptureRun", "RunOneOptions", "acapture", "arun_one", "capture", "run_one"]
