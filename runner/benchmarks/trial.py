"""One trial of a benchmark task: its environment started, each step's agent then verifier, the reward read.

Every fault costs this trial an error, never a score: an environment that
cannot give what the task asks (``environment-unsatisfied``), one that fails to
start or run (``environment-failed``), a verifier past its timeout
(``verifier-timeout``) or one that leaves no readable reward
(``reward-missing``). The verifier runs only after the agent's command has
ended with every process it started (the environment's guarantee), with a
fresh ``/logs/verifier`` and ``/tests`` staged from the task; its output is
kept in the result (its last bytes) and in the trial folder.

The agent is ``oracle`` (the task's reference solution, run in the
environment with ``/solution`` shown), ``nop`` (nothing), or any adapter whose
agent the environment confines (exec, headless CLIs, ACP).
"""

from __future__ import annotations

import fnmatch
import math
import os
import posixpath
import shutil
import stat
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import anyio
import msgspec

import waza.runner.benchmarks.docker
import waza.runner.benchmarks.host  # noqa: F401 - importing it registers --env host
from waza.adapters import adapter_class
from waza.adapters.base import AgentTask
from waza.adapters.sandbox.bwrap import Sandbox, plan, program_as_shown
from waza.adapters.specs import AgentSpec, ProcessAgent
from waza.protocol.benchmark_records import BenchmarkErrorKind, BenchmarkResult, BenchmarkStep
from waza.protocol.records import PromptCase
from waza.protocol.trajectory import DEFAULT_MAX_STEPS, DEFAULT_MAX_TRAJECTORY_MB, TrajectoryBuilder
from waza.runner.benchmarks import dockerfile, task_files
from waza.runner.benchmarks.environment import ENVIRONMENTS, Environment, EnvironmentSpec, EnvironmentUnsatisfied, Network
from waza.runner.benchmarks.formats import Healthcheck
from waza.runner.benchmarks.host_vars import resolve_task
from waza.runner.benchmarks.rewards import Reward, RewardError, pytest_reward, read_reward
from waza.runner.benchmarks.tasks import BenchTask, TaskStep

__all__ = ["CONTROL_AGENTS", "AgentChoice", "run_trial", "spec_for"]

#: The agents that are not agents: the reference solution, and doing nothing.
CONTROL_AGENTS = ("oracle", "nop")
#: Why a compose-only task does not run: Debian 12 ships no Docker Compose v2, and a home-made one is out.
COMPOSE_UNSUPPORTED = (
    "a compose environment (several services): waza runs single-container tasks only (a Dockerfile in environment/)"
)
#: The last bytes of the verifier's output kept in a result (all of it stays in the trial folder).
EVIDENCE_LIMIT = 16 * 1024
#: Where an agent that keeps config and state in a folder of its own (``stateDirEnv``) gets a writable one.
STATE_DIR = "/logs/agent/state"
#: The largest file copied from the agent's own state folder into the trial's (config files, not sessions).
STATE_SEED_LIMIT = 1024 * 1024


class AgentChoice(msgspec.Struct, frozen=True):
    """``name`` is ``oracle``, ``nop`` or an adapter's name (then ``agent`` is its spec)."""

    name: str
    agent: AgentSpec | None = None
    #: The trajectory kept per step (as ``--max-steps`` and ``--max-trajectory-mb``).
    max_steps: int = DEFAULT_MAX_STEPS
    max_trajectory_mb: int = DEFAULT_MAX_TRAJECTORY_MB


