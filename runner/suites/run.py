"""An eval.yaml suite as an API run: the suite's config merged with the caller's specs, then executed.

What the caller gives wins over the suite's config: an agent spec over
``config.executor`` / ``config.command`` / ``config.model``, ``trials`` over
``trials_per_task``, ``concurrency`` over ``parallel`` / ``max_workers``,
``timeouts.prompt`` over ``timeout_seconds``, ``fail_fast`` over ``fail_fast``.
"""

from __future__ import annotations

import contextlib
import importlib.util
import sys
import time
from collections.abc import AsyncGenerator, Sequence
from pathlib import Path
from typing import Any, TypedDict, Unpack

import msgspec

from waza.adapters.base import Adapter
from waza.adapters.sandbox.bwrap import plan as plan_sandbox
from waza.adapters.specs import sandbox_of
from waza.protocol.errors import ConfigError
from waza.protocol.records import CaptureResult
from waza.protocol.suite_records import SuiteResult
from waza.runner.analysis.error_digest import ErrorDigest
from waza.runner.engine.blocking import refuse_in_event_loop, run_blocking
from waza.runner.engine.outputs import ResultWriter, Tally
from waza.runner.engine.pipeline import Executor, Settings, Sink, Workspaces, run_items
from waza.runner.engine.progress import Progress, wanted
from waza.runner.engine.run_setup import as_stream, resolve_agent
from waza.runner.engine.specs import AGENTS, AgentSpec, Graders, HttpAgent, Judge, Output, Timeouts, grader_specs
from waza.runner.grading.build import resolve
from waza.runner.grading.judge_setup import check_used as check_judge_used
from waza.runner.suites import document
from waza.runner.suites.execute import Plan, commands_of, execute, require_graders, select
from waza.runner.suites.loader import load_suite
from waza.runner.suites.mock_tools import MockFolder
from waza.runner.suites.models import Suite, Task
from waza.runner.suites.responder import place

#: Adapters that play a recorded or scripted trajectory instead of running an agent.
SCRIPTED = frozenset({"mock", "replay"})


def suite_agent(suite: Suite, agent: AgentSpec | None) -> AgentSpec:
    """The caller's agent, else the suite's ``config.executor`` (default acp); an agent without a command
    runs ``config.command`` when its adapter needs one; ``config.model`` fills an unset ``model``."""
    from waza.adapters import DEFAULT_ADAPTER, adapter_class

    if agent is None:
        name = suite.config.executor or DEFAULT_ADAPTER
        spec_cls = AGENTS.get(name)
        if spec_cls is None:
            adapter_class(name)  # the "unknown adapter" error, listing the known ones
            raise AssertionError(name)
        agent = spec_cls(command=())
    if not agent.command and adapter_class(agent.adapter).needs_command:
        if not suite.config.command:
            raise ConfigError(
                f"adapter {agent.adapter} needs an agent command: waza run SUITE -- AGENT [ARGS...], or config.command in eval.yaml"
            )
        agent = msgspec.structs.replace(agent, command=tuple(suite.config.command))
    if suite.config.model and isinstance(agent, HttpAgent) and agent.model is None:
        agent = msgspec.structs.replace(agent, model=suite.config.model)
    return agent


class SuiteOptions(TypedDict, total=False):
    """The keyword options of :func:`run_suite` and :func:`arun_suite`, spelled once; ``SuiteRun.prepare`` takes
    the same (and gives their defaults), plus what only the command line sets (``fail_fast``, ``judge``, ...)."""

    tasks: Sequence[str]
    tags: Sequence[str]
    trials: int | None
    concurrency: int | None
    timeouts: Timeouts
    output: Output | None
    #: Where the suite's LLM graders and its tasks' responders find their model.
    judge: Judge | None
    #: Runs of each trigger prompt.
    trigger_trials: int


