"""The two task formats as msgspec Structs: Harbor's ``task.toml`` (schema 1.x) and Terminal-Bench 1.x's ``task.yaml``.

Only the keys waza reads are declared; Harbor's own models (pydantic, extra
keys ignored) accept any other key, and so does waza, to run every task Harbor
runs. ``waza check`` lists the keys neither declares here, so a misspelt
``timout_sec`` does not pass unseen. Types are as strict as Harbor's: a
timeout is a number, an ``env`` maps names to strings.
"""

from __future__ import annotations

from typing import Any, Literal

import msgspec

__all__ = [
    "Artifact",
    "CollectHook",
    "HarborAgent",
    "HarborConfig",
    "HarborEnvironment",
    "HarborStep",
    "HarborVerifier",
    "Healthcheck",
    "NetworkMode",
    "TerminalBenchConfig",
    "known_keys",
]

NetworkMode = Literal["no-network", "public", "allowlist"]


class HarborAgent(msgspec.Struct, omit_defaults=True):
    timeout_sec: float | None = None
    user: str | int | None = None
    network_mode: NetworkMode | None = None
    allowed_hosts: list[str] | None = None


class CollectHook(msgspec.Struct, frozen=True, omit_defaults=True):
    """``[[verifier.collect]]``: a shell line run after the agent, before artifacts are collected (to
    snapshot state into files); best effort, as Harbor runs it."""

    command: str
    service: str = "main"
    timeout_sec: float = 60.0
    user: str | int | None = None


class HarborVerifier(msgspec.Struct, omit_defaults=True):
    timeout_sec: float = 600.0
    env: dict[str, str] = msgspec.field(default_factory=dict)
    user: str | int | None = None
    network_mode: NetworkMode | None = None
    allowed_hosts: list[str] | None = None
    environment_mode: Literal["shared", "separate"] | None = None
    environment: HarborEnvironment | None = None
    collect: list[CollectHook] = msgspec.field(default_factory=list)


class HarborEnvironment(msgspec.Struct, omit_defaults=True):
    build_timeout_sec: float = 600.0
    docker_image: str | None = None
    os: str = "linux"
    cpus: float | None = None
    memory_mb: int | None = None
    storage_mb: int | None = None
    gpus: int | None = None
    gpu_types: list[str] | None = None
    tpu: dict[str, Any] | None = None
    mcp_servers: list[dict[str, Any]] = msgspec.field(default_factory=list)
    env: dict[str, str] = msgspec.field(default_factory=dict)
    skills_dir: str | None = None
    healthcheck: Healthcheck | None = None
    workdir: str | None = None
    allow_internet: bool | None = None
    network_mode: NetworkMode = "public"
    allowed_hosts: list[str] | None = None
    memory: str | None = None
    storage: str | None = None


class Healthcheck(msgspec.Struct, frozen=True, omit_defaults=True):
    """A readiness check, as Docker's HEALTHCHECK: ``command`` (a shell line) run until it exits 0; failures
    in the first ``start_period_sec`` do not count, ``retries`` failures in a row after it fail the trial."""

    command: str
    interval_sec: float = 5.0
    timeout_sec: float = 30.0
    start_period_sec: float = 0.0
    start_interval_sec: float = 5.0
    retries: int = 3


class Artifact(msgspec.Struct, frozen=True, omit_defaults=True):
    """A file or folder of the environment kept after verification: ``source`` is its path inside,
    ``destination`` where it goes under the trial's artifacts folder (default: ``source`` made relative);
    ``exclude``: glob patterns of a folder's entries left out (as tar's ``--exclude``: a pattern matches an
    entry's name or its path inside the folder)."""

    source: str
    destination: str | None = None
    service: str | None = None
    exclude: tuple[str, ...] = ()


class HarborSolution(msgspec.Struct, omit_defaults=True):
    env: dict[str, str] = msgspec.field(default_factory=dict)


class HarborStep(msgspec.Struct, omit_defaults=True):
    name: str
    agent: HarborAgent = msgspec.field(default_factory=HarborAgent)
    verifier: HarborVerifier = msgspec.field(default_factory=HarborVerifier)
    min_reward: float | dict[str, float] | None = None
    healthcheck: Healthcheck | None = None
    artifacts: list[str | Artifact] = msgspec.field(default_factory=list)


class HarborConfig(msgspec.Struct, omit_defaults=True):
    """``task.toml``; ``version`` is the old name of ``schema_version``, as Harbor reads it."""

    schema_version: str = "1.4"
    version: str | None = None
    task: dict[str, Any] | None = None
    metadata: dict[str, Any] = msgspec.field(default_factory=dict)
    verifier: HarborVerifier = msgspec.field(default_factory=HarborVerifier)
    agent: HarborAgent = msgspec.field(default_factory=HarborAgent)
    environment: HarborEnvironment = msgspec.field(default_factory=HarborEnvironment)
    solution: HarborSolution = msgspec.field(default_factory=HarborSolution)
    source: str | None = None
    multi_step_reward_strategy: Literal["mean", "final"] | None = None
    steps: list[HarborStep] | None = None
    artifacts: list[str | Artifact] = msgspec.field(default_factory=list)


class TerminalBenchConfig(msgspec.Struct, omit_defaults=True):
    """Terminal-Bench 1.x ``task.yaml`` (defaults as Harbor's mapper reads them)."""

    instruction: str
    author_name: str = "unknown"
    author_email: str = "unknown"
    difficulty: str = "unknown"
    category: str = "software_engineering"
    tags: list[str] = msgspec.field(default_factory=list)
    estimated_duration_sec: float | None = None
    expert_time_estimate_min: float | None = None
    junior_time_estimate_min: float | None = None
    max_agent_timeout_sec: float = 360.0
    max_test_timeout_sec: float = 60.0
    parser_name: str = "pytest"
    run_tests_in_same_shell: bool = False
    disable_asciinema: bool = False


#: Sections whose keys are free-form (they are the task's own data).
_FREE = {"metadata", "task", "env", "tpu", "mcp_servers"}


def known_keys(raw: Any, model: type[msgspec.Struct], where: str = "") -> list[str]:
    """The dotted names of keys in ``raw`` that ``model`` does not declare (free-form sections not looked into)."""
    if not isinstance(raw, dict):
        return []
    fields = {f.encode_name: f.type for f in msgspec.structs.fields(model)}
    unknown: list[str] = []
    for key, value in raw.items():
        name = f"{where}{key}"
        if key not in fields:
            unknown.append(name)
        elif key not in _FREE:
            kind = fields[key]
            sub = _struct_in(kind)
            if sub is not None:
                for item in value if isinstance(value, list) else [value]:
                    unknown += known_keys(item, sub, name + ".")
    return unknown


def _struct_in(kind: Any) -> type[msgspec.Struct] | None:
    """The Struct type a field holds (directly, in a list or in a union), if any."""
    if isinstance(kind, type) and issubclass(kind, msgspec.Struct):
        return kind
    for arg in getattr(kind, "__args__", ()):
        found = _struct_in(arg)
        if found is not None:
            return found
    return None