def spec_for(
    task: BenchTask,
    *,
    allow_network: bool = False,
    ports: tuple[int, ...] = (),
    read_only: tuple[Path, ...] = (),
    keep_env: tuple[str, ...] = (),
    base_images: Mapping[str, str] | None = None,
    offline: bool = False,
) -> tuple[EnvironmentSpec, list[str]]:
    """The environment a task asks for, narrowed to what the run allows, and each change made to run it so
    (``offline``: no network whatever the task asks or the run allows)."""
    changed: list[str] = []
    network: Network = "none"
    if task.network != "no-network":
        if allow_network and not offline:
            network = "host"
        elif offline:
            changed.append(f"network: the task asks {task.network!r}; run with none (--offline)")
        else:
            changed.append(f"network: the task asks {task.network!r}; run with none (allow it with --sandbox-net host)")
    if network == "none" and ports:
        network = "loopback"
    needs: list[tuple[str, str]] = []
    for step in task.steps:
        scripts = [f"{folder}/{step.test_script}" for folder in step.tests] + list(step.extra_tests.values())
        for rel in scripts:
            if task_files.exists(task.path, rel):
                needs += dockerfile.installs(task_files.read_text(task.path, rel))
    spec = EnvironmentSpec(
        task_dir=task.path,
        environment_dir=task.environment_dir,
        workdir=task.workdir,
        network=network,
        ports=ports if network == "loopback" else (),
        read_only=read_only,
        keep_env=keep_env,
        cpus=task.cpus,
        memory_mb=task.memory_mb,
        storage_mb=task.storage_mb,
        build_timeout_sec=task.build_timeout_sec,
        env=task.environment_env,
        dockerfile=task.dockerfile,
        verifier_needs=tuple(dict.fromkeys(needs)),
        base_images=dict(base_images or {}),
        image=task.docker_image,
    )
    return spec, changed


def _stage(task: BenchTask, step: TaskStep, stage: Path) -> tuple[Path, Path | None]:
    """Fresh copies of what ``/tests`` and ``/solution`` show for this step (symlinks copied as symlinks)."""
    shutil.rmtree(stage, ignore_errors=True)
    tests = stage / "tests"
    tests.mkdir(parents=True)
    for folder in step.tests:
        shutil.copytree(task.path / folder, tests, symlinks=True, dirs_exist_ok=True)
    for name, source in step.extra_tests.items():
        shutil.copy2(task.path / source, tests / name, follow_symlinks=False)
    if step.solution is None or step.solve_script is None:
        return tests, None
    solution = stage / "solution"
    if step.solution == ".":
        solution.mkdir()
        shutil.copy2(task.path / step.solve_script, solution / step.solve_script, follow_symlinks=False)
    else:
        shutil.copytree(task.path / step.solution, solution, symlinks=True)
    return tests, solution


async def _agent(
    env: Environment, task: BenchTask, step: TaskStep, agent: AgentChoice, solution: Path | None, out: BenchmarkStep
) -> None:
    if agent.name == "nop":
        return
    if agent.name == "oracle":
        if solution is None or step.solve_script is None:
            out.agent_errors.append("the task has no reference solution")
            return
        done = await env.exec(
            ["bash", f"/solution/{step.solve_script}"],
            phase="oracle",
            env=task.solution_env,
            timeout=step.agent_timeout,
            mounts={"/solution": solution},
            user=step.agent_user,
        )
        out.agent_exit, out.agent_timed_out = done.exit_code, done.timed_out
        (env.logs / "agent" / "oracle.txt").write_text(done.output)
        return

    def confine(argv: Any, environ: Any) -> tuple[list[str], dict[str, str]]:
        return env.command(argv, phase="agent", env=environ, user=step.agent_user)

    assert agent.agent is not None, "an adapter's choice carries its spec"
    cls = adapter_class(agent.name)
    spec = msgspec.structs.replace(agent.agent, command=tuple(program_as_shown(list(agent.agent.command))))
    if isinstance(spec, ProcessAgent):
        spec = msgspec.structs.replace(spec, env={**spec.env, **_state_dir(env, cls.state_dir_env(spec), spec.env)})
    adapter = cls(spec, confine=confine)
    recorder = TrajectoryBuilder(max_steps=agent.max_steps, max_bytes=agent.max_trajectory_mb << 20)
    async with adapter:
        case = PromptCase(id=task.id if step.name is None else f"{task.id}/{step.name}", input=step.instruction)
        run = await adapter.run(AgentTask(case=case, workspace=env.workspace, recorder=recorder, timeout=step.agent_timeout))
    out.agent_exit, out.agent_timed_out, out.agent_errors = run.exit.code, run.exit.timed_out, list(run.errors)
    out.agent_stderr = run.stderr[-EVIDENCE_LIMIT:] if run.stderr else None
    reduced = recorder.finish()
    out.trajectory, out.output, out.usage, out.dropped_events = reduced.steps, reduced.output, reduced.usage, reduced.dropped


