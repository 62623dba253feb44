"""The async core: prompts in, agents run, graders applied, results out.

``concurrency`` workers each own one adapter (one agent process, for adapters
that keep one), take the next work item when they are free, run it, grade it
while its workspace still exists, and hand the result to the writer, which
writes and flushes one line per result as it finishes. Nothing is read ahead
of a free worker, so memory stays flat whatever the input size, and every task
lives in one task group, so an interrupt or an error cancels them all and no
process outlives the run (``fanout``).
"""

from __future__ import annotations

import contextlib
import functools
import math
import os
import re
import stat
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any, Protocol, TypeAlias, TypeVar

import anyio
import msgspec

from waza.adapters.base import Adapter, AgentRun, AgentTask, Conversation
from waza.adapters.sandbox.bwrap import Sandbox, wrap_command
from waza.adapters.sandbox.limits import SandboxLimits, limit_errors
from waza.adapters.specs import AgentSpec, sandbox_of
from waza.graders._commands import AGENTS_CODE_CONFINEMENT
from waza.protocol.errors import AgentError, ConfigError, GraderError, WazaError
from waza.protocol.grader_protocol import request_for, settle
from waza.protocol.io.logs import get_logger
from waza.protocol.records import CaptureResult, Exit, Grade, PromptCase, Timing
from waza.protocol.trajectory import TrajectoryBuilder
from waza.runner.engine.fanout import fan_out
from waza.runner.engine.overlays import Seed, mount_overlay, mounted, unmount_overlay
from waza.runner.engine.specs import Limits
from waza.runner.engine.trees import remove_tree, tree_bytes
from waza.runner.grading.grader_runners import GraderRunner

log = get_logger("waza")

#: Extra seconds an adapter gets past the prompt timeout to stop its agent before the runner gives up on it.
ADAPTER_GRACE = 15.0
WORKSPACE_MARK = ".waza-workspace"


class TrialTools(Protocol):
    """Tools made for one trial (a suite's mocks): handed to the agent, then recorded in its result."""

    mcp_servers: list[dict[str, Any]]
    path: list[str]
    #: The trial's folder, readable by the agent (in a sandbox too): where an adapter writes its config files.
    folder: Path

    def finish(self, result: CaptureResult) -> None:
        """Record what the tools saw in ``result`` (calls, errors) and remove what was made for the trial."""


class Dialogue(Conversation, Protocol):
    """A conversation that decides the turns after the first, and records how it went in the result."""

    def finish(self, result: CaptureResult) -> list[Grade]:
        """Write the conversation's record into ``result`` (before grading); the grades the conversation
        gives itself (a responder that abstained fails the trial), added to the graders' own."""
        ...


class WorkItem(msgspec.Struct):
    """One run of one prompt: the case, its trial number, and how to fill its workspace."""

    case: PromptCase
    trial: int | None = None
    prepare: Callable[[Path], None] | None = None
    hint_override: str | None = None
    #: This item's own graders (a suite task's); None means ``settings.graders``.
    graders: list[GraderRunner] | None = None
    #: Makes this item's tools (MCP servers, folders first on PATH) for its workspace, once per trial.
    tools: Callable[[Path], TrialTools] | None = None
    #: Makes the trial's conversation for its workspace (a suite task's responder or checkpoints);
    #: None: the case's turns in order.
    dialogue: Callable[[Path], Dialogue] | None = None
    #: Where in the workspace the agent starts (a suite task's ``inputs.workdir``): a folder the workspace
    #: starts with, else the trial is an error; None: the workspace root.
    workdir: str | None = None


class Workspaces(msgspec.Struct):
    """Where each item runs.

    With ``root``: a fresh ``root/<id>[-tN]`` per item. With ``fresh`` and no
    root: a fresh temporary directory per item, removed after grading unless
    ``keep``. Otherwise every item shares ``cwd``.
    """

    cwd: Path = msgspec.field(default_factory=Path.cwd)
    root: Path | None = None
    fresh: bool = False
    keep: bool = False

    def __post_init__(self) -> None:
        self.cwd = self.cwd.resolve()  # once, not a walk of the path's symlinks per item

    @property
    def shared(self) -> bool:
        """Every item runs in ``cwd`` itself: no directory is made for one."""
        return self.root is None and not self.fresh

    def create(self, item: WorkItem) -> tuple[Path, bool]:
        """(directory, whether to remove it after grading)."""
        if self.root is not None:
            name = workspace_name(item.case.id) + (f"-t{item.trial}" if item.trial is not None else "")
            return make_workspace(self.root, name), False
        if self.fresh:
            import tempfile  # only for --workspace temp: a capture without one never loads it

            path = Path(tempfile.mkdtemp(prefix=f"waza-{workspace_name(item.case.id)[:60]}-")).resolve()
            return path, not self.keep
        return self.cwd, False


