"""The interface every environment a benchmark task runs in implements (``--env host``, ``--env docker``).

A task of Harbor's format expects a machine of its own: its workspace at the
image's ``WORKDIR`` (usually ``/app``), ``/logs/agent`` and ``/logs/verifier``
fresh for each trial, ``/tests`` only while the verifier runs, ``/solution``
only for the reference solution. An :class:`Environment` gives one trial that
machine, through a real engine (bubblewrap, Docker), and nothing else: it does
not know agents or rewards.

How it is used, for one trial::

    env = ENVIRONMENTS["host"](spec, trial_dir)   # a class per kind, see register()
    await env.start()                            # build / check; EnvironmentUnsatisfied names what is missing
    try:
        done = await env.exec(["bash", "/solution/solve.sh"], phase="oracle", env={}, timeout=600,
                              mounts={"/solution": staged_solution})
        # or: an adapter starts its agent with env.command(argv, phase="agent", env=...)
        done = await env.exec(["bash", "/tests/test.sh"], phase="verifier", env=..., timeout=600,
                              mounts={"/tests": staged_tests})
        reward_dir = env.logs / "verifier"        # the host's view of /logs/verifier
    finally:
        await env.stop()

Each phase shows what it may see: ``agent`` and ``oracle`` the workspace and
``/logs/agent``; ``verifier`` those and a ``/logs/verifier`` emptied before it
starts; ``mounts`` adds the staged ``/solution`` (oracle) or ``/tests``
(verifier) for that one command. The trial (``trial.py``) stages those copies
and reads the reward; the environment only runs commands. :meth:`Environment.exec` returns
only when every process the command started has ended (the process tree, not
just its first process), which is what lets the verifier run after the agent
with nothing of the agent's still writing.

An implementation subclasses :class:`Environment` and registers itself with
:func:`register` (``preference`` orders the kinds) when its module is imported
(``trial.py`` imports ``host``; a new kind adds its import there); the run
command's ``--env`` names a kind, and :func:`best_available` picks the first
registered kind whose :meth:`Environment.available` says it can run here.
:meth:`Environment.facts` is copied into every result: put there whatever the
kind changed to run the task (a base image mapped, a limit not enforced).
"""

from __future__ import annotations

import abc
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import ClassVar, Literal

import msgspec

__all__ = [
    "ENVIRONMENTS",
    "PHASES",
    "Completed",
    "Environment",
    "EnvironmentSpec",
    "EnvironmentUnsatisfied",
    "Phase",
    "best_available",
    "register",
]

Phase = Literal["agent", "oracle", "verifier"]
PHASES: tuple[Phase, ...] = ("agent", "oracle", "verifier")
Network = Literal["none", "loopback", "host"]


class EnvironmentUnsatisfied(Exception):
    """What the task asks that this environment cannot give (a package, a base image, network): each named.

    Raised by :meth:`Environment.start`; the trial is an error whose kind is
    ``environment-unsatisfied``, never a failure of the agent.
    """

    def __init__(self, missing: Sequence[str]) -> None:
        self.missing = list(missing)
        super().__init__("the environment cannot give: " + "; ".join(self.missing))


class EnvironmentSpec(msgspec.Struct, frozen=True):
    """What a task asks of its environment, as read from its folder (independent of the format).

    ``environment_dir`` holds the Dockerfile (Harbor: ``environment/``;
    Terminal-Bench 1.x: the task folder itself). ``workdir`` is where the
    workspace appears (the Dockerfile's last ``WORKDIR``, or ``/app``).
    ``network`` is what the user allows for this task (the task's own need
    narrowed by the run's options), ``ports`` the host loopback ports relayed
    in with ``loopback`` (``waza serve-model``). ``read_only`` lists host paths
    shown read-only at the same place (an agent's installation); ``keep_env``
    names secret-like host variables the commands still get (every other one
    is removed). ``dockerfile``
    is its text (for environments that read rather than build it);
    ``verifier_needs`` the packages the verifier's scripts install at test time,
    as ``(manager, name)`` (``apt``, ``pip``, ``npm``, ``uv``): offline, each
    must already be there. ``base_images`` maps a ``FROM`` image to a local one
    that replaces it, for engines that build (``--base-image``). ``image`` is
    a ready image the task names (``docker_image``), used instead of building
    where the engine has it.
    """

    task_dir: Path
    environment_dir: Path | None
    workdir: str = "/app"
    network: Network = "none"
    ports: tuple[int, ...] = ()
    read_only: tuple[Path, ...] = ()
    cpus: float | None = None
    memory_mb: int | None = None
    storage_mb: int | None = None
    build_timeout_sec: float = 600.0
    env: Mapping[str, str] = msgspec.field(default_factory=dict)
    dockerfile: str | None = None
    keep_env: tuple[str, ...] = ()
    verifier_needs: tuple[tuple[str, str], ...] = ()
    base_images: Mapping[str, str] = msgspec.field(default_factory=dict)
    image: str | None = None


