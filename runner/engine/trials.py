"""The trials part of the Python API: every prompt k times, pass@k and pass^k.

Kept apart from :mod:`.api` so that a capture or a grade does not import the
trial records, the sidecar and the bootstrap statistics; ``import waza`` offers
both under one namespace (``waza.trials``, ``waza.TrialsRun``, ...).
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import AsyncGenerator, Callable, Iterable, Sequence
from pathlib import Path
from typing import TypedDict, Unpack

import msgspec

from waza.protocol.errors import ConfigError
from waza.protocol.trial_records import ErrorPolicy, TrialEntry, TrialResult, TrialsSummary
from waza.runner.analysis.error_digest import ErrorDigest
from waza.runner.analysis.passk import check_trials, parse_k_values
from waza.runner.analysis.trial_stats import SummaryBuilder
from waza.runner.engine.datasets import TableOptions
from waza.runner.engine.pipeline import Executor, Settings, Sink, WorkItem, entered, run_items
from waza.runner.engine.progress import Progress, wanted
from waza.runner.engine.rerun import ErrorRecords
from waza.runner.engine.run_setup import (
    Prompts,
    PromptSource,
    as_stream,
    build_graders,
    check_sandbox_workspaces,
    collect,
    run_settings,
    workspaces_of,
)
from waza.runner.engine.specs import AgentSpec, Graders, Limits, Output, Timeouts, Workspace, grader_specs
from waza.runner.engine.trial_runs import (
    Plan,
    TrialsOutput,
    check_policy,
    load_finished,
    load_partial,
    seeder,
    sidecar_path,
)

__all__ = ["TrialsOptions", "TrialsRun", "atrials", "summarize_trials", "trials"]


class TrialsOptions(TypedDict, total=False):
    """The keyword options of :func:`trials` and :func:`atrials`, spelled once; ``TrialsRun.prepare`` takes the
    same (and gives their defaults), plus the command line's ``seed``, ``summary``, ``table`` and ``executor``."""

    k: int
    k_values: Sequence[int] | None
    errors: ErrorPolicy
    timeouts: Timeouts
    concurrency: int
    workspace: Workspace
    output: Output | None
    limits: Limits


