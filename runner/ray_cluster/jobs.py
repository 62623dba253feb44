"""One work item as a self-contained job: plain picklable specs, paths made absolute, files packed.

A job is what a remote worker needs to run one item with ``run_one`` and
nothing else: the prompt case, the trial number, and the agent, grader,
timeout and workspace specs, rebuilt from the run's live settings. Relative
paths mean nothing on a worker (its current directory is not the driver's),
so every path a spec holds is made absolute here, on the driver.

What a workspace starts with (``--cwd`` copied for each trial, a suite task's
fixtures and its git baseline) is made once on the driver, by the run's own
``prepare`` hook, into a temporary directory that is packed as a tar archive:
the *seed*. The worker unpacks the seed into the fresh workspace it creates, so
a node needs no copy of the fixtures. Programs named by path (the agent
command, grader scripts) are not packed: a node must see them at the same
path, and a job whose agent or grader is missing on its node comes back as
that record's error, naming the node.
"""

from __future__ import annotations

import functools
import io
import socket
import tarfile
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path

import msgspec
import msgspec.structs

from waza.protocol.errors import WazaError
from waza.protocol.io.secrets import mark_secret_env
from waza.protocol.records import CaptureResult, PromptCase
from waza.runner.engine.capture import run_one
from waza.runner.engine.pipeline import Settings, failed_result
from waza.runner.engine.specs import AgentSpec, GraderSpecT, Timeouts, Workspace
from waza.runner.grading.grader_runners import GraderRunner
from waza.runner.ray_cluster.collect import driver_paths

#: Agent options that name files the agent writes: always made absolute (the others only when they exist).
_WRITTEN = frozenset({"raw_log"})


class Job(msgspec.Struct, frozen=True):
    """One item to run remotely: everything ``run_one`` takes, nothing live (the seed travels beside it)."""

    case: PromptCase
    trial: int | None
    agent: AgentSpec
    graders: tuple[GraderSpecT, ...]
    timeouts: Timeouts
    workspace: Workspace
    #: The driver's waza version: a node running another one refuses the job (:class:`NodeMismatch`).
    version: str = ""
    #: Variables the driver was told hold keys (``--api-key-env``, ``--judge-api-key-env``): secret on the
    #: node too, whatever their names, so masked there and kept from graders and sandboxed agents.
    secrets: tuple[str, ...] = ()
    #: ``--ray-env`` names and values: set in the worker's environment when the job starts there
    #: (:func:`apply_env`), carried as a call argument, never in Ray's ``runtime_env`` (which Ray logs).
    env: dict[str, str] = msgspec.field(default_factory=dict)


class NodeMismatch(Exception):
    """A node runs another waza than the driver: no job of this run can be trusted there."""


def agent_of(settings: Settings) -> AgentSpec:
    """The agent spec of a run's settings, its command and paths absolute as the driver resolved them."""
    spec = settings.agent
    changes: dict[str, object] = {}
    for f in msgspec.structs.fields(spec):
        value = getattr(spec, f.name)
        # A bundled name (``--schema claude-code``) is not a file here and stays as it is.
        if isinstance(value, Path) and (f.name in _WRITTEN or value.exists()):
            changes[f.name] = _absolute(value)
    return msgspec.structs.replace(spec, **changes)


def graders_of(runners: Sequence[GraderRunner]) -> tuple[GraderSpecT, ...]:
    """The specs a run's grader runners were built from, as the engine resolved them (named, paths
    absolute, timeout and judge merged in); a review queue's path made absolute on the driver."""
    return tuple(driver_paths(runner.spec) for runner in runners)


def workspace_of(settings: Settings) -> Workspace:
    """Where a job runs on its node: the run's workspace choice with absolute paths."""
    ws = settings.workspaces
    root = None if ws.root is None else _absolute(ws.root)
    return Workspace(cwd=_absolute(ws.cwd), root=root, fresh=ws.fresh, keep=ws.keep)