_PLAIN = re.compile(r"[A-Za-z0-9_-][A-Za-z0-9._-]{0,79}")


def workspace_name(prompt_id: str) -> str:
    """A file name for ``prompt_id``'s workspace, different for every distinct id.

    An id that is already a plain name (letters, digits, ``._-``, not starting
    with a dot, at most 80 characters) is used as it is; any other gets a
    readable slug, ``~`` (never in a plain name) and 12 hex digits of the
    SHA-256 of the exact id, so ``x/y``, ``x_y``, ``é`` and ``..`` all differ.
    """
    if _PLAIN.fullmatch(prompt_id):
        return prompt_id
    import hashlib  # only ids that are not plain names need it

    slug = re.sub(r"[^A-Za-z0-9._-]+", "_", prompt_id).strip("._-")[:40] or "prompt"
    digest = hashlib.sha256(prompt_id.encode("utf-8", "surrogatepass")).hexdigest()[:12]
    return f"{slug}~{digest}"


def make_workspace(root: Path, name: str) -> Path:
    """A fresh empty directory ``root/name``; an earlier one waza made there is removed first.

    Nothing here follows a symlink: the entry is looked at with ``lstat``
    relative to a descriptor of ``root``, so a symlink planted at ``name`` (even
    one to a directory holding a ``.waza-workspace`` marker) is refused, never
    wiped or used; removal goes through ``remove_tree``'s descriptor-based walk, however deep the tree.
    """
    root.mkdir(parents=True, exist_ok=True)
    root = root.resolve()
    root_fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    try:
        try:
            entry = os.stat(name, dir_fd=root_fd, follow_symlinks=False)
        except FileNotFoundError:
            entry = None
        if entry is not None:
            if not stat.S_ISDIR(entry.st_mode):
                raise FileExistsError(f"workspace {root / name} exists and is not a directory (a symlink?); refusing to use it")
            if not _has_mark(root_fd, name):
                raise FileExistsError(f"workspace {root / name} exists and was not made by waza; refusing to reuse it")
            remove_tree(root / name)
        os.mkdir(name, 0o777, dir_fd=root_fd)
        dir_fd = os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=root_fd)
        try:
            mark = os.open(WORKSPACE_MARK, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o666, dir_fd=dir_fd)
            with os.fdopen(mark, "w") as f:
                f.write("made by waza; removed and recreated on the next run\n")
        finally:
            os.close(dir_fd)
    finally:
        os.close(root_fd)
    return root / name


def _has_mark(root_fd: int, name: str) -> bool:
    """Whether directory ``name`` (opened without following a symlink) holds waza's marker as a regular file."""
    try:
        dir_fd = os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=root_fd)
    except OSError:
        return False
    try:
        return stat.S_ISREG(os.stat(WORKSPACE_MARK, dir_fd=dir_fd, follow_symlinks=False).st_mode)
    except OSError:
        return False
    finally:
        os.close(dir_fd)


class Settings(msgspec.Struct):
    """Everything a run of prompts needs besides the prompts: the agent, its graders and the limits."""

    adapter: type[Adapter[Any]]
    #: The agent as it runs: its command resolved, its sandbox planned (``run_setup.resolve_agent``).
    agent: AgentSpec
    graders: list[GraderRunner]
    concurrency: int = 1
    timeout: float | None = None
    workspaces: Workspaces = msgspec.field(default_factory=Workspaces)
    limits: Limits = msgspec.field(default_factory=Limits)
    #: The agent's sandbox with waza's interpreter shown too: where git's test_command runs.
    grading_sandbox: Sandbox | None = None


T = TypeVar("T")
#: Where a run hands each result as it finishes.
Sink: TypeAlias = Callable[[T], Awaitable[None]]


