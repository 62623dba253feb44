"""One prompt × trial as a self-contained job: plain picklable specs, paths made absolute on the driver.

A job is what a remote worker needs to run one item with ``run_one`` and
nothing else: the prompt case, the trial number, and the agent, grader,
timeout and workspace specs. Relative paths mean nothing on a worker (its
current directory is not the driver's), so every path a spec holds is made
absolute here, on the driver, where it was written. The programs and files
those paths name are not copied: a worker must see them at the same path
(the same machine, a shared filesystem, or the same container image), and a
job whose agent or grader is missing on its node comes back as that
record's error, naming the node.
"""

from __future__ import annotations

import dataclasses
import socket
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from waza.protocol.errors import WazaError
from waza.protocol.records import CaptureResult, PromptCase

from ..api import run_one
from ..grader_specs import resolve_argv
from ..pipeline import WorkItem, failed_result
from ..specs import AgentSpec, Executable, GraderSpecT, PythonGrader, Timeouts, Worker, Workspace

#: Agent options that name files the agent writes: always made absolute (the others only when they exist).
_WRITTEN = frozenset({"raw_log"})


@dataclass(frozen=True, slots=True)
class Job:
    """One item to run remotely: everything ``run_one`` takes, nothing live."""

    case: PromptCase
    trial: int | None
    agent: AgentSpec
    graders: tuple[GraderSpecT, ...]
    timeouts: Timeouts
    workspace: Workspace


@dataclass(frozen=True, slots=True)
class JobTemplate:
    """The parts every job of a run shares, made portable once."""

    agent: AgentSpec
    graders: tuple[GraderSpecT, ...]
    timeouts: Timeouts
    workspace: Workspace

    @classmethod
    def of(
        cls, agent: AgentSpec, command: Sequence[str], graders: Sequence[GraderSpecT], timeouts: Timeouts, workspace: Workspace
    ) -> JobTemplate:
        """``command``: the agent command as the driver resolved it (an absolute program path)."""
        return cls(
            agent=_portable_agent(agent, command),
            graders=tuple(_portable_grader(g) for g in graders),
            timeouts=timeouts,
            workspace=_portable_workspace(workspace),
        )

    def job(self, item: WorkItem) -> Job:
        return Job(item.case, item.trial, self.agent, self.graders, self.timeouts, self.workspace)


def _absolute(path: Path) -> Path:
    return Path(path).expanduser().absolute()


def _portable_agent(agent: AgentSpec, command: Sequence[str]) -> AgentSpec:
    changes: dict[str, object] = {"command": tuple(command)}
    for f in dataclasses.fields(agent):
        value = getattr(agent, f.name)
        # A bundled name (``--schema claude-code``) is not a file here and stays as it is.
        if isinstance(value, Path) and (f.name in _WRITTEN or value.exists()):
            changes[f.name] = _absolute(value)
    return dataclasses.replace(agent, **changes)  # type: ignore[arg-type]


def _portable_grader(grader: GraderSpecT) -> GraderSpecT:
    if isinstance(grader, (Executable, Worker)):
        return dataclasses.replace(grader, argv=tuple(resolve_argv(list(grader.argv))))
    if isinstance(grader, PythonGrader) and isinstance(grader.fn, str):
        target, sep, func = grader.fn.rpartition(":")
        if target.endswith(".py"):
            return dataclasses.replace(grader, fn=f"{_absolute(Path(target))}{sep}{func}")
    return grader


def _portable_workspace(workspace: Workspace) -> Workspace:
    return dataclasses.replace(
        workspace,
        cwd=_absolute(workspace.cwd or Path.cwd()),
        root=None if workspace.root is None else _absolute(workspace.root),
        template=None if workspace.template is None else _absolute(workspace.template),
    )


def run_job(job: Job) -> CaptureResult:
    """Run one job where this is called (a Ray worker): the record, or the record's error.

    A fault the local engine would stop the whole run for (the agent cannot
    start, a grader cannot be loaded) is, on a remote node, most often that
    node's fault (a program missing there), so it costs this record an error
    that names the node rather than the run.
    """
    try:
        return run_one(job.case, job.agent, job.graders, trial=job.trial, timeouts=job.timeouts, workspace=job.workspace)
    except WazaError as exc:
        return failed_result(job.case, job.trial, job.agent.adapter, f"on node {socket.gethostname()}: {exc}")


__all__ = ["Job", "JobTemplate", "run_job"]
