"""A benchmark task as waza runs it, whatever folder format it came from."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

import msgspec

from waza.runner.benchmarks.formats import Artifact, Healthcheck

__all__ = ["BenchTask", "Grading", "TaskStep"]

#: ``reward``: Harbor's verifier writes /logs/verifier/reward.txt or reward.json;
#: ``pytest``: Terminal-Bench 1.x, pass when pytest's summary shows every test passed.
Grading = Literal["reward", "pytest"]


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