@contextlib.asynccontextmanager
async def entered(runners: Sequence[GraderRunner]) -> AsyncIterator[Sequence[GraderRunner]]:
    """Start every grader runner (worker pools) for the run and stop them after.

    A grader that cannot start stops the run with a GraderError naming it.
    """
    async with contextlib.AsyncExitStack() as stack:
        for r in runners:
            try:
                await stack.enter_async_context(r)
            except WazaError:
                raise
            except Exception as exc:  # named and re-raised as the run's error
                raise GraderError(f"grader {r.name!r} cannot start: {type(exc).__name__}: {exc}") from exc
        yield runners


@contextlib.asynccontextmanager
async def open_adapter(settings: Settings) -> AsyncIterator[Adapter[Any]]:
    """One adapter (one agent) for a worker; an agent that cannot start stops the run with an AgentError."""
    adapter = settings.adapter(settings.agent)
    try:
        await adapter.__aenter__()
    except WazaError:
        raise
    except Exception as exc:  # named and re-raised as the run's error
        raise AgentError(f"agent adapter {settings.adapter.name} cannot start: {type(exc).__name__}: {exc}") from exc
    async with contextlib.AsyncExitStack() as stack:
        stack.push_async_exit(adapter.__aexit__)
        yield adapter


async def grade_result(result: CaptureResult, graders: list[GraderRunner]) -> CaptureResult:
    """Run every grader on one result (concurrently) and settle its verdict."""
    if not graders:
        return settle(result, [])
    if len(graders) == 1:
        # The runner builds the request with its own config (the hot path of `grade`).
        return settle(result, [await graders[0].grade_alone(result)])
    base = request_for(result, {})
    grades: list[Grade | None] = [None] * len(graders)

    async def one(i: int, g: GraderRunner) -> None:
        grades[i] = await g.grade(base)

    async with anyio.create_task_group() as tg:
        for i, g in enumerate(graders):
            tg.start_soon(one, i, g)
    return settle(result, [g for g in grades if g is not None])


async def capture_one(
    adapter: Adapter[Any], item: WorkItem, workspace: Path, settings: Settings, dialogue: Dialogue | None = None
) -> CaptureResult:
    """Run one item through the adapter and build its (ungraded) result; never raises for agent faults.

    ``dialogue`` is told each turn's end and chooses the next (``AgentTask.conversation``)."""
    case = item.case
    timeout = case.timeout if case.timeout is not None else settings.timeout
    limits = settings.limits
    recorder = TrajectoryBuilder(max_steps=limits.steps, max_bytes=limits.trajectory_mb << 20)
    start_epoch = time.time()
    task = AgentTask(
        case=case,
        workspace=workspace,
        recorder=recorder,
        timeout=timeout,
        trial=item.trial,
        conversation=dialogue,
        workdir=item.workdir,
    )
    try:
        tools = None if item.tools is None else item.tools(workspace)
    except OSError as exc:  # this record's error, not the run's end
        return failed_result(case, item.trial, adapter.name, f"cannot make the task's mocks: {exc}")
    if tools is not None:
        task.mcp_servers, task.path, task.files = tools.mcp_servers, tools.path, tools.folder
    limit = math.inf if timeout is None else timeout + ADAPTER_GRACE
    run: AgentRun | None = None
    crash: str | None = None
    with anyio.move_on_after(limit) as scope:
        try:
            run = await adapter.run(task)
        except ConfigError:
            raise  # the agent cannot work at all (e.g. not an ACP agent): the run stops and says why
        except Exception as exc:  # an adapter bug must not end the run
            log.exception("adapter failed", id=case.id)
            crash = f"adapter {adapter.name} failed: {type(exc).__name__}: {exc}"
    if run is None:
        run = AgentRun(exit=Exit(timed_out=scope.cancelled_caught))
        run.errors.append(crash or f"adapter {adapter.name} did not stop within {ADAPTER_GRACE:g}s of the timeout")
    end_epoch = time.time()
    reduced = recorder.finish()
    if reduced.dropped:
        run.errors.append(
            f"the agent reported more than its trajectory may keep ({limits.steps} steps, {limits.trajectory_mb} MB:"
            f" Limits.steps, Limits.trajectory_mb); {reduced.dropped} later events were dropped"
        )
    usage = reduced.usage
    result = CaptureResult(
        id=case.id,
        input=case.input,
        output=reduced.output,
        hint=item.hint_override if item.hint_override is not None else case.hint,
        reference=case.reference,
        trajectory=reduced.steps,
        metadata=case.metadata,
        timing=Timing(
            start=int(start_epoch * 1000),
            end=int(end_epoch * 1000),
            total=int((end_epoch - start_epoch) * 1000),
            first_response=reduced.first_response,
            session_creation=run.session_creation_ms,
            input_tokens=usage.input_tokens if usage else None,
            output_tokens=usage.output_tokens if usage else None,
        ),
        usage=usage,
        exit=run.exit,
        tool_errors=reduced.tool_errors,
        errors=run.errors,
        trial=item.trial,
        adapter=adapter.name,
        cwd=str(workspace),
        stderr=run.stderr,
        unknown=dict(case.unknown),
    )
    if tools is not None:
        try:
            tools.finish(result)
        except Exception as exc:  # a bug reading what the tools saw costs this record, not the run
            log.exception("recording the trial's tools failed", id=case.id)
            result.errors.append(f"cannot record the task's mocks: {type(exc).__name__}: {exc}")
    return result