class SuiteRun(msgspec.Struct):
    """A suite's plan (tasks, trials, graders, agent) and its record as results come in."""

    suite: Suite
    plan: Plan
    record: document.RunRecord
    output: Output | None
    tally: Tally = msgspec.field(default_factory=Tally)
    errors: ErrorDigest = msgspec.field(default_factory=ErrorDigest)

    @classmethod
    def prepare(
        cls,
        suite: str | Path | Suite,
        agent: AgentSpec | None = None,
        graders: Graders = (),
        *,
        tasks: Sequence[str] = (),
        tags: Sequence[str] = (),
        trials: int | None = None,
        concurrency: int | None = None,
        fail_fast: bool | None = None,
        context_dir: Path | None = None,
        keep_workspaces: bool = False,
        workspace_root: Path | None = None,
        triggers: bool = True,
        trigger_trials: int = 1,
        timeouts: Timeouts = Timeouts(),
        judge: Judge | None = None,
        isolate: bool = False,
        output: Output | None = None,
        executor: Executor = run_items,
    ) -> SuiteRun:
        """Load (unless given loaded) and check the suite and merge its config; nothing runs yet."""
        graders = grader_specs(graders)
        if output is not None:
            output.check()
        loaded = suite if isinstance(suite, Suite) else load_suite(Path(suite), context_dir=context_dir)
        config = loaded.config
        adapter, resolved = resolve_agent(suite_agent(loaded, agent))
        chosen, filtered = select(loaded, list(tasks), list(tags))
        extra = [resolve(g) for g in graders]
        require_graders(chosen, extra)
        for spec in extra:
            if any(spec.name == s.name for t in chosen for s in t.graders):
                raise ConfigError(
                    f"grader {spec.name!r} of graders= has the name of a suite grader; give it another GraderBase.name"
                )
        specs = [*extra, *(s for t in chosen for s in t.graders), *(s for t in chosen for c in t.checkpoints for s in c.graders)]
        responders = [t.responder for t in chosen if t.responder is not None]
        judged = {} if judge is None else judge.judge_config()
        check_judge_used(specs, judged, others=bool(responders))
        place(responders, None if judge is None else judged)
        if concurrency is None:
            concurrency = config.max_workers if config.parallel else 1
        if workspace_root is not None:
            workspace_root.mkdir(parents=True, exist_ok=True)
        settings = Settings(
            adapter=adapter,
            agent=resolved,
            graders=[],
            concurrency=concurrency,
            timeout=timeouts.prompt if timeouts.prompt is not None else config.timeout_seconds,
            workspaces=Workspaces(root=workspace_root, fresh=True, keep=keep_workspaces),
        )
        mocked = check_mocks(loaded, chosen, adapter, resolved)
        if adapter.name != "mock" and any(t.mock is not None for t in chosen):
            print(f"waza: mock scripts in task files are not used with the {adapter.name} adapter", file=sys.stderr)
        plan = Plan(
            suite=loaded,
            tasks=chosen,
            settings=settings,
            trials=trials or config.trials_per_task,
            fail_fast=config.fail_fast if fail_fast is None else fail_fast,
            run_triggers=triggers,
            trigger_trials=trigger_trials,
            model=config.model,
            extra_graders=extra,
            isolate=isolate or any(getattr(g, "isolate", False) for g in graders),
            grader_timeout=timeouts.grader,
            judge=judged,
            filtered=filtered,
            executor=executor,
            mocked=mocked,
        )
        record = document.RunRecord(
            adapter=adapter.name, model=config.model, trials_per_task=plan.trials, started=0, filtered=filtered
        )
        return cls(loaded, plan, record, output)

    async def stream(self) -> AsyncGenerator[CaptureResult, None]:
        """Every trial's (and trigger prompt's) CaptureResult as it finishes; then :meth:`result` is ready."""
        enabled = wanted(self.output.progress) if self.output else False
        progress = Progress(self.plan.total, enabled=enabled, label=self.suite.name)
        writer = ResultWriter(self.output.path, progress=progress) if self.output else None
        self.record.started = int(time.time() * 1000)

        async def run(sink: Sink[CaptureResult]) -> None:
            async def each(result: CaptureResult) -> None:
                if writer is not None:
                    writer.write(result)
                self.tally.add(result.status, result.score.score if result.score else None)
                self.errors.add(result)
                await sink(result)

            await execute(self.plan, each, self.record)

        complete = False
        try:
            self._open_mocks()
            async with contextlib.aclosing(as_stream(run)) as results:  # closed in this task when the caller stops early
                async for result in results:
                    yield result
            complete = True
        finally:
            if self.plan.mocks is not None:
                self.plan.mocks.remove()
                self.plan.mocks = None
            if writer is not None:
                writer.close(complete=complete)
            progress.close()

    def _open_mocks(self) -> None:
        """The run's folder of mocks, when a selected task has any; a sandbox is widened to show it (read-only,
        its calls logs writable) and the interpreter the mocks run on."""
        if not self.plan.mocked:
            return
        folder = MockFolder(self.suite.mcp_mocks)
        self.plan.mocks = folder
        settings = self.plan.settings
        policy = sandbox_of(settings.agent)
        if policy is not None:
            widened = msgspec.structs.replace(
                policy, read_only=(*policy.read_only, folder.root), read_write=(*policy.read_write, folder.logs)
            )
            settings.agent = msgspec.structs.replace(settings.agent, sandbox=plan_sandbox(widened, (sys.executable,)))

    def result(self) -> SuiteResult:
        """The whole-suite document (tasks, metrics, triggers, verdict) of what ran."""
        return document.build(self.suite, self.record)