def _state_dir(env: Environment, name: str | None, spec_env: Mapping[str, str]) -> dict[str, str]:
    """The agent's state folder variable (``CODEX_HOME``) pointed at :data:`STATE_DIR`, a writable folder of
    the trial, seeded with the regular files at the top of the folder it named (the config ``serve-model``
    wrote, or the user's): the folder itself is shown read-only, or not at all, inside the environment."""
    if name is None:
        return {}
    host = env.logs / "agent" / posixpath.basename(STATE_DIR)
    host.mkdir(parents=True, exist_ok=True)
    seed = spec_env.get(name, os.environ.get(name))
    if seed and os.path.isdir(seed):
        with os.scandir(seed) as entries:
            for entry in entries:
                if entry.is_file(follow_symlinks=False) and entry.stat(follow_symlinks=False).st_size <= STATE_SEED_LIMIT:
                    shutil.copyfile(entry.path, host / entry.name, follow_symlinks=False)
    return {name: STATE_DIR}


async def _verify(env: Environment, task: BenchTask, step: TaskStep, mounts: dict[str, Path], out: BenchmarkStep) -> Reward:
    """The verifier in ``env`` with ``mounts`` shown (``/tests``, unless its image holds them), its reward read."""
    done = await env.exec(
        ["bash", f"/tests/{step.test_script}"],
        phase="verifier",
        env=step.verifier_env,
        timeout=step.verifier_timeout,
        mounts=mounts,
        user=step.verifier_user,
    )
    (env.logs / "verifier-output.txt").write_text(done.output)
    out.verifier_exit, out.verifier_seconds = done.exit_code, done.seconds
    out.verifier_output = done.output[-EVIDENCE_LIMIT:]
    if done.timed_out:
        raise _Failed("verifier-timeout", f"the verifier ran past its timeout of {step.verifier_timeout:g} s")
    try:
        return pytest_reward(done.output) if task.grading == "pytest" else read_reward(env.logs / "verifier")
    except RewardError as exc:
        raise _Failed("reward-missing", str(exc)) from None


async def _verify_apart(
    agent_env: Environment, task: BenchTask, step: TaskStep, tests: Path, out: BenchmarkStep, notes: dict[str, str]
) -> Reward:
    """Harbor's separate verifier: a fresh environment of the same kind (its image from ``tests/``, a
    ``docker_image``, or the task's own environment anew), the agent's ``/logs/artifacts`` and collected
    artifacts copied in, then the verifier there; what it ran on goes to ``notes``."""
    where = step.verifier_environment
    assert where is not None, "only a step with a verifier environment is verified apart"
    network: Network = "host" if where.network != "no-network" and agent_env.spec.network == "host" else "none"
    spec = msgspec.structs.replace(
        agent_env.spec,
        environment_dir=where.environment_dir,
        dockerfile=where.dockerfile,
        image=where.image,
        workdir=where.workdir,
        network=network,
        ports=(),
        read_only=(),
        cpus=where.cpus,
        memory_mb=where.memory_mb,
        storage_mb=where.storage_mb,
        build_timeout_sec=where.build_timeout_sec,
        env=where.env,
    )
    label = "verifier" if step.name is None else f"verifier of step {step.name}"
    apart = type(agent_env)(spec, agent_env.trial_dir / ("verifier-env" if step.name is None else f"verifier-env-{step.name}"))
    try:
        try:
            await apart.start()
        except EnvironmentUnsatisfied as exc:
            raise _Failed("environment-unsatisfied", f"the {label}'s environment ({where.origin}): {exc}", exc.missing) from None
        skipped = copy_tree(agent_env.logs / "artifacts", apart.logs / "artifacts")
        mounts = {} if where.bundled_tests else {"/tests": tests}
        base = Path("artifacts") if step.name is None else Path("steps", step.name, "artifacts")
        for artifact in step.artifacts:  # each at its own place, as the agent left it
            place = posixpath.normpath(posixpath.join(agent_env.spec.workdir, artifact.source))
            kept = agent_env.trial_dir / base / (artifact.destination or artifact.source.lstrip("/"))
            if place.startswith("/logs/") or not kept.exists() or kept.is_symlink():
                continue  # /logs/artifacts is copied whole; a link is not followed on this side
            mounts[place] = kept
        reward = await _verify(apart, task, step, mounts, out)
        if skipped:
            said = f"{skipped} entries of /logs/artifacts not copied to the {label} (not files, folders or links)"
            return msgspec.structs.replace(reward, warnings=(*reward.warnings, said))
        return reward
    finally:
        await apart.stop()
        notes[label] = f"separate environment ({where.origin})"
        notes |= {f"{label} {key}": value for key, value in apart.facts().items()}


