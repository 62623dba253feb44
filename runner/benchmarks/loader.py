"""Reading benchmark folders: a Harbor task, a dataset of them, Terminal-Bench 1.x tasks; every problem located.

A folder is a Harbor task when it holds ``task.toml``, a Terminal-Bench 1.x
task when it holds ``task.yaml``, and a dataset when it holds neither but its
sub-folders are tasks (one level, as Harbor's datasets). Each problem is a
ConfigError naming the file and the key; :func:`check_folder` collects them all
(``waza check``), :func:`load_folder` stops at the first (``waza run``).
"""

from __future__ import annotations

import os
import re
import stat
import tomllib
from collections.abc import Iterator
from pathlib import Path, PurePosixPath
from typing import Any

import msgspec
import yaml

from waza.protocol.errors import ConfigError
from waza.runner.benchmarks import dockerfile, task_files
from waza.runner.benchmarks.formats import (
    Artifact,
    CollectHook,
    HarborAgent,
    HarborConfig,
    HarborStep,
    HarborVerifier,
    TerminalBenchConfig,
    known_keys,
)
from waza.runner.benchmarks.host_vars import task_templates
from waza.runner.benchmarks.tasks import BenchTask, TaskStep, VerifierEnvironment

__all__ = ["HARBOR_FILE", "TB1_FILE", "check_folder", "is_benchmark", "load_folder", "load_task"]

HARBOR_FILE = "task.toml"
TB1_FILE = "task.yaml"
DEFAULT_WORKDIR = "/app"
#: The compose files Harbor's Docker environment reads from environment/ (waza runs no compose: see trial.py).
COMPOSE_FILES = ("docker-compose.yaml", "docker-compose.yml", "compose.yaml", "compose.yml")
_FIELD = re.compile(r"at `\$\.?(?P<path>[^`]*)`")


def is_benchmark(path: Path) -> bool:
    """Whether ``path`` is a folder ``waza run`` reads as a benchmark (not an eval suite)."""
    if not path.is_dir() or (path / "eval.yaml").exists():
        return False
    if _kind(path) is not None:
        return True
    return any(_kind(path / name) is not None for name, mode in task_files.entries(path) if stat.S_ISDIR(mode))


def _kind(path: Path) -> str | None:
    for name, kind in ((HARBOR_FILE, "harbor"), (TB1_FILE, "terminal-bench-1")):
        if (path / name).exists() or (path / name).is_symlink():
            return kind
    return None


def _convert(raw: Any, model: type[msgspec.Struct], source: Path) -> Any:
    try:
        return msgspec.convert(raw, model, strict=True)
    except msgspec.ValidationError as exc:
        text = str(exc)
        match = _FIELD.search(text)
        field = match["path"] if match else None
        message = _FIELD.sub("", text).strip().rstrip("-").strip() or text
        raise ConfigError(message, source=str(source), field=field) from None


def _harbor(path: Path) -> BenchTask:
    source = path / HARBOR_FILE
    try:
        raw = tomllib.loads(task_files.read_text(path, HARBOR_FILE))
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"not TOML: {exc}", source=str(source)) from None
    config: HarborConfig = _convert(raw, HarborConfig, source)
    env = config.environment
    if env.os != "linux":
        raise ConfigError(f"only linux tasks run here, got {env.os!r}", source=str(source), field="environment.os")
    network = env.network_mode
    if "network_mode" not in raw.get("environment", {}) and env.allow_internet is not None:
        network = "public" if env.allow_internet else "no-network"
    environment_dir: Path | None = None
    text: str | None = None
    compose: str | None = None
    if task_files.is_dir(path, "environment"):
        environment_dir = path / "environment"
        compose = next((f"environment/{n}" for n in COMPOSE_FILES if task_files.exists(path, f"environment/{n}")), None)
        if task_files.exists(path, "environment/Dockerfile"):
            text = task_files.read_text(path, "environment/Dockerfile")
        elif not env.docker_image and compose is None:
            raise ConfigError("holds neither a Dockerfile nor a compose file", source=str(path / "environment"))
    elif not env.docker_image:
        raise ConfigError("is missing (and task.toml names no [environment].docker_image)", source=str(path / "environment"))
    workdir = env.workdir or (dockerfile.parse(text).workdir if text is not None else DEFAULT_WORKDIR)
    refused, not_applied = _not_given(config)
    steps = _harbor_steps(path, config)
    tags = config.metadata.get("tags", [])
    return BenchTask(
        id=path.name,
        path=path,
        format="harbor",
        checksum=task_files.checksum(path),
        grading="reward",
        steps=steps,
        environment_dir=environment_dir,
        dockerfile=text,
        workdir=workdir,
        network=network,
        tags=tuple(str(t) for t in tags) if isinstance(tags, list) else (),
        metadata=config.metadata,
        docker_image=env.docker_image,
        cpus=env.cpus,
        memory_mb=_megabytes(env.memory_mb, env.memory, source, "environment.memory"),
        storage_mb=_megabytes(env.storage_mb, env.storage, source, "environment.storage"),
        build_timeout_sec=env.build_timeout_sec,
        environment_env=env.env,
        solution_env=config.solution.env,
        reward_strategy=config.multi_step_reward_strategy or "mean",
        healthcheck=env.healthcheck,
        compose_file=compose,
        unknown_keys=tuple(known_keys(raw, HarborConfig)),
        refused=refused,
        not_applied=not_applied,
    )


