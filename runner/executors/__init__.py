"""Where work items run: in this process (``local``, the default) or as Ray tasks (``ray``).

An executor (``pipeline.Executor``) takes the same three things as the local
engine's ``run_items``: the work items, the run's settings, and the sink each
finished record goes to. Whatever the executor, the sink runs in the driver,
so the driver stays the only writer and the output file, ``--resume``, the
summary and the exit code do not depend on where the agents ran.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..pipeline import Executor, run_items
from ..specs import AgentSpec, GraderSpecT, Timeouts, Workspace
from .ray_executor import RayExecutor, RayOptions


def executor_for(
    ray: RayOptions | None, agent: AgentSpec, graders: Sequence[GraderSpecT], timeouts: Timeouts, workspace: Workspace
) -> Executor:
    """The local engine (``ray`` None), or Ray tasks running ``run_one`` on these specs."""
    if ray is None:
        return run_items
    return RayExecutor(ray, agent, graders, timeouts, workspace)


__all__ = ["RayOptions", "executor_for"]
