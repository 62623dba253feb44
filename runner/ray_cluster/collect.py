"""Files a Ray task writes that belong with the driver's output: brought back with the record.

Besides its results, a local run writes the agent's raw log (``AcpAgent.raw_log``,
``HeadlessAgent.raw_log``) and the human graders' review queue (``Builtin("human").config["queue"]``,
default ``waza-review.jsonl`` in the current directory) on the machine it runs on. A Ray task runs on
a node whose filesystem the driver may not see, and tasks that share a filesystem would each empty
the raw log when their agent starts (it is emptied once per run). So on the node each job's files are
moved to a private temporary directory (``redirect``); the task returns their bytes beside its record
(``gather``: at most ``COLLECT_LIMIT`` bytes a file, cut at the end of a line, the directory removed);
and the driver appends them to the paths the local run would have written (``deliver``), one write
per task and file with O_APPEND, so each task's lines stay together and whole.

The agent's stderr needs nothing of this: its tail is in the record (``CaptureResult.stderr``).
A human grader's labels file is read, not written: its path is made absolute on the driver and must
exist at that path on the node (like a grader script), or the grade stays pending.
"""

from __future__ import annotations

import os
import sys
import tempfile
from collections.abc import Callable, Mapping
from pathlib import Path

import msgspec
import msgspec.structs

from waza.graders._review import DEFAULT_LABELS, DEFAULT_QUEUE
from waza.protocol.records import CaptureResult
from waza.runner.engine.specs import AcpAgent, AgentSpec, Builtin, GraderSpecT, HeadlessAgent

__all__ = ["COLLECT_LIMIT", "Collected", "deliver", "driver_paths", "run_collecting"]

#: Bytes of one file one task brings back to the driver; the rest (after the last whole line within) is dropped.
COLLECT_LIMIT = 32 << 20
#: The human graders, whose ``queue`` (written) and ``labels`` (read) name files.
_REVIEWERS = frozenset({"human", "human_calibration"})
_QUEUE, _LABELS = "queue", "labels"


class Collected(msgspec.Struct, frozen=True):
    """What one task's files held: (the driver's path, the bytes to append there), and what was cut short.

    ``cut``: (driver path, bytes dropped) for each file over ``COLLECT_LIMIT``.
    """

    files: tuple[tuple[str, bytes], ...] = ()
    cut: tuple[tuple[str, int], ...] = ()


def driver_paths(grader: GraderSpecT) -> GraderSpecT:
    """On the driver: a human grader with its labels path absolute, as this directory resolves it.

    The queue stays as configured: its lines come back, and the driver appends them to that path as a
    local run would (a relative one in the driver's current directory).
    """
    if not _is_reviewer(grader):
        return grader
    labels = Path(grader.config.get(_LABELS, DEFAULT_LABELS)).expanduser().absolute()
    return msgspec.structs.replace(grader, config={**grader.config, _LABELS: str(labels)})


def run_collecting(
    run: Callable[[AgentSpec, tuple[GraderSpecT, ...]], CaptureResult],
    agent: AgentSpec,
    graders: tuple[GraderSpecT, ...],
    prefix: str = "waza-collect-",
    made: Callable[[Path], None] | None = None,
) -> tuple[CaptureResult, Collected]:
    """On the node: ``run(agent, graders)`` with the files they write redirected, and what those files held.

    The record names the files as configured, not their private copies on the node. The private
    directory's name starts with ``prefix``; ``made`` is told it as soon as it exists (a Ray task
    leaves its track there: ``ray_tracks``).
    """
    with tempfile.TemporaryDirectory(prefix=prefix) as tmp:
        if made is not None:
            made(Path(tmp))
        moved: dict[Path, str] = {}
        agent = _agent_redirected(agent, Path(tmp), moved)
        graders = tuple(_grader_redirected(g, Path(tmp), moved) for g in graders)
        result = run(agent, graders)
        _name_as_configured(result, {str(local): path for local, path in moved.items()})
        return result, _gather(moved)


def deliver(collected: Collected, where: str) -> None:
    """On the driver: append each file's bytes to its path; a file cut short is said on stderr, naming ``where``."""
    for path, data in collected.files:
        if data:
            fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
            try:
                view = memoryview(data)
                while view:
                    view = view[os.write(fd, view) :]
            finally:
                os.close(fd)
    for path, dropped in collected.cut:
        print(
            f"waza: {where}: {dropped} bytes of {path} were not brought back from the Ray node "
            f"(at most {COLLECT_LIMIT >> 20} MB a file per task)",
            file=sys.stderr,
        )


def _is_reviewer(grader: GraderSpecT) -> bool:
    if not isinstance(grader, Builtin):
        return False
    from waza.graders import canonical

    return canonical(grader.grader) in _REVIEWERS


def _agent_redirected(agent: AgentSpec, tmp: Path, moved: dict[Path, str]) -> AgentSpec:
    if not isinstance(agent, (AcpAgent, HeadlessAgent)) or agent.raw_log is None:
        return agent
    local = tmp / "raw-log.jsonl"
    moved[local] = str(agent.raw_log)
    return msgspec.structs.replace(agent, raw_log=local)


def _grader_redirected(grader: GraderSpecT, tmp: Path, moved: dict[Path, str]) -> GraderSpecT:
    if not _is_reviewer(grader):
        return grader
    local = tmp / f"review-{len(moved)}.jsonl"
    moved[local] = str(grader.config.get(_QUEUE, DEFAULT_QUEUE))
    return msgspec.structs.replace(grader, config={**grader.config, _QUEUE: str(local)})


def _name_as_configured(result: CaptureResult, names: Mapping[str, str]) -> None:
    """A human grade says where its item was queued: the configured path, not the node's private copy."""
    for grade in result.grades:
        queue = grade.details.get(_QUEUE)
        if isinstance(queue, str) and queue in names:
            grade.details = {**grade.details, _QUEUE: names[queue]}
            grade.reasoning = grade.reasoning.replace(queue, names[queue])


def _gather(moved: Mapping[Path, str]) -> Collected:
    files, cut = [], []
    for local, path in moved.items():
        try:
            with open(local, "rb") as f:
                data = f.read(COLLECT_LIMIT + 1)
                size = os.fstat(f.fileno()).st_size
        except FileNotFoundError:
            continue  # nothing was written (no prompt reached the grader, or the agent never started)
        if len(data) > COLLECT_LIMIT:
            data = data[: data.rfind(b"\n", 0, COLLECT_LIMIT) + 1]
        if len(data) < size:
            cut.append((path, size - len(data)))
        files.append((path, data))
    return Collected(tuple(files), tuple(cut))
