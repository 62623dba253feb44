"""Where work items run: in this process (``local``, the default) or as Ray tasks (``ray``).

An executor (``pipeline.Executor``) takes the same three things as the local
engine's ``run_items``: the work items, the run's settings, and the sink each
finished record goes to. Whatever the executor, the sink runs in the driver,
so the driver stays the only writer and the output file, ``--resume``, the
summary and the exit code do not depend on where the agents ran.
"""

from __future__ import annotations

from waza.runner.engine.pipeline import Executor, run_items
from waza.runner.executors.ray_executor import RayExecutor, RayOptions


def executor_for(ray: RayOptions | None) -> Executor:
    """The local engine (``ray`` None), or Ray tasks running ``run_one`` on the run's specs."""
    return run_items if ray is None else RayExecutor(ray)


__all__ = ["RayOptions", "executor_for"]
