"""Running a benchmark: tasks x trials, ``concurrency`` at once, each result written and flushed as it ends.

Results go to a JSONL file (or stdout) one :class:`~waza.protocol.benchmark_records.BenchmarkResult` per
line. With ``resume`` the file is read first and every (task, checksum, trial,
agent) already there is skipped, so an interrupted run goes on where it
stopped; a task whose files changed since has a new checksum and runs again.
Each trial gets a fresh folder under ``work_dir`` (kept: it holds the
workspace and the logs, the evidence behind the result).
"""

from __future__ import annotations

import fnmatch
from collections.abc import AsyncGenerator, Mapping, Sequence
from contextlib import suppress
from pathlib import Path
from typing import IO

import anyio
import msgspec

from waza.protocol.benchmark_records import BenchmarkResult
from waza.protocol.errors import ConfigError
from waza.runner.benchmarks.tasks import BenchTask
from waza.runner.benchmarks.trial import AgentChoice, run_trial

__all__ = ["RESUME_LIMIT", "done_keys", "run_benchmark", "select"]

#: The longest line read back from an output file with ``resume``.
RESUME_LIMIT = 64 * 1024 * 1024

Key = tuple[str, str, int, str]


def select(tasks: Sequence[BenchTask], *, names: Sequence[str] = (), tags: Sequence[str] = ()) -> list[BenchTask]:
    """Tasks whose id matches one of ``names`` and that carry a tag matching one of ``tags`` (globs; none: all)."""
    chosen = [
        t
        for t in tasks
        if (not names or any(fnmatch.fnmatchcase(t.id, n) for n in names))
        and (not tags or any(fnmatch.fnmatchcase(tag, g) for tag in t.tags for g in tags))
    ]
    if not chosen:
        raise ConfigError("no task matches --task/--tags")
    return chosen


def done_keys(path: Path) -> set[Key]:
    """The trials already in a results file; a torn last line (an interrupted write) is ignored."""
    keys: set[Key] = set()
    with suppress(FileNotFoundError), path.open("rb") as f:
        for number, line in enumerate(f, 1):
            if len(line) > RESUME_LIMIT:
                raise ConfigError(f"line longer than {RESUME_LIMIT} bytes", source=str(path), line=number)
            if not line.endswith(b"\n"):
                break
            try:
                r = msgspec.json.decode(line, type=BenchmarkResult)
            except msgspec.DecodeError as exc:
                raise ConfigError(f"not a benchmark result: {exc}", source=str(path), line=number) from None
            keys.add((r.task, r.checksum, r.trial, r.agent))
    return keys


async def run_benchmark(
    tasks: Sequence[BenchTask],
    agent: AgentChoice,
    *,
    env_kind: str,
    work_dir: Path,
    out: IO[bytes] | None,
    trials: int = 1,
    concurrency: int = 1,
    allow_network: bool = False,
    ports: tuple[int, ...] = (),
    read_only: tuple[Path, ...] = (),
    keep_env: tuple[str, ...] = (),
    skip: set[Key] | None = None,
    base_images: Mapping[str, str] | None = None,
    offline: bool = False,
) -> AsyncGenerator[BenchmarkResult, None]:
    """Yield each result as its trial ends (after writing it to ``out``, when given, and flushing)."""
    plan = [(t, n) for t in tasks for n in range(1, trials + 1) if (t.id, t.checksum, n, agent.name) not in (skip or set())]
    send, receive = anyio.create_memory_object_stream[BenchmarkResult](len(plan) or 1)
    limiter = anyio.CapacityLimiter(concurrency)

    async def one(task: BenchTask, number: int) -> None:
        async with limiter:
            trial_dir = work_dir / f"{task.id}.{number}"
            trial_dir.mkdir(parents=True, exist_ok=False)
            result = await run_trial(
                task,
                agent,
                env_kind=env_kind,
                trial_dir=trial_dir,
                trial=number,
                allow_network=allow_network,
                ports=ports,
                read_only=read_only,
                keep_env=keep_env,
                base_images=base_images,
                offline=offline,
            )
        if out is not None:
            out.write(msgspec.json.encode(result) + b"\n")
            out.flush()
        await send.send(result)

    async with anyio.create_task_group() as tg, receive, send:
        for task, number in plan:
            tg.start_soon(one, task, number)
        for _ in plan:
            yield await receive.receive()