def copy_tree(source: Path, dest: Path) -> int:
    """Copy what an agent left in ``source`` to ``dest``: folders, regular files, and links as links (never
    followed on this side); anything else (a FIFO, a device) is skipped and counted."""
    skipped = 0
    dest.mkdir(parents=True, exist_ok=True)
    for root, dirs, files in os.walk(source, followlinks=False):
        into = dest / Path(root).relative_to(source)
        for name in [*dirs, *files]:
            origin, target = Path(root, name), into / name
            mode = origin.lstat().st_mode
            if stat.S_ISLNK(mode):
                target.symlink_to(os.readlink(origin))
            elif stat.S_ISDIR(mode):
                target.mkdir(exist_ok=True)
            elif stat.S_ISREG(mode):
                shutil.copyfile(origin, target, follow_symlinks=False)
            else:
                skipped += 1
    return skipped


async def _healthcheck(env: Environment, check: Healthcheck, whose: str) -> None:
    """Docker's HEALTHCHECK, as Harbor runs it: the command until it exits 0; failures within the start
    period do not count, ``retries`` failures in a row after it are the trial's ``environment-failed``."""
    start_end = time.monotonic() + check.start_period_sec
    failures = 0
    while True:
        done = await env.exec(["sh", "-c", check.command], phase="agent", env={}, timeout=check.timeout_sec)
        if done.exit_code == 0:
            return
        if time.monotonic() < start_end:
            await anyio.sleep(check.start_interval_sec)
            continue
        failures += 1
        if failures >= check.retries:
            tail = done.output.strip()[-300:]
            raise _Failed(
                "environment-failed",
                f"{whose} healthcheck failed {failures} times in a row: {check.command!r}" + (f" ({tail})" if tail else ""),
            )
        await anyio.sleep(check.interval_sec)


async def _collect_hooks(env: Environment, step: TaskStep) -> list[str]:
    """``[[verifier.collect]]`` of the main container, after the agent: best effort, as Harbor runs them (a
    hook that fails or times out is a warning, never the trial's verdict)."""
    warnings: list[str] = []
    for hook in step.collect:
        user = None if hook.user is None else str(hook.user)
        done = await env.exec(["sh", "-c", hook.command], phase="agent", env={}, timeout=hook.timeout_sec, user=user)
        if done.exit_code != 0:
            how = f"timed out after {hook.timeout_sec:g} s" if done.timed_out else f"exited {done.exit_code}"
            tail = done.output.strip()[-300:]
            warnings.append(f"collect hook {hook.command!r} {how}" + (f": {tail}" if tail else ""))
    return warnings