def _megabytes(mb: int | None, legacy: str | None, source: Path, field: str) -> int | None:
    """``memory_mb`` (``storage_mb``), or Harbor's deprecated ``memory = "2G"`` (``storage``) converted as Harbor
    does (G, M, K suffixes); both given and different is an error, as in Harbor."""
    if legacy is None:
        return mb
    text = legacy.strip().upper()
    scale = {"G": 1024.0, "M": 1.0, "K": 1 / 1024}.get(text[-1:])
    try:
        value = int(float(text[:-1]) * scale) if scale is not None else None
    except ValueError:
        value = None
    if value is None:
        raise ConfigError(f"{legacy!r} is not a size like '2G' or '512M'", source=str(source), field=field)
    if mb is not None and mb != value:
        raise ConfigError(f"{legacy!r} ({value} MB) contradicts {field}_mb = {mb}", source=str(source), field=field)
    return value


def _not_given(config: HarborConfig) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """What the task asks that waza never gives (its trials are environment-unsatisfied), and the keys waza
    reads but does not apply (each named in ``waza check`` and in every result): never silently dropped."""
    refused: list[str] = []
    not_applied: list[str] = []
    environments = [("environment", config.environment)]
    verifiers = [("verifier", config.verifier)] + [(f"steps[{i}].verifier", s.verifier) for i, s in enumerate(config.steps or [])]
    environments += [(f"{where}.environment", v.environment) for where, v in verifiers if v.environment is not None]
    for where, env in environments:
        if env.gpus:
            refused.append(f"[{where}].gpus = {env.gpus}: waza gives no GPU to a task's environment")
        elif env.gpu_types:
            not_applied.append(f"[{where}].gpu_types: no GPU is asked (gpus is 0 or unset), so no type is chosen")
        if env.tpu is not None:
            refused.append(f"[{where}].tpu: waza gives no TPU to a task's environment")
        if env.mcp_servers:
            names = ", ".join(str(s.get("name", "?")) for s in env.mcp_servers)
            not_applied.append(f"[{where}].mcp_servers ({names}): not configured for the agent")
        if env.skills_dir is not None:
            not_applied.append(f"[{where}].skills_dir: not copied into the agent's configuration")
        if env.network_mode == "allowlist" or env.allowed_hosts:
            not_applied.append(
                f"[{where}].allowed_hosts: no allowlist is enforced; the network is none, or with --sandbox-net host all of it"
            )
    phases: list[tuple[str, HarborAgent | HarborVerifier]] = [("agent", config.agent), *verifiers]
    phases += [(f"steps[{i}].agent", s.agent) for i, s in enumerate(config.steps or [])]
    for where, phase in phases:
        if phase.network_mode is not None or phase.allowed_hosts:
            not_applied.append(f"[{where}].network_mode: every phase gets the environment's network")
    for where, verifier in verifiers:
        for index, hook in enumerate(verifier.collect):
            if hook.service != "main":
                not_applied.append(f"[{where}].collect[{index}]: service {hook.service!r} (compose services are not run)")
    return tuple(refused), tuple(dict.fromkeys(not_applied))