async def run_items(items: AsyncIterator[WorkItem], settings: Settings, sink: Sink[CaptureResult]) -> None:
    """Capture and grade every item with ``settings.concurrency`` workers, each owning one adapter
    (one agent); results go to ``sink`` in the order they finish."""

    @contextlib.asynccontextmanager
    async def worker() -> AsyncIterator[Callable[[WorkItem], Awaitable[CaptureResult]]]:
        async with open_adapter(settings) as adapter:
            yield lambda item: run_item(adapter, item, settings)

    await fan_out(items, worker, settings.concurrency, sink)


#: Runs every item and hands each finished record to the sink, in the order they finish: ``run_items``
#: (this process), or another executor with the same shape (``runner.ray_cluster``: Ray tasks).
Executor: TypeAlias = Callable[[AsyncIterator[WorkItem], Settings, Sink[CaptureResult]], Awaitable[None]]


async def run_item(adapter: Adapter[Any], item: WorkItem, settings: Settings) -> CaptureResult:
    """One item in its workspace through an open adapter, graded; a fault is this record's error."""
    if settings.workspaces.shared and item.prepare is None:
        workspace, remove = settings.workspaces.cwd, False  # nothing to make or fill: no trip to a thread
    else:
        try:
            # Making and filling a workspace reads and writes whole trees: in a worker thread, so the
            # event loop keeps running every other trial's agent, graders and timeouts meanwhile.
            overlay = sandbox_of(settings.agent) is not None  # the agent reaches it only through the sandbox
            workspace, remove = await anyio.to_thread.run_sync(prepared, settings.workspaces, item, overlay)
        except Exception as exc:  # a workspace problem is this item's error, not the run's end
            return failed_result(item.case, item.trial, adapter.name, f"cannot prepare workspace: {exc}")
    if item.workdir is not None and not is_folder_in(workspace, item.workdir):
        await release(workspace, remove)
        why = f"workdir {item.workdir!r} is not a folder of the prepared workspace (symlinks are not followed)"
        return failed_result(item.case, item.trial, adapter.name, why)
    # a grader command that runs the agent's work (git's test_command) runs in a sandbox like the agent's,
    # a checkpoint's between two turns as well as the final graders
    grading = settings.grading_sandbox
    confined = AGENTS_CODE_CONFINEMENT.set(None if grading is None else lambda argv, cwd: wrap_command(argv, grading, cwd))
    try:
        dialogue = None if item.dialogue is None else item.dialogue(workspace)
        result = await capture_one(adapter, item, workspace, settings, dialogue)
        policy = sandbox_of(settings.agent)
        if policy is not None and policy.limits:
            result.errors.extend(await anyio.to_thread.run_sync(reached_limits, result, workspace, policy.limits))
        own = [] if dialogue is None else dialogue.finish(result)
        result = await grade_result(result, settings.graders if item.graders is None else item.graders)
        return settle(result, [*result.grades, *own]) if own else result
    finally:
        AGENTS_CODE_CONFINEMENT.reset(confined)
        await release(workspace, remove)