class TrialsRun(msgspec.Struct):
    """Every prompt k times in fresh workspaces; one TrialResult per prompt when its last trial is in."""

    prompts: PromptSource
    settings: Settings
    plan: Plan
    output: Output | None
    builder: SummaryBuilder
    finished: set[str]
    partial: dict[str, dict[int, TrialEntry]]
    prepare_workspace: Callable[[Path], None] | None
    #: Where the items run: this process (``run_items``) or Ray tasks (``runner.ray_cluster``).
    executor: Executor = run_items
    sink: TrialsOutput | None = None
    #: With ``Output.retry_errors``: the output's prompts with errored trials (moved to the sidecar at the first trial).
    rerun: ErrorRecords | None = None

    @classmethod
    def prepare(
        cls,
        prompts: Prompts,
        agent: AgentSpec,
        graders: Graders,
        *,
        k: int = 5,
        k_values: Sequence[int] | None = None,
        errors: ErrorPolicy = "exclude",
        seed: int = 0,
        timeouts: Timeouts = Timeouts(),
        concurrency: int = 1,
        workspace: Workspace = Workspace(),
        output: Output | None = None,
        summary: Path | None = None,
        table: TableOptions | None = None,
        executor: Executor = run_items,
        limits: Limits = Limits(),
    ) -> TrialsRun:
        check_trials(k)
        graders = grader_specs(graders)
        if output is not None:
            output.check()
        plan = Plan(
            trials=k,
            k_values=parse_k_values(",".join(map(str, k_values)) if k_values else None, k),
            policy=check_policy(errors),
            seed=seed,
            summary=summary,
        )
        source = PromptSource(prompts, timeouts, table, limits)
        settings = run_settings(agent, [], timeouts, concurrency, workspaces_of(workspace, fresh=True), limits)
        if not graders:
            raise ConfigError("trials needs at least one grader in graders=: pass@k counts the trials that pass")
        settings.graders = build_graders(graders, timeouts)
        files = {"results file": output.path if output else None, "prompts file": source.path, "summary file": summary}
        check_sandbox_workspaces(settings, files)
        if output is not None and summary is not None and str(summary) == output.path:
            raise ConfigError("summary= must be another file than Output.path")
        prepare = seeder(workspace.template)
        builder = SummaryBuilder(plan.trials, plan.k_values, plan.policy)
        finished: set[str] = set()
        partial: dict[str, dict[int, TrialEntry]] = {}
        rerun: ErrorRecords | None = None
        if output is not None and output.resume:
            sidecar = sidecar_path(output.path)
            if sidecar is None:
                raise ConfigError("Output.resume needs a file as Output.path (it reads what that file already holds)")
            if output.retry_errors:
                rerun = ErrorRecords(output.path, limits.line_bytes, move_to=sidecar)
            finished, retried = load_finished(output.path, plan, builder, limits.line_bytes, rerun)
            source.check_resumed(output.path, finished, rerun)
            partial = load_partial(sidecar, finished | retried.keys(), plan, limits.line_bytes, rerun)
            partial.update(retried)
        if rerun is not None:
            rerun.announce("trial")
        return cls(source, settings, plan, output, builder, finished, partial, prepare, executor, rerun=rerun)

    @property
    def todo(self) -> int | None:
        total = self.prompts.total
        if total is None:
            return None
        return (total - len(self.finished)) * self.plan.trials - sum(map(len, self.partial.values()))

    @property
    def sidecar(self) -> Path | None:
        return sidecar_path(self.output.path) if self.output else None

    @property
    def errors(self) -> ErrorDigest:
        """Why trials errored (empty before :meth:`stream` runs)."""
        return self.sink.errors if self.sink is not None else ErrorDigest()

    def summary(self) -> TrialsSummary:
        """The run summary: mean pass@k and pass^k over every prompt (resumed ones included), flaky prompts."""
        return self.builder.build(seed=self.plan.seed)

    async def stream(self) -> AsyncGenerator[TrialResult, None]:
        progress = Progress(self.todo, enabled=wanted(self.output.progress) if self.output else False, label="trials")
        out = self.output
        sink = TrialsOutput(
            self.plan,
            self.settings.adapter.name,
            out.path if out else None,
            append=bool(out and out.resume),
            progress=progress,
            builder=self.builder,
        )
        if self.rerun is not None:
            sink.first = self.rerun.remove
        self.sink = sink

        async def items() -> AsyncGenerator[WorkItem, None]:
            async for case in self.prompts.stream(lambda c: c.id not in self.finished):
                for trial in await sink.start(case, self.partial.pop(case.id, {})):
                    yield WorkItem(case=case, trial=trial, prepare=self.prepare_workspace)

        async def run(each: Sink[TrialResult]) -> None:
            sink.on_result = each
            async with entered(self.settings.graders):
                await self.executor(items(), self.settings, sink)

        complete = False
        try:
            async with contextlib.aclosing(as_stream(run)) as results:  # closed in this task when the caller stops early
                async for result in results:
                    yield result
            complete = True
        finally:
            sink.close(complete=complete)
            progress.close()
        sidecar = self.sidecar
        if sidecar is not None and not sink.open:
            sidecar.unlink(missing_ok=True)  # every prompt is in the output: nothing left to resume


async def atrials(
    prompts: Prompts,
    agent: AgentSpec,
    graders: Graders,
    **options: Unpack[TrialsOptions],
) -> AsyncGenerator[TrialResult, None]:
    """Run every prompt ``k`` times (fresh agent session and workspace each); yield each prompt's
    TrialResult (its trials, pass rate, pass@k and pass^k for ``k_values``) when its last trial is in."""
    run = TrialsRun.prepare(prompts, agent, graders, **options)
    async with contextlib.aclosing(run.stream()) as results:  # closed in this task when the caller stops early
        async for result in results:
            yield result


def trials(
    prompts: Prompts,
    agent: AgentSpec,
    graders: Graders,
    **options: Unpack[TrialsOptions],
) -> list[TrialResult]:
    """Blocking :func:`atrials`: every prompt's TrialResult, in the order they finished."""
    return collect(functools.partial(atrials, prompts, agent, graders, **options), "trials")


def summarize_trials(results: Iterable[TrialResult], *, seed: int = 0) -> TrialsSummary:
    """Mean pass@k / pass^k over prompts with bootstrap intervals, from TrialResults of one plan."""
    results = list(results)
    if not results:
        raise ConfigError("no trial results to summarize")
    first = results[0]
    builder = SummaryBuilder(first.k, [int(k) for k in first.pass_at_k], first.error_policy)
    for result in results:
        builder.add(result)
    return builder.build(seed=seed)
