"""Resource limits of a sandboxed agent: memory, processes, CPU time and workspace size.

The limits are set by a small launcher (:mod:`waza.adapters.sandbox.limiter`,
standard library only) that starts bubblewrap: it puts itself, and so the
sandbox and everything in it, into a control group of its own where waza may
create one (cgroup v2, or v1's ``memory`` and ``pids`` hierarchies, below
waza's own group), else sets ``setrlimit`` limits; CPU time and the size of
one file are ``setrlimit`` limits in both cases. Which mechanism is used is
decided once per process (:func:`mechanism`) and said once on stderr by the
runner.

When the agent ends after hitting a limit the launcher can tell (an OOM kill
or a failed allocation charged to the group, a refused fork, ``SIGXCPU``,
``SIGXFSZ``), it writes one ``waza-limit: FIELD`` line on stderr; the runner
turns it into that prompt's error naming the limit (:func:`limit_errors`).
"""

from __future__ import annotations

import functools
import os
import sys
from pathlib import Path

import msgspec

from waza.protocol.errors import ConfigError

__all__ = ["LIMIT_MARK", "SandboxLimits", "describe", "limit_errors", "limited", "mechanism"]

#: The start of the line the launcher writes on stderr when the agent hit a limit.
LIMIT_MARK = "waza-limit: "
_CGROUP = Path("/sys/fs/cgroup")
#: The largest value a limit takes (in its own unit): far above any machine, below overflow.
_MAX = 1 << 40


class SandboxLimits(msgspec.Struct, frozen=True):
    """What one sandboxed agent may use; ``None``: no limit.

    ``memory_mb``: memory of the agent and everything it starts, together
    (a control group's limit; with ``setrlimit`` only, each process's
    address space). ``pids``: processes and threads at once. ``cpu_seconds``:
    CPU time of each process (``RLIMIT_CPU``). ``disk_mb``: the largest file
    the agent may write (``RLIMIT_FSIZE``), and the workspace's size when the
    prompt ends (measured by the runner).
    """

    memory_mb: int | None = None
    pids: int | None = None
    cpu_seconds: int | None = None
    disk_mb: int | None = None

    def __post_init__(self) -> None:
        for name in ("memory_mb", "pids", "cpu_seconds", "disk_mb"):
            value = getattr(self, name)
            if value is not None and (isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= _MAX):
                raise ConfigError(
                    f"must be a whole number from 1 to {_MAX}, or None, got {value!r}", field=f"Sandbox.limits.{name}"
                )
        if self.pids is not None and self.pids < 4:
            raise ConfigError("must be at least 4 (the launcher, bubblewrap and the agent count)", field="Sandbox.limits.pids")

    def __bool__(self) -> bool:
        return any(getattr(self, name) is not None for name in self.__struct_fields__)


def _own_group(controller: str) -> str | None:
    """This process's group in the cgroup v1 hierarchy of ``controller`` ('' for v2), from /proc/self/cgroup."""
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        _, controllers, path = line.split(":", 2)
        if controller in controllers.split(","):
            return path
    return None


def _writable(folder: Path) -> bool:
    return folder.is_dir() and os.access(folder, os.W_OK | os.X_OK)


@functools.cache
def mechanism() -> dict[str, str]:
    """Where the launcher makes its groups: ``{"v2": folder}``, ``{"memory": folder, "pids": folder}``
    (v1), or ``{}`` (no group may be made here: ``setrlimit`` only). Looked at once per process."""
    if not sys.platform.startswith("linux"):
        return {}
    if (_CGROUP / "cgroup.controllers").exists():  # the unified (v2) hierarchy alone
        own = _own_group("")
        if own is not None:
            folder = _CGROUP / own.lstrip("/")
            try:
                enabled = set((folder / "cgroup.subtree_control").read_text().split())
            except OSError:
                enabled = set()
            if {"memory", "pids"} <= enabled and _writable(folder):
                return {"v2": str(folder)}
        return {}
    found: dict[str, str] = {}
    for controller in ("memory", "pids"):
        own = _own_group(controller)
        folder = _CGROUP / controller / (own or "/").lstrip("/")
        if own is None or not _writable(folder):
            return {}
        found[controller] = str(folder)
    return found


def describe() -> str:
    """One line for stderr: which mechanism holds the sandbox limits on this machine."""
    groups = mechanism()
    if "v2" in groups:
        how = "a cgroup v2 group per agent for memory and processes"
    elif groups:
        how = "a cgroup v1 group per agent (memory, pids) for memory and processes"
    else:
        how = (
            "setrlimit for memory (address space of each process) and processes (RLIMIT_NPROC counts every"
            " process of the user and does not bind root)"
        )
    return f"waza: sandbox limits: {how}; setrlimit for CPU time (per process) and file size"


def limited(argv: list[str], limits: SandboxLimits) -> list[str]:
    """``argv`` (a bubblewrap command line) started through the launcher that applies ``limits``."""
    if not limits:
        return argv
    from . import limiter

    fields = [f"{name}={value}" for name, value in msgspec.structs.asdict(limits).items() if value is not None]
    groups = [f"group.{kind}={folder}" for kind, folder in mechanism().items()]
    return [sys.executable, "-I", "-S", limiter.__file__, *fields, *groups, "--", *argv]


#: A limit the launcher reports, as the option that sets it.
_NAMES = {"memory_mb": "memory", "pids": "processes", "cpu_seconds": "CPU time", "disk_mb": "file size"}


def limit_errors(stderr: str | None, limits: SandboxLimits) -> list[str]:
    """The errors, one per limit, the launcher reported in an agent's ``stderr``."""
    found: list[str] = []
    for line in (stderr or "").splitlines():
        if line.startswith(LIMIT_MARK):
            field = line[len(LIMIT_MARK) :].strip()
            if field in _NAMES and field not in found:
                found.append(field)
    return [
        f"the agent reached its sandbox {_NAMES[f]} limit (Sandbox.limits.{f} = {getattr(limits, f)})"
        for f in found
        if getattr(limits, f) is not None
    ]