def _absolute(path: Path) -> Path:
    return Path(path).expanduser().absolute()


def pack(prepare: Callable[[Path], None]) -> bytes:
    """The seed: what ``prepare`` puts in an empty workspace, as a gzipped tar archive."""
    with tempfile.TemporaryDirectory(prefix="waza-seed-") as tmp:
        prepare(Path(tmp))
        buffer = io.BytesIO()
        with tarfile.open(fileobj=buffer, mode="w:gz", compresslevel=1) as archive:
            archive.add(tmp, arcname=".")
        return buffer.getvalue()


def unpack(seed: bytes, workspace: Path) -> None:
    """Fill ``workspace`` from a seed; the "tar" filter refuses members that would land outside it."""
    with tarfile.open(fileobj=io.BytesIO(seed), mode="r:gz") as archive:
        archive.extractall(workspace, filter="tar")


def run_job(job: Job, seed: bytes | None = None, node_id: str = "", made: Callable[[Path], None] | None = None) -> CaptureResult:
    """Run one job where this is called (a Ray worker): the record, or the record's error.

    The record's ``metadata["ray"]`` says where it ran: ``node_id`` (Ray's id of this node) and the
    host name. A fault the local engine would stop the whole run for (the agent cannot start, a
    grader cannot be loaded) is, on a remote node, most often that node's fault (a program missing
    there), so it costs this record an error that names the node rather than the run. ``made`` is
    told the workspace as soon as it exists, before it is filled from the seed and the agent starts.
    """
    host = check_node(job, node_id)
    prepare = seeded(seed) if made is None else telling(made, seeded(seed))
    try:
        result = run_one(
            job.case,
            job.agent,
            job.graders,
            trial=job.trial,
            timeouts=job.timeouts,
            workspace=job.workspace,
            prepare=prepare,
        )
    except WazaError as exc:
        result = node_failure(job, host, node_id, exc)
    return located(result, node_id, host)


def check_node(job: Job, node_id: str) -> str:
    """This node's host name; :class:`NodeMismatch` when it runs another waza than the driver.

    The driver's key variables are marked secret here first (:attr:`Job.secrets`)."""
    from waza import __version__

    host = socket.gethostname()
    if job.version and job.version != __version__:
        raise NodeMismatch(f"node {host} ({node_id}) runs waza {__version__}, the driver {job.version}")
    for name in job.secrets:
        mark_secret_env(name)
    return host


def telling(made: Callable[[Path], None], prepare: Callable[[Path], None] | None) -> Callable[[Path], None]:
    """The ``prepare`` hook that tells ``made`` the workspace as soon as it exists, then runs ``prepare``."""
    return functools.partial(_told, made, prepare)


def _told(made: Callable[[Path], None], prepare: Callable[[Path], None] | None, workspace: Path) -> None:
    made(workspace)
    if prepare is not None:
        prepare(workspace)


def seeded(seed: bytes | None) -> Callable[[Path], None] | None:
    """The ``prepare`` hook that fills a workspace from ``seed`` (None: nothing to fill)."""
    return None if seed is None else functools.partial(unpack, seed)


def node_failure(job: Job, host: str, node_id: str, exc: WazaError) -> CaptureResult:
    """The error record of a job whose agent or graders could not start on this node."""
    return failed_result(job.case, job.trial, job.agent.adapter, f"on node {host} ({node_id}): {exc}")


def located(result: CaptureResult, node_id: str, host: str) -> CaptureResult:
    """``result`` with ``metadata["ray"]`` naming the node it ran on."""
    result.metadata = {**result.metadata, "ray": {"node_id": node_id, "host": host}}
    return result


__all__ = [
    "Job",
    "NodeMismatch",
    "agent_of",
    "check_node",
    "graders_of",
    "located",
    "node_failure",
    "pack",
    "run_job",
    "seeded",
    "telling",
    "unpack",
    "workspace_of",
]
