"""Why a Ray task or slot actor did not come back, and whether its item runs again.

Ray tells two losses apart, and they deserve different retries. A *lost node*
(``NodeDiedError``, a dead raylet, an actor whose node died or stopped
answering) says nothing about the item: it runs again elsewhere, up to
``max_retries`` times. A *worker that died under its item* (``WorkerCrashedError``,
``OutOfMemoryError``, an actor whose own process died) is most often the item's
own doing: an agent that kills its parent, exhausts memory or crashes the
interpreter does it again on the next try, so it is run once more (a stray OOM
kill or a one-off crash gets its second chance) and then ends as one error
record instead of costing ``max_retries`` more agent runs.

The error record says what Ray says, in one bounded line, without its advice
to read log files on some node: which node (id and host, when Ray, the slot or
the task's own track, ``ray_tracks``, told the driver) and worker, and the
worker's exit as Ray reports it (its exit type and detail for an actor; a
task's ``WorkerCrashedError`` carries none).
"""

from __future__ import annotations

import re
from typing import Any

import msgspec

__all__ = ["OWN_WORKER_RETRIES", "Attempts", "Loss", "loss_of", "one_line"]

#: Reruns of an item whose own worker process died under it (a lost node gets ``max_retries``).
OWN_WORKER_RETRIES = 1
#: Characters of Ray's account kept in an error record.
CAUSE_LIMIT = 600

_NODE_ID = re.compile(r"node id:?\s*([0-9a-f]{16,})", re.IGNORECASE)
_NODE_IP = re.compile(r"node ip:?\s*([0-9A-Za-z.:\-]+?),?\s", re.IGNORECASE)
_ACTOR_IP = re.compile(r"^\s*ip:\s*(\S+)\s*$", re.MULTILINE)
_ACTOR_PID = re.compile(r"^\s*pid:\s*(\d+)\s*$", re.MULTILINE)
_EXIT = re.compile(r"Worker exit type:\s*(\S+)\s+Worker exit detail:\s*(.*)", re.DOTALL)


class Loss(msgspec.Struct, frozen=True):
    """A task or actor call that Ray could not finish because a worker or a node went away."""

    #: The node went (or could not be reached): nothing is known against the item.
    node_lost: bool
    #: Ray's account in one line, without its log-file advice.
    cause: str
    node_id: str = ""
    #: The node's host name (or address, when that is all Ray gave).
    host: str = ""
    #: The dead worker's process id, when Ray gave it.
    pid: int | None = None

    def where(self) -> str:
        """``node ID (HOST), worker pid N`` as far as known, or what is not known."""
        if not self.node_id and not self.host:
            return "on a node Ray does not name"
        node = f"node {self.node_id}" if self.node_id else "node"
        host = f" ({self.host})" if self.host else ""
        pid = f", worker pid {self.pid}" if self.pid else ""
        return f"on {node}{host}{pid}"


class Attempts(msgspec.Struct):
    """The losses one item has had so far, and the rule for running it again."""

    lost_nodes: int = 0
    own_deaths: int = 0

    @property
    def tries(self) -> int:
        return self.lost_nodes + self.own_deaths

    def again(self, loss: Loss, max_retries: int) -> bool:
        """Count ``loss``; whether the item runs once more."""
        if loss.node_lost:
            self.lost_nodes += 1
        else:
            self.own_deaths += 1
        return self.tries <= max_retries and self.own_deaths <= OWN_WORKER_RETRIES

    def message(self, loss: Loss) -> str:
        """The error record's text once the item is given up."""
        tries = "1 try" if self.tries == 1 else f"{self.tries} tries"
        if loss.node_lost:
            what = "the node running it was lost each time"
            if self.own_deaths:
                what = f"its worker died {self.own_deaths} and its node was lost {self.lost_nodes} times"
        else:
            what = "its worker process died under it"
            if self.own_deaths > 1:
                what += (
                    f" {self.own_deaths} times (an item that kills its own worker is run at most {1 + OWN_WORKER_RETRIES} times)"
                )
            if self.lost_nodes:
                what += f", after {self.lost_nodes} lost nodes"
        return one_line(f"Ray could not finish this task in {tries}: {what}; last {loss.where()}: {loss.cause}")


def loss_of(exc: BaseException, exceptions: Any, node_id: str = "", host: str = "", pid: int | None = None) -> Loss | None:
    """The loss ``exc`` (an exception of Ray, ``exceptions`` its module) reports, None for anything else.

    ``node_id``, ``host``, ``pid``: where the driver knows the item ran (a pinned task, a slot actor
    that said where it lives), used when Ray's account does not say.
    """
    text = str(exc)
    if isinstance(exc, exceptions.NodeDiedError):
        found = _NODE_ID.search(text)
        ip = _NODE_IP.search(text + " ")
        return Loss(True, "the node died or became unreachable", found.group(1) if found else node_id, host or _group(ip), pid)
    if isinstance(exc, exceptions.LocalRayletDiedError):
        return Loss(True, "the node's raylet died", node_id, host, pid)
    unavailable = getattr(exceptions, "ActorUnavailableError", None)
    if unavailable is not None and isinstance(exc, unavailable):
        return Loss(True, "the worker stopped answering (its node is gone or unreachable)", node_id, host, pid)
    if isinstance(exc, exceptions.ActorDiedError):
        if exc.actor_init_failed:
            return None  # an exception while the slot started: not a loss, reported as it is
        host = host or _group(_ACTOR_IP.search(text))
        pid = pid or _int(_ACTOR_PID.search(text))
        if "its node has died" in text or exc.preempted:
            found = _NODE_ID.search(text)
            after = text.split("its node has died", 1)[-1].split("\n", 2)
            cause = "the node died" + (f": {after[1].strip()}" if len(after) > 1 else "")
            return Loss(True, cause, found.group(1) if found else node_id, host, pid)
        return Loss(False, _exit_cause(text), node_id, host, pid)
    if isinstance(exc, exceptions.WorkerCrashedError):
        return Loss(False, "the worker process exited (Ray gives no exit cause for a task's worker)", node_id, host, pid)
    if isinstance(exc, exceptions.OutOfMemoryError):
        return Loss(False, f"out of memory: {_first_sentence(text)}", node_id, host, pid)
    return None


def one_line(text: str) -> str:
    """``text`` in one line of at most ``CAUSE_LIMIT`` characters, without sentences advising to read logs."""
    sentences = " ".join(text.split()).split(". ")
    kept = [s for s in sentences if not (s.startswith(("Check ", "To troubleshoot")) and "log" in s)]
    return ". ".join(kept).strip()[:CAUSE_LIMIT]


def _exit_cause(text: str) -> str:
    found = _EXIT.search(text)
    if not found:
        return "its worker process died"
    return f"worker exit {found.group(1)}: {_first_sentence(found.group(2))}"


def _first_sentence(text: str) -> str:
    """Ray's detail up to its list of possible causes ("Some common causes include ...")."""
    flat = " ".join(text.split())
    for marker in (" Some common causes", " There are some potential root causes", " To see node death"):
        flat = flat.split(marker, 1)[0]
    return flat.strip()


def _group(found: re.Match[str] | None) -> str:
    return found.group(1) if found else ""


def _int(found: re.Match[str] | None) -> int | None:
    return int(found.group(1)) if found else None