class Completed(msgspec.Struct, frozen=True):
    """How a command in the environment ended: ``exit_code`` is None when it was killed at its timeout;
    ``output`` is its stdout and stderr interleaved, the last bytes kept when it wrote more than the bound."""

    exit_code: int | None
    timed_out: bool
    output: str
    seconds: float


class Environment(abc.ABC):
    """One trial's machine; see the module's docstring for the order of calls.

    A subclass sets ``kind`` and implements the abstract methods; its
    constructor takes the task's :class:`EnvironmentSpec` and a fresh host
    folder for the trial, where it keeps ``logs`` (shown as ``/logs``) and, for
    engines that bind-mount, ``workspace``.
    """

    kind: ClassVar[str]
    #: Whether it runs a task's image (it can run a verifier whose tests are inside its image).
    runs_images: ClassVar[bool] = False

    def __init__(self, spec: EnvironmentSpec, trial_dir: Path) -> None:
        self.spec = spec
        self.trial_dir = trial_dir
        self.logs = trial_dir / "logs"
        self.workspace = trial_dir / "workspace"

    @classmethod
    @abc.abstractmethod
    def available(cls) -> str | None:
        """Why this kind cannot run on this machine, or None when it can."""

    def facts(self) -> dict[str, str]:
        """What a result records about this environment: its kind, and anything changed to run the task
        here (a base image replaced, a Dockerfile step not run); plain strings, stable across trials."""
        return {"kind": self.kind}

    @abc.abstractmethod
    async def start(self) -> None:
        """Make the machine ready (check or build); raise :class:`EnvironmentUnsatisfied` naming what is missing."""

    @abc.abstractmethod
    def command(
        self,
        argv: Sequence[str],
        *,
        phase: Phase,
        env: Mapping[str, str],
        mounts: Mapping[str, Path] | None = None,
        user: str | None = None,
    ) -> tuple[list[str], dict[str, str]]:
        """The host command line and environment that run ``argv`` inside, in ``WORKDIR``, with the phase's
        mounts: for an adapter that starts (and talks to) its agent itself. ``user`` (a name or a uid) is
        whom it runs as (``[agent].user``); a kind that cannot switch users says so in :meth:`facts`."""

    @abc.abstractmethod
    async def exec(
        self,
        argv: Sequence[str],
        *,
        phase: Phase,
        env: Mapping[str, str],
        timeout: float | None,
        mounts: Mapping[str, Path] | None = None,
        user: str | None = None,
    ) -> Completed:
        """Run ``argv`` inside to the end of its whole process tree, or kill it all at ``timeout`` seconds.

        ``mounts`` shows host folders (staged copies waza made) at absolute places
        for this command only: ``/tests`` for the verifier, ``/solution`` for the
        oracle. Before a ``verifier`` phase, ``logs/verifier`` is emptied. ``user``: as for :meth:`command`."""

    @abc.abstractmethod
    async def collect(self, source: str, dest: Path) -> str | None:
        """Copy ``source`` (a file or folder inside, an absolute path or one relative to ``WORKDIR``) to
        the host path ``dest`` (links copied as links); why it could not be, or None."""

    @abc.abstractmethod
    async def stop(self) -> None:
        """Tear the machine down (idempotent); the host folders ``logs`` and ``workspace`` stay as evidence."""


#: The environment kinds, in order of preference (best first), by name.
ENVIRONMENTS: dict[str, type[Environment]] = {}


def register(cls: type[Environment], *, preference: int | None = None) -> type[Environment]:
    """Add a kind; ``preference`` is its place in :data:`ENVIRONMENTS` (0: the best; None: last)."""
    items = [(k, v) for k, v in ENVIRONMENTS.items() if k != cls.kind]
    items.insert(len(items) if preference is None else preference, (cls.kind, cls))
    ENVIRONMENTS.clear()
    ENVIRONMENTS.update(items)
    return cls


def best_available() -> tuple[str | None, dict[str, str]]:
    """The first registered kind that can run here, and why each one before it cannot."""
    why: dict[str, str] = {}
    for kind, factory in ENVIRONMENTS.items():
        reason = factory.available()
        if reason is None:
            return kind, why
        why[kind] = reason
    return None, why
