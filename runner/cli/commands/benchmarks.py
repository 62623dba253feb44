"""``waza run DIR`` and ``waza check DIR`` when DIR holds benchmark tasks (Harbor or Terminal-Bench 1.x folders).

The run and check commands dispatch here in one place each (``is_benchmark``);
this module maps their options onto the benchmark engine
(:mod:`waza.runner.benchmarks`) and refuses the options it cannot honour.
"""

from __future__ import annotations

import sys
import tempfile
from collections.abc import Iterable, Mapping
from contextlib import ExitStack
from pathlib import Path

import msgspec
import orjson

from waza.protocol.benchmark_records import BenchmarkResult
from waza.protocol.errors import ConfigError
from waza.runner.benchmarks.api import environment_kind
from waza.runner.benchmarks.loader import check_folder, is_benchmark, load_folder
from waza.runner.benchmarks.run import done_keys, run_benchmark, select
from waza.runner.benchmarks.trial import CONTROL_AGENTS, AgentChoice
from waza.runner.cli.options import AgentOptions
from waza.runner.cli.runtime import EXIT_FAILED, EXIT_OK, EXIT_USAGE
from waza.runner.wording import count

__all__ = ["Reach", "agent_choice", "check_benchmark", "env_kind", "folder_for", "is_benchmark", "run_benchmarks"]


def env_kind(name: str | None) -> str:
    """``--env``'s kind, checked here; none given: the best one this machine has."""
    return environment_kind(name, option="--env")


class Reach(msgspec.Struct, frozen=True):
    """What the environment lets the agent reach beyond the task: host ports, paths, variables, the network."""

    ports: tuple[int, ...]
    read_only: tuple[Path, ...]
    keep_env: tuple[str, ...]
    allow_network: bool


def agent_choice(
    agent: AgentOptions, command: list[str], agent_env: Mapping[str, str] | None = None
) -> tuple[AgentChoice, Reach]:
    """The agent and what the environment lets it reach: ports, read-only paths, variables, the network
    (``agent_env``: variables for the agent, from ``--serve-model``).

    The sandbox flags mean the same here, applied to the task's environment
    (which is the sandbox): ``--sandbox-port`` relays a loopback port in
    (``waza serve-model``), ``--sandbox-ro`` shows a path read-only,
    ``--sandbox-env`` keeps a secret-like variable and ``--sandbox-net host``
    allows the network a task asks for.
    """
    if agent.sandbox is not None:
        raise ConfigError("--sandbox does nothing here: a benchmark's agent always runs in the task's environment (--env)")
    if agent.sandbox_rw:
        raise ConfigError("--sandbox-rw is not supported for benchmark tasks: the agent writes its WORKDIR")
    if agent.sandbox_net not in ("none", "loopback", "host"):
        raise ConfigError(f"--sandbox-net takes none, loopback or host, got {agent.sandbox_net!r}")
    if agent.cwd is not None:
        raise ConfigError("--cwd does nothing with benchmark tasks: the agent works in the task's WORKDIR")
    reach = Reach(
        ports=tuple(agent.sandbox_port or []),
        read_only=tuple(p.absolute() for p in agent.sandbox_ro or []),
        keep_env=tuple(agent.sandbox_env or []),
        allow_network=agent.sandbox_net == "host",
    )
    if agent.adapter in CONTROL_AGENTS:
        if command:
            raise ConfigError(f"the {agent.adapter} adapter runs no agent command, but one was given: {' '.join(command)!r}")
        return AgentChoice(agent.adapter), reach
    plain = msgspec.structs.replace(agent, sandbox_ro=None, sandbox_port=None, sandbox_env=None, sandbox_net="none")
    cls, spec = plain.resolve(command, agent_env)
    if not cls.confinable:
        raise ConfigError(f"the {cls.name} adapter cannot run inside a task's environment (exec, headless and acp can)")
    limits = {"max_steps": agent.max_steps, "max_trajectory_mb": agent.max_trajectory_mb}
    return AgentChoice(cls.name, spec, **limits), reach


def check_benchmark(path: Path) -> int:
    """``waza check DIR``: one line per problem (file and key) on stdout; exit 2 when any."""
    tasks, problems, notices = check_folder(path)
    for notice in notices:
        print(f"waza: {notice}", file=sys.stderr)
    for problem in problems:
        print(str(problem))
    if problems:
        return EXIT_USAGE
    formats = sorted({t.format for t in tasks})
    print(f"waza: {path}: ok: {count(len(tasks), 'task')} ({', '.join(formats)})", file=sys.stderr)
    return EXIT_OK


