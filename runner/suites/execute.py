"""Running a loaded suite: every trial of every selected task, then the trigger prompts.

Trials go through the same pipeline as ``waza capture`` (``run_items``): a
fresh workspace per trial, filled from the task's fixtures by the work item's
``prepare`` hook, the agent run by the chosen adapter, the task's graders run
while the workspace still exists, and one CaptureResult line written and
flushed per trial. ``fail_fast`` cancels the run at the first trial that
fails or errors; trials in flight are stopped and their tasks listed as not run.
"""

from __future__ import annotations

import fnmatch
import functools
import time
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any

import anyio
import msgspec
import orjson

from waza.protocol.errors import ConfigError
from waza.protocol.records import CaptureResult, PromptCase
from waza.runner.engine.pipeline import Executor, Settings, Sink, WorkItem, entered, run_items
from waza.runner.grading.build import make_runner, resolve
from waza.runner.grading.grader_runners import GraderRunner
from waza.runner.grading.grader_specs import Builtin, GraderSpecT
from waza.runner.grading.judge_setup import apply as apply_judge
from waza.runner.grading.judge_setup import finish as finish_judge
from waza.runner.suites import resources
from waza.runner.suites import triggers as trigger_tests
from waza.runner.suites.conversation import TaskDialogue, needs_dialogue
from waza.runner.suites.document import RunRecord
from waza.runner.suites.fixtures import preparer
from waza.runner.suites.mock_tools import MockFolder
from waza.runner.suites.models import Suite, Task
from waza.runner.suites.responder import serving_local


class Plan(msgspec.Struct):
    """A suite and how to run it, after the command line and the suite's config are merged."""

    suite: Suite
    tasks: list[Task]
    settings: Settings
    trials: int
    fail_fast: bool = False
    run_triggers: bool = True
    #: Runs of each trigger prompt (``--trigger-trials``); the tasks' own trials are ``trials``.
    trigger_trials: int = 1
    model: str | None = None
    extra_graders: Sequence[GraderSpecT] = msgspec.field(default_factory=list)
    #: Run the built-in graders as worker processes.
    isolate: bool = False
    #: Seconds a grader with no timeout of its own may take per result.
    grader_timeout: float = 60.0
    #: The run's judge (``Judge.judge_config``), merged into every LLM grader's config.
    judge: dict[str, Any] = msgspec.field(default_factory=dict)
    filtered: list[str] = msgspec.field(default_factory=list)
    #: Where the trials run: this process (``run_items``) or Ray tasks (``runner.ray_cluster``).
    executor: Executor = run_items
    #: Whether the suite's mocks are made for this run (it has some, and its adapter runs an agent).
    mocked: bool = False
    #: The run's folder of mock programs, while it runs.
    mocks: MockFolder | None = None

    @property
    def total(self) -> int:
        prompts = len(self.suite.triggers.prompts) if self.suite.triggers and self.run_triggers else 0
        return len(self.tasks) * self.trials + prompts * self.trigger_trials


def select(suite: Suite, task_globs: list[str], tag_globs: list[str]) -> tuple[list[Task], list[str]]:
    """Enabled tasks matching every filter kind given (a task glob matches id or name); and the ids left out."""
    chosen: list[Task] = []
    left_out: list[Task] = []
    for task in suite.tasks:
        if not task.enabled:
            continue
        by_task = not task_globs or any(fnmatch.fnmatchcase(task.id, g) or fnmatch.fnmatchcase(task.name, g) for g in task_globs)
        by_tag = not tag_globs or any(fnmatch.fnmatchcase(tag, g) for g in tag_globs for tag in task.tags)
        (chosen if by_task and by_tag else left_out).append(task)
    if not chosen:
        raise ConfigError(
            "no enabled task matches tasks= or tags=" if task_globs or tag_globs else "the suite has no enabled task"
        )
    return chosen, [t.id for t in left_out]


def require_graders(tasks: list[Task], extra: Sequence[GraderSpecT]) -> None:
    """A task nothing judges could never pass or fail: refuse to run it."""
    if extra:
        return
    for task in tasks:
        if not task.graders:
            raise ConfigError("task has no graders (add graders, expected checks, or suite-wide graders)", source=task.file)


