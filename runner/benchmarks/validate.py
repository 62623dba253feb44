"""``validate-tasks``: each task run with the oracle and the nop agent, classified.

A sound task passes with its reference solution and fails when nothing is
done. The verdict is ``ok``, ``oracle-fails`` (the oracle did not pass, or its
verifier erred), ``nop-passes`` (doing nothing passes: the verifier checks
nothing) or ``environment-unsatisfied`` (naming what is missing; nothing ran).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

import msgspec

from waza.protocol.benchmark_records import BenchmarkResult
from waza.runner.benchmarks.tasks import BenchTask
from waza.runner.benchmarks.trial import AgentChoice, run_trial

__all__ = ["VERDICTS", "Validation", "validate_task"]

Verdict = Literal["ok", "oracle-fails", "nop-passes", "environment-unsatisfied"]
VERDICTS: tuple[Verdict, ...] = ("ok", "oracle-fails", "nop-passes", "environment-unsatisfied")


class Validation(msgspec.Struct, omit_defaults=True):
    """One line of ``validate-tasks``' output."""

    task: str
    checksum: str
    verdict: Verdict
    oracle: dict[str, Any]
    nop: dict[str, Any] | None = None
    missing: list[str] = msgspec.field(default_factory=list)


def _brief(result: BenchmarkResult) -> dict[str, Any]:
    brief: dict[str, Any] = {"status": result.status, "score": result.score}
    if result.error:
        brief |= {"error_kind": result.error_kind, "error": result.error}
    return brief


async def validate_task(
    task: BenchTask,
    *,
    env_kind: str,
    work_dir: Path,
    allow_network: bool = False,
    base_images: Mapping[str, str] | None = None,
) -> Validation:
    """Run the oracle then (when the environment could be had) the nop agent on ``task``."""
    trial = functools.partial(run_trial, env_kind=env_kind, allow_network=allow_network, base_images=base_images)
    oracle = await trial(task, AgentChoice("oracle"), trial_dir=work_dir / "oracle")
    if oracle.error_kind == "environment-unsatisfied":
        return Validation(task.id, task.checksum, "environment-unsatisfied", _brief(oracle), missing=oracle.missing)
    nop = await trial(task, AgentChoice("nop"), trial_dir=work_dir / "nop")
    verdict: Verdict = "ok"
    if oracle.status != "passed":
        verdict = "oracle-fails"
    elif nop.status == "passed":
        verdict = "nop-passes"
    return Validation(task.id, task.checksum, verdict, _brief(oracle), _brief(nop))