def _artifacts(path: Path, listed: list[str | Artifact], field: str) -> tuple[Artifact, ...]:
    """Artifacts as waza keeps them: a source inside the environment, a destination relative to the trial's
    artifacts folder that cannot leave it; a compose service other than the main one is refused."""
    out: list[Artifact] = []
    for index, item in enumerate(listed):
        one = Artifact(source=item) if isinstance(item, str) else item
        where = f"{field}[{index}]"
        destination = one.destination or one.source.lstrip("/")
        parts = PurePosixPath(destination).parts
        if ".." in PurePosixPath(one.source).parts or not parts or ".." in parts or destination.startswith("/"):
            raise ConfigError("a source or destination that leaves its folder", source=str(path / HARBOR_FILE), field=where)
        if one.service not in (None, "main"):
            raise ConfigError(
                f"service {one.service!r}: compose environments are not supported", source=str(path / HARBOR_FILE), field=where
            )
        out.append(Artifact(source=one.source, destination=destination, exclude=one.exclude))
    return tuple(out)


def _script(path: Path, folder: str, name: str, *, required: bool) -> str | None:
    rel = f"{folder}/{name}"
    if task_files.exists(path, rel):
        return name
    if required:
        raise ConfigError("is missing", source=str(path / rel))
    return None


def _harbor_steps(path: Path, config: HarborConfig) -> tuple[TaskStep, ...]:
    if not config.steps:
        _script(path, "tests", "test.sh", required=True)
        has_solution = _script(path, "solution", "solve.sh", required=False)
        return (
            TaskStep(
                name=None,
                instruction=task_files.read_text(path, "instruction.md"),
                tests=("tests",),
                test_script="test.sh",
                solution="solution" if has_solution else None,
                solve_script=has_solution,
                agent_timeout=config.agent.timeout_sec,
                verifier_timeout=config.verifier.timeout_sec,
                verifier_env=config.verifier.env,
                artifacts=_artifacts(path, config.artifacts, "artifacts"),
                agent_user=_user(config.agent.user),
                verifier_user=_user(config.verifier.user),
                collect=_main_hooks(config.verifier.collect),
                verifier_environment=_verifier_environment(path, config, None, 0),
            ),
        )
    seen: set[str] = set()
    steps: list[TaskStep] = []
    for index, step in enumerate(config.steps):
        steps.append(_harbor_step(path, config, step, index, seen))
    return tuple(steps)


def _harbor_step(path: Path, config: HarborConfig, step: HarborStep, index: int, seen: set[str]) -> TaskStep:
    field = f"steps[{index}].name"
    if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]*", step.name) or step.name.casefold() in seen:
        raise ConfigError(f"{step.name!r} is not a unique, portable folder name", source=str(path / HARBOR_FILE), field=field)
    seen.add(step.name.casefold())
    base = f"steps/{step.name}"
    if not task_files.is_dir(path, base):
        raise ConfigError("is missing", source=str(path / base))
    tests = tuple(t for t in ("tests", f"{base}/tests") if task_files.is_dir(path, t))
    script = next((t for t in reversed(tests) if task_files.exists(path, f"{t}/test.sh")), None)
    if script is None:
        raise ConfigError("is missing (nor is tests/test.sh)", source=str(path / base / "tests/test.sh"))
    solution = next((s for s in (f"{base}/solution", "solution") if task_files.exists(path, f"{s}/solve.sh")), None)
    return TaskStep(
        name=step.name,
        instruction=task_files.read_text(path, f"{base}/instruction.md"),
        tests=tests,
        test_script="test.sh",
        solution=solution,
        solve_script="solve.sh" if solution else None,
        agent_timeout=step.agent.timeout_sec if step.agent.timeout_sec is not None else config.agent.timeout_sec,
        verifier_timeout=step.verifier.timeout_sec,
        verifier_env={**config.verifier.env, **step.verifier.env},
        min_reward={"reward": float(step.min_reward)} if isinstance(step.min_reward, int | float) else step.min_reward,
        healthcheck=step.healthcheck,
        artifacts=_artifacts(path, config.artifacts, "artifacts") + _artifacts(path, step.artifacts, f"steps[{index}].artifacts"),
        agent_user=_user(step.agent.user if step.agent.user is not None else config.agent.user),
        verifier_user=_user(step.verifier.user if step.verifier.user is not None else config.verifier.user),
        collect=_main_hooks(config.verifier.collect) + _main_hooks(step.verifier.collect),
        verifier_environment=_verifier_environment(path, config, step, index),
    )


