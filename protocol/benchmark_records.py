"""The benchmark result line: one trial of a Harbor or Terminal-Bench 1.x task (``waza run DIR``).

Plain msgspec Structs with the snake_case keys Harbor's own results use (not
the camelCase of waza's other records, since these lines sit beside Harbor's
in the same pipelines); the schema ``schemas/BenchmarkResult.json`` is
generated from them, and every line ``waza run DIR`` writes validates against it.
"""

from __future__ import annotations

from typing import Annotated, Literal

import msgspec
from msgspec import Meta

from .records import TrajectoryStep, Usage

__all__ = ["BenchmarkErrorKind", "BenchmarkResult", "BenchmarkStep"]

#: Why a trial has no score: the environment could not give what the task asks, failed, the verifier ran
#: past its timeout or left no readable reward. Never a 0.
BenchmarkErrorKind = Literal["environment-unsatisfied", "environment-failed", "verifier-timeout", "reward-missing"]


class BenchmarkStep(msgspec.Struct, omit_defaults=True):
    """One step of a trial (a single-step task has one, named null): the agent's run, then its verifier's."""

    name: Annotated[str | None, Meta(description="The step's folder under steps/ (null: a single-step task).")]
    score: Annotated[float | None, Meta(description="The verifier's reward (null: none was read).")] = None
    subscores: dict[str, float] = msgspec.field(default_factory=dict)
    reward_source: Annotated[str | None, Meta(description="reward.json, reward.txt or pytest (Terminal-Bench 1.x).")] = None
    agent_exit: int | None = None
    agent_timed_out: bool = False
    agent_errors: list[str] = msgspec.field(default_factory=list)
    agent_stderr: Annotated[str | None, Meta(description="The last of what an adapter's agent wrote on stderr.")] = None
    trajectory: Annotated[list[TrajectoryStep], Meta(description="What an adapter's agent did (oracle and nop have none).")] = (
        msgspec.field(default_factory=list)
    )
    output: str | None = None
    usage: Usage | None = None
    dropped_events: int = 0
    verifier_exit: int | None = None
    verifier_seconds: float | None = None
    verifier_output: Annotated[str, Meta(description="The verifier's last output (all of it is in the trial folder).")] = ""
    artifacts: Annotated[
        list[str], Meta(description="Files collected after the step's verifier, relative to the trial folder.")
    ] = msgspec.field(default_factory=list)


class BenchmarkResult(msgspec.Struct, omit_defaults=True):
    """One line of a benchmark run's output (JSONL): one trial of one task."""

    task: str
    format: Annotated[str, Meta(description="harbor or terminal-bench-1.")]
    checksum: Annotated[str, Meta(description="sha256 of the task folder's files: a changed task runs again on --resume.")]
    trial: int
    agent: Annotated[str, Meta(description="oracle, nop or the adapter's name.")]
    status: Literal["passed", "failed", "error"]
    score: Annotated[float | None, Meta(description="The reward (null when status is error: never a 0).")]
    environment: Annotated[dict[str, str], Meta(description="The environment's kind and anything it changed or did not enforce.")]
    timeouts: dict[str, float | None]
    subscores: dict[str, float] = msgspec.field(default_factory=dict)
    error_kind: BenchmarkErrorKind | None = None
    error: str | None = None
    missing: Annotated[list[str], Meta(description="What the environment could not give (environment-unsatisfied).")] = (
        msgspec.field(default_factory=list)
    )
    offline: Annotated[list[str], Meta(description="What was changed to run the task offline.")] = msgspec.field(
        default_factory=list
    )
    warnings: list[str] = msgspec.field(default_factory=list)
    steps: list[BenchmarkStep] = msgspec.field(default_factory=list)
    stopped: Annotated[str | None, Meta(description="Why the remaining steps did not run (a step below its min_reward).")] = None
    trial_dir: str | None = None
    seconds: float = 0.0