async def _collect(env: Environment, step: TaskStep, out: BenchmarkStep) -> list[str]:
    """The step's artifacts copied into the trial folder (``artifacts/``, or ``steps/NAME/artifacts/``);
    one warning per artifact that could not be."""
    base = Path("artifacts") if step.name is None else Path("steps", step.name, "artifacts")
    warnings: list[str] = []
    for artifact in step.artifacts:
        rel = base / (artifact.destination or artifact.source.lstrip("/"))
        problem = await env.collect(artifact.source, env.trial_dir / rel)
        if problem is None:
            _exclude(env.trial_dir / rel, artifact.exclude)
            out.artifacts.append(rel.as_posix())
        else:
            warnings.append(f"artifact {artifact.source!r} not collected: {problem}")
    return warnings


def _exclude(folder: Path, patterns: tuple[str, ...]) -> None:
    """Remove a collected folder's entries that an artifact's ``exclude`` names (by name or by path inside)."""
    if not patterns or folder.is_symlink() or not folder.is_dir():
        return
    for root, dirs, files in os.walk(folder, followlinks=False):
        for name in [*dirs, *files]:
            path = Path(root, name)
            rel = path.relative_to(folder).as_posix()
            if any(fnmatch.fnmatchcase(name, p) or fnmatch.fnmatchcase(rel, p) for p in patterns):
                if path.is_dir() and not path.is_symlink():
                    shutil.rmtree(path)
                    dirs.remove(name)
                else:
                    path.unlink()


def _below_min_reward(step: TaskStep, reward: Reward) -> str | None:
    """Which reward key is below the step's ``min_reward`` (a missing key counts as below), or None."""
    for key, least in (step.min_reward or {}).items():
        actual = reward.subscores.get(key, reward.score if key == "reward" else -math.inf)
        if actual < least:
            return f"{key}={actual:g} below min_reward {least:g}"
    return None


class _Failed(Exception):
    def __init__(self, kind: BenchmarkErrorKind, message: str, missing: list[str] | None = None) -> None:
        self.kind, self.message, self.missing = kind, message, missing or []
        super().__init__(message)


def shown_of_host(agent: AgentChoice, read_only: tuple[Path, ...], ports: tuple[int, ...]) -> tuple[Path, ...]:
    """What the trial's environment shows of the host beyond its system: the listed folders and the agent
    program's installation, planned from the evaluator's command line (links resolved now) as for
    ``--sandbox``: nothing the agent sends later (a terminal's command, a session id) adds to it. With
    ``ports`` relayed in, waza's own interpreter is shown too (the relay runs on it)."""
    command: list[str] = []
    if agent.agent is not None:  # a headless agent's program comes from its schema, not the command
        cls = adapter_class(agent.name)
        cls.check(agent.agent)
        command = cls.agent_command(agent.agent)
    return plan(Sandbox(read_only=read_only, network="loopback" if ports else "none", ports=ports), command).read_only