def _mode(verifier: HarborVerifier) -> str | None:
    """A verifier table's own mode: explicit, else ``separate`` when it has an environment, else unsaid."""
    if verifier.environment_mode is not None:
        return verifier.environment_mode
    return "separate" if verifier.environment is not None else None


def _verifier_environment(path: Path, config: HarborConfig, step: HarborStep | None, index: int) -> VerifierEnvironment | None:
    """Where the verifier runs, as Harbor resolves it: the step's mode, else the task's, else ``shared``
    (None). Separate: the step's, then the task's ``[verifier.environment].docker_image`` or ``tests/``
    Dockerfile (the tests inside the image), else a fresh copy of the task's own environment; its settings
    are ``[verifier.environment]``'s (the step's, then the task's), else ``[environment]``'s."""
    source = path / HARBOR_FILE
    tables = [("verifier", config.verifier)] + ([(f"steps[{index}].verifier", step.verifier)] if step else [])
    for where, verifier in tables:
        if verifier.environment_mode == "shared" and verifier.environment is not None:
            raise ConfigError(
                "environment_mode = 'shared' contradicts this table (say 'separate', or drop it)",
                source=str(source),
                field=f"{where}.environment",
            )
    if ((_mode(step.verifier) if step else None) or _mode(config.verifier) or "shared") == "shared":
        return None
    own = step.verifier.environment if step and step.verifier.environment else config.verifier.environment
    settings = own or config.environment
    candidates = [(step.verifier.environment, f"steps/{step.name}/tests", tables[-1][0])] if step else []
    candidates.append((config.verifier.environment, "tests", "verifier"))
    folder: Path | None = None
    text: str | None = None
    image: str | None = None
    origin = ""
    for environment, tests, where in candidates:
        if environment is not None and environment.docker_image:
            image, origin = environment.docker_image, f"[{where}.environment].docker_image"
            break
        if task_files.exists(path, f"{tests}/Dockerfile"):
            folder, text, origin = path / tests, task_files.read_text(path, f"{tests}/Dockerfile"), f"{tests}/Dockerfile"
            break
        if any(task_files.exists(path, f"{tests}/{name}") for name in COMPOSE_FILES):
            raise ConfigError("a compose verifier environment is not supported (give a Dockerfile)", source=str(path / tests))
    bundled = bool(origin)
    if not bundled:
        if task_files.is_dir(path, "environment"):
            folder = path / "environment"
            text = (
                task_files.read_text(path, "environment/Dockerfile")
                if task_files.exists(path, "environment/Dockerfile")
                else None
            )
        image, origin = config.environment.docker_image, "a fresh copy of the task's environment"
    network = settings.network_mode
    if network == "public" and settings.allow_internet is False:
        network = "no-network"
    return VerifierEnvironment(
        environment_dir=folder,
        dockerfile=text,
        image=image,
        bundled_tests=bundled,
        workdir=settings.workdir or (dockerfile.parse(text).workdir if text is not None else DEFAULT_WORKDIR),
        network=network,
        cpus=settings.cpus,
        memory_mb=_megabytes(settings.memory_mb, settings.memory, source, "verifier.environment.memory"),
        storage_mb=_megabytes(settings.storage_mb, settings.storage, source, "verifier.environment.storage"),
        build_timeout_sec=settings.build_timeout_sec,
        env=settings.env,
        origin=origin,
    )


def _user(user: str | int | None) -> str | None:
    return None if user is None else str(user)


def _main_hooks(hooks: list[CollectHook]) -> tuple[CollectHook, ...]:
    """The collect hooks of the main container (the others name compose services: see _not_given)."""
    return tuple(h for h in hooks if h.service == "main")


