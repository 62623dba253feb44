"""Running an agent inside a bubblewrap sandbox (Linux).

An agent under evaluation is untrusted code: a coding agent runs shell commands
with the rights of whoever started waza. With a :class:`Sandbox`, the
adapters start the agent (and so everything it starts: terminals, tools,
subprocesses) through ``bwrap``: the system directories read-only, the
workspace read-write, the user's home and every other file hidden unless
listed, a private ``/tmp``, its own process and IPC namespaces, and the network
``none`` (a loopback of its own), ``loopback`` (only the listed TCP ports of the
host's loopback, relayed in by waza) or ``host``.

bubblewrap is the tool Flatpak and Claude Code's own sandbox use: waza builds its
command line and runs nothing of its own inside but, for ``loopback``, the small
relay in :mod:`waza.protocol.io.sandbox_relay` (standard library only).
"""

from __future__ import annotations

import functools
import os
import pwd
import shutil
import subprocess
import sys
import tempfile
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager, suppress
from pathlib import Path
from typing import TYPE_CHECKING, Literal

import msgspec

from ..errors import ConfigError
from .secrets import is_secret_name

if TYPE_CHECKING:
    import anyio.abc

__all__ = ["NETWORKS", "Sandbox", "check_available", "relayed", "sandbox_env", "wrap_command"]

Network = Literal["none", "loopback", "host"]
NETWORKS: tuple[Network, ...] = ("none", "loopback", "host")

#: What the sandbox shows of the system, read-only, where it exists (a symlink, such as /bin -> usr/bin on
#: merged-/usr systems, is made again as the same symlink).
SYSTEM_PATHS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/opt")

#: Where the relay's sockets appear inside the sandbox (``loopback`` network).
RELAY_MOUNT = "/run/waza-relay"


class Sandbox(msgspec.Struct, frozen=True):
    """What a sandboxed agent may see and reach.

    ``read_only`` and ``read_write`` list extra paths (files or directories) made
    visible at the same place; ``network`` is ``none``, ``loopback`` or ``host``;
    ``ports`` are the host loopback TCP ports reachable with ``loopback``;
    ``keep_env`` names secret-like environment variables the agent still gets
    (every other secret-like variable is removed, as for graders).
    """

    read_only: tuple[Path, ...] = ()
    read_write: tuple[Path, ...] = ()
    network: Network = "none"
    ports: tuple[int, ...] = ()
    keep_env: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.network not in NETWORKS:
            raise ConfigError(f"network must be one of {', '.join(NETWORKS)}, got {self.network!r}", field="Sandbox.network")
        for port in self.ports:
            if not isinstance(port, int) or isinstance(port, bool) or not 0 < port < 65536:
                raise ConfigError(f"a port must be a whole number from 1 to 65535, got {port!r}", field="Sandbox.ports")
        if self.ports and self.network != "loopback":
            raise ConfigError("ports are relayed only with network 'loopback'", field="Sandbox.ports")
        for name, paths in (("read_only", self.read_only), ("read_write", self.read_write)):
            for path in paths:
                if not Path(path).is_absolute():
                    raise ConfigError(f"{path} is not an absolute path", field=f"Sandbox.{name}")
                if not os.path.lexists(path):
                    raise ConfigError(f"{path} does not exist", field=f"Sandbox.{name}")