async def release(workspace: Path, remove: bool) -> None:
    """A trial's workspace after its graders: an overlay taken down (a kept one becomes a plain folder), the
    folder removed unless kept; shielded, so an interrupt leaves no mount or folder behind."""
    overlaid = mounted(workspace)
    if not (overlaid or remove):  # a shared or kept folder: nothing to do, and no cancel scope to pay for
        return
    with anyio.CancelScope(shield=True):
        if overlaid:  # graders have read the merged view
            await anyio.to_thread.run_sync(functools.partial(take_down, workspace, keep=not remove))
        if remove:
            await anyio.to_thread.run_sync(remove_workspace, workspace)


def reached_limits(result: CaptureResult, workspace: Path, limits: SandboxLimits) -> list[str]:
    """The sandbox limits the agent reached, as errors naming them: those the launcher reported on the
    agent's stderr, and a workspace left larger than ``disk_mb`` (measured now, blocking)."""
    errors = limit_errors(result.stderr, limits)
    if limits.disk_mb is not None:
        try:
            used = tree_bytes(workspace)
        except OSError as exc:
            return [*errors, f"cannot measure the workspace against Sandbox.limits.disk_mb: {exc}"]
        if used >= limits.disk_mb << 20:
            errors.append(
                f"the workspace holds {used / (1 << 20):.1f} MB, at or over its sandbox disk limit"
                f" (Sandbox.limits.disk_mb = {limits.disk_mb})"
            )
    return errors


#: How many workspaces are filled at once: copies are bound by the disk, and more threads walking trees
#: at once only take the interpreter lock from the event loop more often (threads wait here without it).
FILLING = threading.BoundedSemaphore(2)


def prepared(workspaces: Workspaces, item: WorkItem, overlay: bool = False) -> tuple[Path, bool]:
    """``item``'s workspace, made and filled (blocking: run in a worker thread); a half-filled one is removed.
    With ``overlay``, a workspace from a template is an overlay of it where the machine allows (no copy)."""
    workspace, remove = workspaces.create(item)
    fill = item.prepare
    if overlay and isinstance(fill, Seed) and mount_overlay(fill.source, workspace):
        fill = fill.then  # what is added over the tree goes to the trial's upper layer
    if fill is not None:
        try:
            with FILLING:
                fill(workspace)
        except BaseException:
            take_down(workspace, keep=False)
            if remove:
                remove_workspace(workspace)
            raise
    return workspace, remove


def is_folder_in(workspace: Path, relative: str) -> bool:
    """Whether ``relative`` names a folder inside ``workspace`` reached through no symlink."""
    current = workspace
    for part in Path(relative).parts:
        current = current / part
        try:
            if not stat.S_ISDIR(os.lstat(current).st_mode):
                return False
        except OSError:
            return False
    return True


def take_down(workspace: Path, *, keep: bool) -> None:
    """Unmount a workspace's overlay (a kept one copied to a plain folder first); a failure is logged, never
    the record's."""
    try:
        unmount_overlay(workspace, keep=keep)
    except OSError as exc:
        log.warning("cannot take the workspace's overlay down", path=str(workspace), error=str(exc))


def remove_workspace(workspace: Path) -> None:
    """Remove a finished workspace however deep the agent made it; a failure is logged, never the record's."""
    try:
        remove_tree(workspace)
    except OSError as exc:
        log.warning("cannot remove workspace", path=str(workspace), error=str(exc))


def failed_result(case: PromptCase, trial: int | None, adapter: str, message: str) -> CaptureResult:
    """The *error* record of an item that could not produce one of its own (``message`` says why)."""
    result = CaptureResult(
        id=case.id,
        input=case.input,
        output="",
        hint=case.hint,
        reference=case.reference,
        metadata=case.metadata,
        errors=[message],
        trial=trial,
        adapter=adapter,
    )
    return settle(result, [])


async def grade_stream(
    results: AsyncIterator[CaptureResult], runners: list[GraderRunner], concurrency: int, sink: Sink[CaptureResult]
) -> None:
    """Grade with ``concurrency`` workers (``fan_out``); ``sink`` sees completion order."""
    if concurrency == 1:
        async for result in results:
            await sink(await grade_result(result, runners))
        return

    @contextlib.asynccontextmanager
    async def worker() -> AsyncIterator[Callable[[CaptureResult], Awaitable[CaptureResult]]]:
        yield lambda result: grade_result(result, runners)

    await fan_out(results, worker, concurrency, sink)