def _tb1(path: Path) -> BenchTask:
    source = path / TB1_FILE
    try:
        raw = yaml.safe_load(task_files.read_text(path, TB1_FILE))
    except yaml.YAMLError as exc:
        raise ConfigError(f"not YAML: {str(exc).splitlines()[0]}", source=str(source)) from None
    if isinstance(raw, dict) and "instruction" not in raw and isinstance(raw.get("descriptions"), list):
        first = raw["descriptions"][0] if raw["descriptions"] else {}
        raw = {**{k: v for k, v in raw.items() if k != "descriptions"}, "instruction": (first or {}).get("description")}
    config: TerminalBenchConfig = _convert(raw, TerminalBenchConfig, source)
    if config.parser_name != "pytest":
        raise ConfigError(
            f"only the pytest parser is supported, got {config.parser_name!r}", source=str(source), field="parser_name"
        )
    text = task_files.read_text(path, "Dockerfile")
    _script(path, ".", "run-tests.sh", required=True)
    solution = "solution.sh" if task_files.exists(path, "solution.sh") else None
    step = TaskStep(
        name=None,
        instruction=config.instruction,
        tests=("tests",) if task_files.is_dir(path, "tests") else (),
        test_script="run-tests.sh",
        solution="." if solution else None,
        solve_script=solution,
        agent_timeout=config.max_agent_timeout_sec,
        verifier_timeout=config.max_test_timeout_sec,
        verifier_env={"TEST_DIR": "/tests"},
        extra_tests={"run-tests.sh": "run-tests.sh"},
    )
    return BenchTask(
        id=path.name,
        path=path,
        format="terminal-bench-1",
        checksum=task_files.checksum(path),
        grading="pytest",
        steps=(step,),
        environment_dir=path,
        dockerfile=text,
        workdir=dockerfile.parse(text).workdir,
        network="public",
        tags=tuple(config.tags),
        metadata={"difficulty": config.difficulty, "category": config.category, "tags": config.tags},
        unknown_keys=tuple(known_keys(raw, TerminalBenchConfig)),
    )


def load_task(path: Path) -> BenchTask:
    """One task folder of either format."""
    kind = _kind(path)
    if kind is None:
        raise ConfigError(f"holds neither {HARBOR_FILE} nor {TB1_FILE}", source=str(path))
    return _harbor(path) if kind == "harbor" else _tb1(path)


def _task_dirs(path: Path) -> Iterator[Path]:
    if _kind(path) is not None:
        yield path
        return
    for name, mode in task_files.entries(path):
        if stat.S_ISDIR(mode) and _kind(path / name) is not None:
            yield path / name


def load_folder(path: Path) -> list[BenchTask]:
    """Every task of a task folder or a dataset folder; the first problem raised as a ConfigError."""
    tasks = [load_task(p) for p in _task_dirs(path)]
    if not tasks:
        raise ConfigError(f"holds no task folder ({HARBOR_FILE} or {TB1_FILE})", source=str(path))
    return tasks


def check_folder(path: Path) -> tuple[list[BenchTask], list[ConfigError], list[str]]:
    """Every task that loads, every problem (one per task folder that does not) and every unknown key."""
    tasks: list[BenchTask] = []
    problems: list[ConfigError] = []
    notices: list[str] = []
    for folder in _task_dirs(path):
        try:
            task = load_task(folder)
        except ConfigError as exc:
            problems.append(exc)
            continue
        tasks.append(task)
        source = folder / (HARBOR_FILE if task.format == "harbor" else TB1_FILE)
        notices += [f"{source}: field {key!r}: unknown key (ignored, as Harbor does)" for key in task.unknown_keys]
        notices += [f"{source}: {why}; its trials are environment-unsatisfied" for why in task.refused]
        notices += [f"{source}: not applied: {why}" for why in task.not_applied]
        notices += [
            f"{source}: field '{t.table}.{t.key}': takes the variable {t.variable} from waza's environment"
            + (f" (default {t.default!r})" if t.default is not None else " (no default: a trial is unsatisfied without it)")
            + ("" if t.variable in os.environ else "; unset now")
            for t in task_templates(task)
        ]
        if task.compose_file is not None:
            runs = "only the Dockerfile's container runs" if task.dockerfile else "its trials are environment-unsatisfied"
            notices.append(f"{folder / task.compose_file}: compose is not run ({runs})")
    if not tasks and not problems:
        problems.append(ConfigError(f"holds no task folder ({HARBOR_FILE} or {TB1_FILE})", source=str(path)))
    return tasks, problems, notices