def check_mocks(suite: Suite, chosen: Sequence[Task], adapter: type[Adapter[Any]], agent: AgentSpec) -> bool:
    """Whether the run makes the suite's mocks; ConfigError when they cannot reach the chosen adapter's agent.
    A scripted adapter (mock, replay) runs no agent, so mocks are not made for it, with a note."""
    commands = any(commands_of(t, suite) for t in chosen)
    if not suite.mcp_mocks and not commands:
        return False
    if adapter.name in SCRIPTED:
        print(
            f"waza: mcp_mocks and command_mocks are not used with the {adapter.name} adapter (it runs no agent)", file=sys.stderr
        )
        return False
    if suite.mcp_mocks and importlib.util.find_spec("mcp") is None:
        from waza.runner.install_hints import pip_install

        raise ConfigError(
            f"mcp_mocks: the mock servers need the official MCP SDK: {pip_install('mocks')}", source=str(suite.file)
        )
    if suite.mcp_mocks and not adapter.accepts_mcp_servers(agent):
        raise ConfigError(
            f"mcp_mocks: the {adapter.name} adapter cannot hand MCP servers to its agent; run the suite with an acp agent"
            " or a headless schema with mcpConfig (claude-code, codex, gemini-cli, opencode)",
            source=str(suite.file),
        )
    if commands and not adapter.takes_path:
        raise ConfigError(
            f"command_mocks: the {adapter.name} adapter does not start its agent per task, so it cannot put the mocks "
            "first on its PATH; run the suite with an exec or headless agent",
            source=str(suite.file),
        )
    return True


async def arun_suite(
    suite: str | Path,
    agent: AgentSpec | None = None,
    graders: Graders = (),
    **options: Unpack[SuiteOptions],
) -> AsyncGenerator[CaptureResult, None]:
    """Run an eval.yaml suite; yield each trial's CaptureResult as it finishes (``SuiteRun`` gives the document)."""
    run = SuiteRun.prepare(suite, agent, graders, **options)
    async with contextlib.aclosing(run.stream()) as results:  # closed in this task when the caller stops early
        async for result in results:
            yield result


def run_suite(
    suite: str | Path,
    agent: AgentSpec | None = None,
    graders: Graders = (),
    **options: Unpack[SuiteOptions],
) -> SuiteResult:
    """Blocking suite run: the whole-suite result document (per task, metrics, triggers, passed or failed).

    ``judge``: where the suite's LLM graders and its tasks' responders find their model; ``trigger_trials``:
    runs of each trigger prompt."""
    refuse_in_event_loop("run_suite")  # before the suite is read
    run = SuiteRun.prepare(suite, agent, graders, **options)

    async def main() -> None:
        async with contextlib.aclosing(run.stream()) as results:
            async for _ in results:
                pass

    run_blocking(main, "run_suite")
    return run.result()


__all__ = ["SuiteOptions", "SuiteRun", "arun_suite", "run_suite", "suite_agent"]