@functools.cache
def _probe() -> str | None:
    """Why bubblewrap cannot make a sandbox here, or None when it can (tried once per process)."""
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        return "bubblewrap is not installed (Debian and Ubuntu: apt-get install bubblewrap)"
    try:
        done = subprocess.run(
            [bwrap, "--ro-bind", "/", "/", "--unshare-pid", "--unshare-net", "--die-with-parent", "true"],
            capture_output=True,
            timeout=30,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"bubblewrap cannot run: {exc}"
    if done.returncode != 0:
        why = done.stderr.decode("utf-8", "replace").strip().splitlines()
        return (
            f"bubblewrap cannot make a sandbox here ({why[-1] if why else f'exit {done.returncode}'}; user namespaces may be off)"
        )
    return None


def check_available() -> None:
    """Raise :class:`ConfigError` when no sandbox can be made on this machine (not Linux, no bwrap, no namespaces)."""
    if not sys.platform.startswith("linux"):
        raise ConfigError("the bubblewrap sandbox runs on Linux only", field="Sandbox")
    why = _probe()
    if why is not None:
        raise ConfigError(why, field="Sandbox")


def _homes() -> list[str]:
    """The user's home (``$HOME``) and the account's home when it differs: hidden inside."""
    homes = [os.environ.get("HOME") or ""]
    with suppress(KeyError):
        homes.append(pwd.getpwuid(os.getuid()).pw_dir)
    return sorted({h for h in homes if h and h != "/"})


def _installation(path: str) -> list[str]:
    """The folders a program needs to run, for each link of its path: the folder above ``bin/`` when it
    is an installation (it has ``lib/`` or ``pyvenv.cfg``: a Python or Node installation, a virtual
    environment), the outermost ``node_modules`` (a Node CLI and its packages), or else the program's
    own folder (``~/bin/agent`` shows ``~/bin``, not the home)."""
    found: list[str] = []
    seen: set[str] = set()
    current = os.path.abspath(path)
    while current not in seen:
        seen.add(current)
        parts = Path(current).parts
        if "node_modules" in parts:
            found.append(str(Path(*parts[: parts.index("node_modules") + 1])))
        else:
            folder = os.path.dirname(current)
            above = os.path.dirname(folder)
            # /bin/sh on a merged-/usr system is not an installation at /: that would show the whole root
            installed = (
                os.path.basename(folder) == "bin"
                and above != "/"
                and any(os.path.exists(os.path.join(above, marker)) for marker in ("pyvenv.cfg", "lib"))
            )
            found.append(above if installed else folder)
        if not os.path.islink(current):
            break
        current = os.path.join(os.path.dirname(current), os.readlink(current))
    return found


def sandbox_env(policy: Sandbox, env: Mapping[str, str]) -> dict[str, str]:
    """``env`` without its secret-like variables, but for those the policy keeps (as graders get it)."""
    return {k: v for k, v in env.items() if k in policy.keep_env or not is_secret_name(k)}


async def _copy(source: anyio.abc.ByteStream, sink: anyio.abc.ByteStream) -> None:
    import anyio

    try:
        async for chunk in source:
            await sink.send(chunk)
        await sink.send_eof()
    except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
        pass


async def _relay_one(port: int, client: anyio.abc.ByteStream) -> None:
    import anyio

    async with client:
        try:
            upstream = await anyio.connect_tcp("127.0.0.1", port)
        except OSError:
            return  # nothing listens there: the agent sees its connection closed
        async with upstream, anyio.create_task_group() as tg:
            tg.start_soon(_copy, client, upstream)
            await _copy(upstream, client)


@asynccontextmanager
async def relayed(policy: Sandbox) -> AsyncIterator[Path | None]:
    """With network ``loopback`` and ports: a fresh folder holding a Unix socket per port, each
    connection to one relayed to that port of the host's loopback for as long as the context lasts (an
    adapter's lifetime); the relay inside the sandbox connects to them. Otherwise None."""
    if policy.network != "loopback" or not policy.ports:
        yield None
        return
    import anyio  # only a relay needs it: a command's --help and a plain run load no event loop from here

    folder = Path(tempfile.mkdtemp(prefix="waza-relay-"))
    try:
        async with anyio.create_task_group() as tg:
            for port in policy.ports:
                listener = await anyio.create_unix_listener(folder / str(port))
                tg.start_soon(listener.serve, functools.partial(_relay_one, port))
            try:
                yield folder
            finally:
                tg.cancel_scope.cancel()
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def wrap_command(
    argv: Sequence[str],
    policy: Sandbox,
    workspace: Path,
    relay: Path | None = None,
    *,
    mounts: Sequence[tuple[Path, str, bool]] = (),
    chdir: str | None = None,
) -> list[str]:
    """``argv`` as run inside a sandbox whose read-write place is ``workspace`` (``relay``: the folder
    :func:`relayed` gave, for network ``loopback``). ``mounts`` shows more host folders at other places,
    as ``(host path, place inside, writable)``, after everything else (a benchmark task's ``/app`` or
    ``/tests``); ``chdir`` is the directory the command starts in instead of the current one.

    The program (``argv[0]``, resolved on ``PATH``), each argument that names an
    existing absolute path (a script), and their installations are made visible
    read-only, so ``python agent.py`` and ``npx``-installed CLIs start as they do
    outside. Mounts are applied in order, so a later, more specific one wins: the
    home is hidden after the system is shown, the workspace shown after that. The
    command starts in the directory it is started in outside (bubblewrap keeps the
    working directory), which must be the workspace or a folder inside it.
    """
    bwrap = shutil.which("bwrap") or "bwrap"
    out = [bwrap, "--die-with-parent", "--new-session", "--unshare-pid", "--unshare-ipc", "--unshare-uts"]
    if policy.network != "host":
        out.append("--unshare-net")
    for path in SYSTEM_PATHS:
        if os.path.islink(path):
            out += ["--symlink", os.readlink(path), path]
        elif os.path.exists(path):
            out += ["--ro-bind", path, path]
    out += ["--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp", "--tmpfs", "/run"]
    for home in _homes():
        out += ["--tmpfs", home]  # an empty, writable home: configuration an agent writes stays inside
    program = argv[0] if os.sep in argv[0] else (shutil.which(argv[0]) or argv[0])
    visible: list[str] = []
    for arg in [program, *argv[1:]]:
        if os.path.isabs(arg) and os.path.exists(arg):
            visible += _installation(arg)
    if relay is not None:
        visible += _installation(sys.executable)  # the relay runs on waza's own interpreter, standard library only
    for path in dict.fromkeys([*visible, *map(str, policy.read_only)]):
        out += ["--ro-bind-try", path, path]
    for path in dict.fromkeys([*map(str, policy.read_write), str(workspace)]):
        out += ["--bind", path, path]
    for source, place, writable in mounts:
        out += ["--bind" if writable else "--ro-bind", str(source), place]
    if chdir is not None:
        out += ["--chdir", chdir]
    if relay is not None:
        from . import sandbox_relay

        out += ["--ro-bind", str(relay), RELAY_MOUNT, "--ro-bind", sandbox_relay.__file__, "/run/waza-relay.py"]
        ports = ",".join(str(p) for p in policy.ports)
        out += ["--", sys.executable, "-I", "-S", "/run/waza-relay.py", RELAY_MOUNT, ports, "--"]
    else:
        out.append("--")
    return [*out, program, *argv[1:]]