def case_for(task: Task, suite: Suite, model: str | None) -> PromptCase:
    metadata: dict[str, Any] = {"suite": suite.name, "task": task.name, "tags": task.tags}
    if suite.skill:
        metadata["skill"] = suite.skill
    if suite.scenario:
        metadata["scenario"] = suite.scenario
    if task.context is not None:
        metadata["context"] = task.context
    if model:
        metadata["model"] = model
    if task.golden:
        metadata["golden"] = True  # so the JSONL alone tells waza gate --golden-must-pass which tasks must pass
    unknown = {"mock": task.mock} if task.mock is not None else {}
    turns: str | list[str] = [task.prompt, *task.follow_ups] if task.follow_ups else task.prompt
    return PromptCase(id=task.id, input=turns, metadata=metadata, timeout=task.timeout, unknown=unknown)


def commands_of(task: Task, suite: Suite) -> list[dict[str, Any]]:
    """A task's command mocks: its own list (even empty) replaces the suite's."""
    return suite.command_mocks if task.command_mocks is None else task.command_mocks


def fixture_of(task: Task) -> tuple[Path, str] | None:
    """Where a task's ``context.fixture`` is copied from, if it has one."""
    return None if task.fixture is None else (task.fixture_root, task.fixture)


class _Runners:
    """One runner per distinct grader, shared by every task that declares the same one."""

    def __init__(self, plan: Plan) -> None:
        self.plan = plan
        self.by_key: dict[bytes, GraderRunner] = {}

    def get(self, spec: GraderSpecT) -> GraderRunner:
        """The runner of ``spec`` as this run has it: its timeout, the run's judge and ``isolate`` applied."""
        (spec,) = apply_judge([resolve(spec, timeout=self.plan.grader_timeout)], self.plan.judge, others=True)
        if self.plan.isolate and isinstance(spec, Builtin):
            spec = msgspec.structs.replace(spec, isolate=True)
        key = orjson.dumps([type(spec).__name__, msgspec.structs.asdict(spec)], default=repr)
        if key not in self.by_key:
            self.by_key[key] = finish_judge(make_runner(spec))
        return self.by_key[key]


async def execute(plan: Plan, out: Sink[CaptureResult], record: RunRecord) -> None:
    """Run the plan, handing each result to ``out`` and gathering it into ``record``."""
    runners = _Runners(plan)
    graders = {t.id: [runners.get(s) for s in [*t.graders, *plan.extra_graders]] for t in plan.tasks}
    checkpoints = {t.id: [(c, [runners.get(s) for s in c.graders]) for c in t.checkpoints] for t in plan.tasks}
    trigger_items = (
        trigger_tests.work_items(plan.suite.triggers, plan.trigger_trials) if plan.suite.triggers and plan.run_triggers else []
    )
    trigger_results: dict[str, list[CaptureResult]] = {}

    async def items() -> AsyncIterator[WorkItem]:
        for task in plan.tasks:
            case = case_for(task, plan.suite, plan.model)
            prepare = resources.prepare(
                preparer(task), fixture_of(task), task.repos
            )  # one hook per task, so an executor can pack its fixtures once
            tools = None if plan.mocks is None else functools.partial(plan.mocks.trial, commands_of(task, plan.suite))
            dialogue = None
            if needs_dialogue(task):
                dialogue = functools.partial(TaskDialogue, task, case, checkpoints=checkpoints[task.id])
            for trial in range(1, plan.trials + 1):
                yield WorkItem(
                    case=case,
                    trial=trial,
                    prepare=prepare,
                    graders=graders[task.id],
                    tools=tools,
                    dialogue=dialogue,
                    workdir=task.workdir,
                )
        for item in trigger_items:
            yield item

    if plan.executor is not run_items and any(needs_dialogue(t) or t.workdir for t in plan.tasks):
        raise ConfigError(
            "a task with a responder, checkpoints or inputs.workdir runs in this process only,"
            " not with RayOptions (the Ray executor)"
        )
    responders = [t.responder for t in plan.tasks if t.responder is not None]
    with anyio.CancelScope() as scope:

        async def sink(result: CaptureResult) -> None:
            await out(result)
            if trigger_tests.is_trigger(result):
                trigger_results.setdefault(result.id, []).append(result)
                return
            record.trials.setdefault(result.id, []).append(result)
            if plan.fail_fast and result.status in ("failed", "error"):
                scope.cancel()

        async with entered(list(runners.by_key.values())), serving_local(responders):
            await plan.executor(items(), plan.settings, sink)
    record.finished = int(time.time() * 1000)
    record.not_run = [t.id for t in plan.tasks if t.id not in record.trials]
    if plan.suite.triggers and plan.run_triggers and not scope.cancel_called:
        record.triggers = trigger_tests.report(plan.suite.triggers, trigger_results)
