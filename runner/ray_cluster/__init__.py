"""Where work items run: in this process (``local``, the default) or as Ray tasks (``ray``).

An executor (``pipeline.Executor``) takes the same three things as the local
engine's ``run_items``: the work items, the run's settings, and the sink each
finished record goes to. Whatever the executor, the sink runs in the driver,
so the driver stays the only writer and the output file, ``--resume``, the
summary and the exit code do not depend on where the agents ran.

Nothing is imported with this package (``--executor`` options are parsed
without the engine); the Ray executor's module, and the job packing it needs,
only for ``--executor ray``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from waza.runner.engine.pipeline import Executor
    from waza.runner.ray_cluster.executor import RayOptions


def executor_for(ray: RayOptions | None) -> Executor:
    """The local engine (``ray`` None), or Ray tasks running ``run_one`` on the run's specs."""
    if ray is None:
        from waza.runner.engine.pipeline import run_items

        return run_items
    from waza.runner.ray_cluster.executor import RayExecutor

    return RayExecutor(ray)


__all__ = ["executor_for"]