async def run_trial(
    task: BenchTask,
    agent: AgentChoice,
    *,
    env_kind: str,
    trial_dir: Path,
    trial: int = 1,
    allow_network: bool = False,
    ports: tuple[int, ...] = (),
    read_only: tuple[Path, ...] = (),
    keep_env: tuple[str, ...] = (),
    base_images: Mapping[str, str] | None = None,
    offline: bool = False,
) -> BenchmarkResult:
    """Run one trial of ``task`` in a fresh ``trial_dir``; every fault is this result's error. ``ports`` are
    host loopback ports the agent may reach (``waza serve-model``), ``read_only`` host paths it sees,
    ``keep_env`` secret-like variables it keeps, ``base_images`` a map of ``FROM`` images to local ones
    for engines that build (``--base-image``); ``offline``: no network at all, and the result says so."""
    clock = time.perf_counter()
    task, host_variables, unset = resolve_task(task, os.environ)
    read_only = shown_of_host(agent, read_only, ports)
    spec, offline_changes = spec_for(
        task,
        allow_network=allow_network,
        ports=ports,
        read_only=read_only,
        keep_env=keep_env,
        base_images=base_images,
        offline=offline,
    )
    env = ENVIRONMENTS[env_kind](spec, trial_dir)
    first = task.steps[0]
    result = BenchmarkResult(
        task=task.id,
        format=task.format,
        checksum=task.checksum,
        trial=trial,
        agent=agent.name,
        status="error",
        score=None,
        environment=env.facts(),
        timeouts={"agent": first.agent_timeout, "verifier": first.verifier_timeout, "build": task.build_timeout_sec},
        offline=[*(["the run is --offline: no network for builds, agent or verifier"] if offline else []), *offline_changes],
        trial_dir=str(trial_dir),
    )
    rewards: list[Reward] = []
    notes: dict[str, str] = {}
    try:
        if unset:
            raise _Failed("environment-unsatisfied", "the task's env names variables waza's environment does not set", unset)
        if task.refused:
            raise _Failed("environment-unsatisfied", "the task asks for hardware waza does not give", list(task.refused))
        images = [
            s.verifier_environment.origin for s in task.steps if s.verifier_environment and s.verifier_environment.bundled_tests
        ]
        if images and not env.runs_images:
            why = f"a verifier image with its tests inside ({images[0]}): --env {env.kind} runs no image (--env docker does)"
            raise _Failed("environment-unsatisfied", why, [why])
        if task.compose_file is not None:
            if task.dockerfile is None:
                raise _Failed("environment-unsatisfied", COMPOSE_UNSUPPORTED, [f"{task.compose_file}: {COMPOSE_UNSUPPORTED}"])
            result.warnings.append(f"{task.compose_file} not used: only the Dockerfile's container runs (no compose services)")
        try:
            await env.start()
        except EnvironmentUnsatisfied as exc:
            raise _Failed("environment-unsatisfied", str(exc), exc.missing) from None
        if task.healthcheck is not None:
            await _healthcheck(env, task.healthcheck, "the environment's")
        for number, step in enumerate(task.steps, 1):
            out = BenchmarkStep(name=step.name)
            result.steps.append(out)
            if step.healthcheck is not None:
                await _healthcheck(env, step.healthcheck, f"step {step.name!r}'s")
            tests, solution = _stage(task, step, trial_dir / "stage")
            await _agent(env, task, step, agent, solution, out)
            result.warnings += await _collect_hooks(env, step)
            if step.verifier_environment is None:
                reward = await _verify(env, task, step, {"/tests": tests}, out)
                result.warnings += await _collect(env, step, out)
            else:  # artifacts first: the verifier sees them; after the last step the agent's environment is done
                result.warnings += await _collect(env, step, out)
                if number == len(task.steps):
                    await env.stop()
                reward = await _verify_apart(env, task, step, tests, out, notes)
            out.score, out.subscores, out.reward_source = reward.score, reward.subscores, reward.source
            result.warnings += reward.warnings
            rewards.append(reward)
            below = _below_min_reward(step, reward)
            if below is not None and number < len(task.steps):
                result.stopped = f"step {step.name!r}: {below}; the {len(task.steps) - number} later step(s) did not run"
                break
    except _Failed as exc:
        result.error_kind, result.error, result.missing = exc.kind, exc.message, exc.missing
    except OSError as exc:
        result.error_kind, result.error = "environment-failed", f"the environment failed: {exc}"
    finally:
        await env.stop()
        result.environment = {**env.facts(), **notes}
        if task.not_applied:
            result.environment["not_applied"] = "; ".join(task.not_applied)
        if host_variables:  # the names only: the values may be keys
            result.environment["host_variables"] = ", ".join(host_variables)
        result.seconds = round(time.perf_counter() - clock, 3)
    if result.error_kind is None:
        if task.reward_strategy == "final" or len(rewards) == 1:
            result.score, result.subscores = rewards[-1].score, rewards[-1].subscores
        else:
            keys = dict.fromkeys(k for r in rewards for k in r.subscores)
            result.subscores = {k: sum(r.subscores.get(k, 0.0) for r in rewards) / len(rewards) for k in keys}
            result.score = sum(r.score for r in rewards) / len(rewards)
        result.status = "passed" if result.score is not None and result.score >= 1.0 else "failed"
    return result
