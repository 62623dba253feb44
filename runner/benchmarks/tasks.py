"""A benchmark task as waza runs it, whatever folder format it came from."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

import msgspec

from waza.runner.benchmarks.formats import Artifact, CollectHook, Healthcheck

__all__ = ["BenchTask", "Grading", "TaskStep", "VerifierEnvironment"]

#: ``reward``: Harbor's verifier writes /logs/verifier/reward.txt or reward.json;
#: ``pytest``: Terminal-Bench 1.x, pass when pytest's summary shows every test passed.
Grading = Literal["reward", "pytest"]


class VerifierEnvironment(msgspec.Struct, frozen=True):
    """Where a step's verifier runs when it does not share the agent's environment (Harbor's
    ``environment_mode = "separate"``): a fresh environment built from ``environment_dir`` (``tests/`` with a
    Dockerfile, or the task's own ``environment/``), or the ready ``image``; with ``bundled_tests`` the
    image holds ``/tests`` itself and nothing is copied in. The rest is ``[verifier.environment]`` (else the
    task's ``[environment]``)."""

    environment_dir: Path | None
    dockerfile: str | None
    image: str | None
    bundled_tests: bool
    workdir: str
    network: Literal["no-network", "public", "allowlist"]
    cpus: float | None = None
    memory_mb: int | None = None
    storage_mb: int | None = None
    build_timeout_sec: float = 600.0
    env: dict[str, str] = msgspec.field(default_factory=dict)
    #: Where its definition comes from, for results and messages (``tests/Dockerfile``, ...).
    origin: str = ""


class TaskStep(msgspec.Struct, frozen=True):
    """One prompt and its verifier (a single-step task has one, named None).

    ``tests`` lists task-relative folders copied, in order, to ``/tests``
    (Harbor: ``tests/`` then the step's own); ``extra_tests`` maps a file name
    in ``/tests`` to a task-relative file (Terminal-Bench 1.x's ``run-tests.sh``).
    """

    name: str | None
    instruction: str
    tests: tuple[str, ...]
    test_script: str
    solution: str | None
    solve_script: str | None
    agent_timeout: float | None
    verifier_timeout: float
    verifier_env: dict[str, str] = msgspec.field(default_factory=dict)
    extra_tests: dict[str, str] = msgspec.field(default_factory=dict)
    #: Reward keys and the least each must reach for the next steps to run (Harbor's ``min_reward``).
    min_reward: dict[str, float] | None = None
    #: Run after the environment's own healthcheck, before this step's agent.
    healthcheck: Healthcheck | None = None
    #: Kept after this step's verifier (the task's own artifacts, then the step's).
    artifacts: tuple[Artifact, ...] = ()
    #: Whom the agent (and the oracle) and the verifier run as (``[agent].user``, ``[verifier].user``; None:
    #: the image's user).
    agent_user: str | None = None
    verifier_user: str | None = None
    #: ``[[verifier.collect]]`` of the main container: run after the agent, before the verifier.
    collect: tuple[CollectHook, ...] = ()
    #: None: the verifier runs in the agent's environment (``shared``); else in a fresh one of its own.
    verifier_environment: VerifierEnvironment | None = None


class BenchTask(msgspec.Struct, frozen=True):
    """One task folder, read and checked: everything a trial needs but the files it copies."""

    id: str
    path: Path
    format: Literal["harbor", "terminal-bench-1"]
    checksum: str
    grading: Grading
    steps: tuple[TaskStep, ...]
    environment_dir: Path | None
    dockerfile: str | None
    workdir: str
    network: Literal["no-network", "public", "allowlist"]
    tags: tuple[str, ...] = ()
    metadata: dict[str, Any] = msgspec.field(default_factory=dict)
    docker_image: str | None = None
    cpus: float | None = None
    memory_mb: int | None = None
    storage_mb: int | None = None
    build_timeout_sec: float = 600.0
    environment_env: dict[str, str] = msgspec.field(default_factory=dict)
    solution_env: dict[str, str] = msgspec.field(default_factory=dict)
    reward_strategy: Literal["mean", "final"] = "mean"
    #: Run once the environment has started, before any agent (``[environment].healthcheck``).
    healthcheck: Healthcheck | None = None
    #: ``environment/docker-compose.yaml`` (or another compose file name) when the task has one.
    compose_file: str | None = None
    #: task.toml / task.yaml keys waza does not know (Harbor ignores them too): reported by ``waza check``.
    unknown_keys: tuple[str, ...] = ()
    #: What the task asks that waza never gives (a GPU, a TPU): each trial is ``environment-unsatisfied``.
    refused: tuple[str, ...] = ()
    #: Keys read but not applied, each with why: named by ``waza check`` and in every result.
    not_applied: tuple[str, ...] = ()
