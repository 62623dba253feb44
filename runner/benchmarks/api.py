"""The Python API of benchmark runs: ``waza.run_benchmark`` and ``waza.arun_benchmark``.

What ``waza run DIR`` does for Harbor and Terminal-Bench 1.x task folders, in
API terms: the agent is an agent spec (``waza.HeadlessAgent(schema=...)``,
``waza.ExecAgent(command=...)``, ``waza.AcpAgent(...)``) or one of the control
agents ``"oracle"`` and ``"nop"``; every problem with the arguments is a
ConfigError before anything runs; each :class:`~waza.protocol.benchmark_records.BenchmarkResult`
is yielded (and written to ``output``, flushed) as its trial ends.
"""

from __future__ import annotations

import contextlib
import functools
import os
import tempfile
from collections.abc import AsyncGenerator, Mapping, Sequence
from pathlib import Path
from typing import IO, Literal, TypedDict, Unpack

from waza.protocol.benchmark_records import BenchmarkResult
from waza.protocol.errors import ConfigError
from waza.runner.benchmarks import environment
from waza.runner.benchmarks import run as runs
from waza.runner.benchmarks.loader import load_folder
from waza.runner.benchmarks.trial import CONTROL_AGENTS, AgentChoice
from waza.runner.engine.run_setup import collect, resolve_agent
from waza.runner.engine.specs import AgentSpec

__all__ = ["BenchmarkOptions", "agent_choice_of", "arun_benchmark", "environment_kind", "run_benchmark"]

ControlAgent = Literal["oracle", "nop"]


class BenchmarkOptions(TypedDict, total=False):
    """The keyword options of :func:`run_benchmark`: those of :func:`arun_benchmark` (which gives their
    defaults), spelled once."""

    env: str | None
    tasks: Sequence[str]
    tags: Sequence[str]
    trials: int
    concurrency: int
    output: str | os.PathLike[str] | None
    resume: bool
    work_dir: str | os.PathLike[str] | None
    ports: Sequence[int]
    read_only: Sequence[str | os.PathLike[str]]
    keep_env: Sequence[str]
    allow_network: bool
    offline: bool
    base_images: Mapping[str, str] | None


def environment_kind(name: str | None, *, option: str = "env") -> str:
    """The environment kind to run in, checked (``option`` names the argument in errors); None: the best
    one this machine has."""
    import waza.runner.benchmarks.trial  # noqa: F401 - registers the environments

    if name is None:
        best, why = environment.best_available()
        if best is None:
            reasons = "; ".join(f"{k}: {w}" for k, w in why.items())
            raise ConfigError(f"no environment can run here ({reasons})", field=option)
        return best
    cls = environment.ENVIRONMENTS.get(name)
    if cls is None:
        raise ConfigError(f"unknown environment {name!r} (known: {', '.join(environment.ENVIRONMENTS)})", field=option)
    why_not = cls.available()
    if why_not is not None:
        raise ConfigError(f"{name} cannot run here: {why_not}", field=option)
    return name


def agent_choice_of(agent: AgentSpec | ControlAgent) -> AgentChoice:
    """The agent a benchmark trial runs, from an agent spec (checked as every run checks it) or a control
    agent's name; an adapter that cannot run inside an environment, or a spec with a sandbox of its own
    (the task's environment is the sandbox), is a ConfigError."""
    if isinstance(agent, str):
        if agent not in CONTROL_AGENTS:
            raise ConfigError(f"agent {agent!r}: give an agent spec, or 'oracle' or 'nop'", field="agent")
        return AgentChoice(agent)
    if getattr(agent, "sandbox", None) is not None:
        raise ConfigError(f"{type(agent).__name__}.sandbox: a benchmark's agent always runs in the task's environment")
    cls, spec = resolve_agent(agent)
    if not cls.confinable:
        raise ConfigError(f"the {cls.name} adapter cannot run inside a task's environment (exec, headless and acp can)")
    return AgentChoice(cls.name, spec)


async def arun_benchmark(
    path: str | os.PathLike[str],
    agent: AgentSpec | ControlAgent,
    *,
    env: str | None = None,
    tasks: Sequence[str] = (),
    tags: Sequence[str] = (),
    trials: int = 1,
    concurrency: int = 1,
    output: str | os.PathLike[str] | None = None,
    resume: bool = False,
    work_dir: str | os.PathLike[str] | None = None,
    ports: Sequence[int] = (),
    read_only: Sequence[str | os.PathLike[str]] = (),
    keep_env: Sequence[str] = (),
    allow_network: bool = False,
    offline: bool = False,
    base_images: Mapping[str, str] | None = None,
) -> AsyncGenerator[BenchmarkResult, None]:
    """Run every trial of the task folder or dataset at ``path``; yield each result as its trial ends.

    ``env`` is ``"host"`` or ``"docker"`` (None: the best one here); ``tasks`` and ``tags`` select (globs);
    ``output`` is a JSONL file each result is also written to (an existing one is refused unless
    ``resume``, which skips the trials already there); ``work_dir`` keeps each trial's folder (the
    workspace, the logs, the artifacts; None: a temporary folder removed at the end). What the agent may
    reach beyond the task: ``ports`` of the host's loopback (``waza serve-model``), ``read_only`` host
    paths, the secret-like variables in ``keep_env``, and the network when the task asks for it and
    ``allow_network``; ``offline`` refuses that. ``base_images`` maps a ``FROM`` image to a local one
    (``env="docker"``).
    """
    if trials < 1 or concurrency < 1:
        raise ConfigError("trials and concurrency must be at least 1")
    if offline and allow_network:
        raise ConfigError("offline=True refuses allow_network=True", field="offline")
    kind = environment_kind(env)
    if base_images and kind != "docker":
        raise ConfigError(f"base_images apply to env='docker' (which builds images), not {kind}", field="base_images")
    chosen = runs.select(load_folder(Path(path)), names=tasks, tags=tags)
    choice = agent_choice_of(agent)
    if resume and output is None:
        raise ConfigError("resume=True needs output (the results already written)", field="resume")
    skip = runs.done_keys(Path(output)) if resume and output is not None else set()
    with contextlib.ExitStack() as stack:
        out: IO[bytes] | None = None
        if output is not None:
            try:
                out = stack.enter_context(Path(output).open("ab" if resume else "xb"))
            except FileExistsError:
                raise ConfigError(f"{output} exists: pass resume=True to go on with it, or another output") from None
        root = (
            Path(work_dir)
            if work_dir is not None
            else Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="waza-bench-")))
        )
        root.mkdir(parents=True, exist_ok=True)
        results = runs.run_benchmark(
            chosen,
            choice,
            env_kind=kind,
            work_dir=Path(tempfile.mkdtemp(prefix="run-", dir=root)),
            out=out,
            trials=trials,
            concurrency=concurrency,
            allow_network=allow_network,
            ports=tuple(ports),
            read_only=tuple(Path(p).absolute() for p in read_only),
            keep_env=tuple(keep_env),
            skip=skip,
            base_images=base_images,
            offline=offline,
        )
        async with contextlib.aclosing(results) as stream:
            async for result in stream:
                yield result


def run_benchmark(
    path: str | os.PathLike[str],
    agent: AgentSpec | ControlAgent,
    **options: Unpack[BenchmarkOptions],
) -> list[BenchmarkResult]:
    """Blocking :func:`arun_benchmark`: every result, in the order the trials ended."""
    return collect(functools.partial(arun_benchmark, path, agent, **options), "run_benchmark")
