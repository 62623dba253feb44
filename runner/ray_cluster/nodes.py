"""What the Ray driver knows of the cluster during a run: its room for tasks, its nodes, their health.

The cluster is read again every few seconds (nodes join and leave while a
run goes on). A node is unhealthy once ``limit`` of its records in a row are
errors; from then on each new task is pinned (node affinity, not soft) to the
healthy node with the fewest of this run's tasks per slot, so the bad node
gets nothing more while the others share the work as Ray would have shared it.
"""

from __future__ import annotations

import math
import sys
import time
from collections.abc import Mapping
from typing import Any

from waza.protocol.records import CaptureResult
from waza.runner.wording import count

__all__ = ["Nodes", "ran_on"]


def ran_on(result: CaptureResult) -> str:
    """The Ray node id a record says it ran on ("" when it does not say)."""
    where = result.metadata.get("ray")
    return str(where.get("node_id", "")) if isinstance(where, dict) else ""


class Nodes:
    """The cluster as last read, and the health of each node as this run's records tell it."""

    def __init__(self, ray: Any, wanted: Mapping[str, float], limit: int, every: float) -> None:
        self.ray, self.wanted, self.limit, self.every = ray, dict(wanted), limit, every
        self.read_at = -math.inf
        self.resources: dict[str, float] = {}
        self.slots: dict[str, int] = {}  # alive node id -> tasks it can run at once
        self.hosts: dict[str, str] = {}
        self.streak: dict[str, int] = {}
        self.unhealthy: set[str] = set()
        self.assigned: dict[str, int] = {}  # node id -> this run's tasks pinned there and not yet back

    def refresh(self, force: bool = False) -> None:
        """Read the cluster's resources and alive nodes again, when ``every`` seconds have passed."""
        now = time.monotonic()
        if not force and now - self.read_at < self.every:
            return
        self.read_at = now
        self.resources = dict(self.ray.cluster_resources())
        self.slots, self.hosts = {}, {}
        for node in self.ray.nodes():
            if node.get("Alive"):
                node_id = str(node["NodeID"])
                self.slots[node_id] = _fits(node.get("Resources", {}), self.wanted)
                self.hosts[node_id] = str(node.get("NodeManagerHostname", ""))

    def healthy_slots(self) -> int:
        """Tasks the healthy nodes can run at once."""
        return sum(n for node_id, n in self.slots.items() if node_id not in self.unhealthy)

    def place(self) -> str | None:
        """The node the next task must go to: None (Ray chooses) while every node is healthy."""
        if not self.unhealthy:
            return None
        open_nodes = [node_id for node_id, n in self.slots.items() if n > 0 and node_id not in self.unhealthy]
        if not open_nodes:
            return None
        node_id = min(open_nodes, key=lambda n: self.assigned.get(n, 0) / self.slots[n])
        self.assigned[node_id] = self.assigned.get(node_id, 0) + 1
        return node_id

    def returned(self, placed: str | None) -> None:
        if placed is not None:
            self.assigned[placed] -= 1

    def saw(self, result: CaptureResult) -> None:
        """Count a record towards its node's health; say on stderr when the node is given up."""
        node_id = ran_on(result)
        if not node_id or node_id in self.unhealthy:
            return
        if result.status != "error":
            self.streak[node_id] = 0
            return
        self.streak[node_id] = self.streak.get(node_id, 0) + 1
        if self.streak[node_id] >= self.limit:
            self.unhealthy.add(node_id)
            host = self.hosts.get(node_id) or str(result.metadata["ray"].get("host", "?"))
            print(
                f"waza: Ray node {node_id[:12]} ({host}) ended {count(self.limit, 'task')} in a row as errors; "
                f"no more tasks go to it (last: {_first(result)})",
                file=sys.stderr,
            )


def _fits(resources: Mapping[str, float], wanted: Mapping[str, float]) -> int:
    slots = math.inf
    for name, amount in wanted.items():
        if amount > 0:
            slots = min(slots, resources.get(name, 0.0) // amount)
    return 1 if slots == math.inf else int(slots)


def _first(result: CaptureResult) -> str:
    text = result.errors[0] if result.errors else ""
    line = text.strip().splitlines()[0] if text.strip() else "?"
    return line[:200]