def _summary(results: list[BenchmarkResult]) -> dict[str, object]:
    scores = [r.score for r in results if r.score is not None]
    return {
        "trials": len(results),
        "passed": sum(r.status == "passed" for r in results),
        "failed": sum(r.status == "failed" for r in results),
        "errors": sum(r.status == "error" for r in results),
        "mean_score": sum(scores) / len(scores) if scores else None,
    }


def parse_base_images(values: Iterable[str]) -> dict[str, str]:
    """``--base-image IMAGE=LOCAL`` values as a map; a malformed one is a usage error naming it."""
    out: dict[str, str] = {}
    for value in values:
        image, sep, local = value.partition("=")
        if not sep or not image.strip() or not local.strip() or any(c.isspace() for c in value):
            raise ConfigError(f"--base-image takes IMAGE=LOCAL_IMAGE (e.g. ubuntu:24.04=local/debian:12), got {value!r}")
        out[image] = local
    return out


def base_images_for(kind: str, values: list[str] | None) -> dict[str, str]:
    """``--base-image`` for a run in environment ``kind``: only docker builds images, so only it takes them."""
    images = parse_base_images(values or [])
    if images and kind != "docker":
        raise ConfigError(f"--base-image applies to --env docker (which builds images), not {kind}")
    return images


async def run_benchmarks(
    path: Path,
    command: list[str],
    agent: AgentOptions,
    *,
    names: list[str],
    tags: list[str],
    trials: int,
    env: str | None,
    resume: bool,
    output: str,
    reporters: list[str],
    base_images: list[str] | None = None,
    offline: bool = False,
    agent_env: Mapping[str, str] | None = None,
) -> int:
    """``waza run DIR`` for benchmark tasks: exit 0 when every trial passed, 1 when not, 2 for bad usage."""
    tasks = select(load_folder(path), names=names, tags=tags)
    kind = env_kind(env)
    images = base_images_for(kind, base_images)
    choice, reach = agent_choice(agent, command, agent_env)
    if offline and reach.allow_network:
        raise ConfigError("--offline refuses --sandbox-net host (the network for the tasks)", field="--offline")
    report: Path | None = None
    for spec in reporters:
        fmt, _, target = spec.partition(":")
        if fmt != "json" or not target or target == "-":
            raise ConfigError(f"benchmark runs write --reporter json:FILE only, got {spec!r}", field="--reporter")
        report = Path(target)
    if resume and output == "-":
        raise ConfigError("--resume needs -o FILE (the results already written)")
    skip = done_keys(Path(output)) if resume else set()
    results: list[BenchmarkResult] = []
    with ExitStack() as stack:
        work = agent.workspace_dir or Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="waza-bench-")))
        work = Path(tempfile.mkdtemp(prefix="run-", dir=folder_for(work)))
        try:
            out = sys.stdout.buffer if output == "-" else stack.enter_context(Path(output).open("ab" if resume else "xb"))
        except FileExistsError:
            raise ConfigError(f"{output} exists: give --resume to go on with it, or another -o FILE") from None
        async for result in run_benchmark(
            tasks,
            choice,
            env_kind=kind,
            work_dir=work,
            out=out,
            trials=trials,
            concurrency=agent.concurrency,
            allow_network=reach.allow_network,
            ports=reach.ports,
            read_only=reach.read_only,
            keep_env=reach.keep_env,
            skip=skip,
            base_images=images,
            offline=offline,
        ):
            results.append(result)
            print(
                f"waza: {result.task} trial {result.trial}: {result.status}" + (f" ({result.error})" if result.error else ""),
                file=sys.stderr,
            )
    summary = _summary(results)
    if report is not None:
        report.write_bytes(
            orjson.dumps({"environment": kind, "agent": choice.name, "summary": summary}, option=orjson.OPT_INDENT_2)
        )
    print(
        f"waza: {summary['passed']} of {count(len(results), 'trial')} passed, "
        f"{count(sum(r.status == 'error' for r in results), 'error')} ({kind})",
        file=sys.stderr,
    )
    return EXIT_OK if results and summary["passed"] == summary["trials"] else EXIT_FAILED


def folder_for(path: Path) -> Path:
    """A folder the user named to keep trials in (``--workspace-dir``, ``--keep``), made when it is missing."""
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ConfigError(f"cannot make {path}: {exc.strerror or exc}") from None
    return path
