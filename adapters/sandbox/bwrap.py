"""Running an agent inside a bubblewrap sandbox (Linux).

An agent under evaluation is untrusted code: a coding agent runs shell commands
with the rights of whoever started waza. With a :class:`Sandbox`, the
adapters start the agent (and so everything it starts: terminals, tools,
subprocesses) through ``bwrap``: the system directories read-only, the
workspace read-write, the user's home and every other file hidden unless
listed, a private ``/tmp``, its own process and IPC namespaces, and the network
``none`` (a loopback of its own), ``loopback`` (only the listed TCP ports of the
host's loopback, relayed in by waza) or ``host``.

Two steps, kept apart: :func:`plan` decides what the sandbox shows, once per
run, from the evaluator's command line (real paths, never ``/``, a home or a
temporary folder of the host); :func:`wrap_command` builds each ``bwrap``
command line from that planned policy alone, so nothing a turn, a terminal or
an agent's session id carries can widen it.

bubblewrap is the tool Flatpak and Claude Code's own sandbox use: waza builds its
command line and runs nothing of its own inside but, for ``loopback``, the small
relay in :mod:`waza.adapters.sandbox.relay` (standard library only).
"""

from __future__ import annotations

import errno
import functools
import os
import pwd
import shutil
import stat
import subprocess
import sys
import tempfile
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager, suppress
from pathlib import Path
from typing import TYPE_CHECKING, Literal

import msgspec

from waza.protocol.errors import ConfigError
from waza.protocol.io.secrets import is_secret_name

from .limits import SandboxLimits, limited

if TYPE_CHECKING:
    import anyio.abc

__all__ = [
    "NETWORKS",
    "Sandbox",
    "check_available",
    "hidden_places",
    "masked_in_etc",
    "plan",
    "program_as_shown",
    "relayed",
    "sandbox_env",
    "too_high",
    "wrap_command",
]

Network = Literal["none", "loopback", "host"]
NETWORKS: tuple[Network, ...] = ("none", "loopback", "host")

#: What the sandbox shows of the system, read-only, where it exists (a symlink, such as /bin -> usr/bin on
#: merged-/usr systems, is made again as the same symlink).
SYSTEM_PATHS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/opt")

#: Hidden inside behind an empty folder of the sandbox's own (with the homes), never shown.
TEMPORARY = ("/tmp", "/var/tmp", "/run")

#: Where other accounts' homes live: a folder of the view is never one of them or above them.
OTHER_HOMES = ("/home", "/root")

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
    #: Set by :func:`plan`: ``read_only`` holds real paths and the program's installation, decided once.
    planned: bool = False
    #: Memory, processes, CPU time and disk of the agent (:mod:`waza.adapters.sandbox.limits`).
    limits: SandboxLimits = SandboxLimits()

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
    """The user's home (``$HOME``) and the account's home when it differs, as given and as real paths: hidden inside."""
    homes = [os.environ.get("HOME") or ""]
    with suppress(KeyError):
        homes.append(pwd.getpwuid(os.getuid()).pw_dir)
    homes = [h for h in homes if h]
    return sorted({p for h in homes for p in (os.path.abspath(h), os.path.realpath(h))} - {"/"})


def hidden_places() -> list[str]:
    """What the sandbox hides (the homes, and the host's ``/tmp``, ``/var/tmp`` and ``/run``), as real paths,
    with every account's home folder (``/home/*``, ``/root``): never shown whole, even when not the user's."""
    return sorted({*_homes(), *(os.path.realpath(p) for p in (*TEMPORARY, *OTHER_HOMES))})


def too_high(path: str, hidden: Sequence[str]) -> bool:
    """Whether showing ``path`` (a real path) would show ``/``, a hidden place or a folder holding one."""
    return path == "/" or any(h == path or h.startswith(path.rstrip("/") + "/") for h in hidden)


@functools.cache
def masked_in_etc() -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The files and folders of ``/etc`` that an ordinary account may not read (``/etc/shadow``,
    ``gshadow``, ``sudoers``, ``sudoers.d``, SSH host keys, ``ssl/private``, ...): ``(files, folders)``.

    The rule is the permission bits, not a list of names: a file others may not read, or a folder others
    may not list and enter. Inside the sandbox, files are replaced by ``/dev/null`` and folders by an
    empty one, so an agent run as root (or in the file's group) sees ``/etc`` as any other account does.
    Links are not followed; found once per process (the walk of ``/etc`` takes milliseconds).
    """
    files: list[str] = []
    folders: list[str] = []
    for root, dirs, names in os.walk("/etc", onerror=lambda _exc: None):
        kept = []
        for name in dirs:
            path = os.path.join(root, name)
            with suppress(OSError):
                mode = os.lstat(path).st_mode
                if stat.S_ISDIR(mode) and mode & 0o005 != 0o005:
                    folders.append(path)
                    continue
            kept.append(name)
        dirs[:] = kept
        for name in names:
            path = os.path.join(root, name)
            with suppress(OSError):
                mode = os.lstat(path).st_mode
                if stat.S_ISREG(mode) and not mode & 0o004:
                    files.append(path)
    return tuple(files), tuple(folders)


def _under_system(path: str) -> bool:
    return any(path == s or path.startswith(s + "/") for s in _system_real())


@functools.cache
def _system_real() -> tuple[str, ...]:
    return tuple(os.path.realpath(p) for p in SYSTEM_PATHS if os.path.exists(p))


def _real(path: str) -> str:
    """``path`` with the links of its folders resolved, its own name kept (a link stays the link)."""
    path = os.path.abspath(path)
    return os.path.join(os.path.realpath(os.path.dirname(path)), os.path.basename(path))


def program_as_shown(command: Sequence[str]) -> list[str]:
    """``command`` with its program named as a planned sandbox shows it: a path's folders' links resolved
    (``plan`` binds real paths, so a program reached through a linked folder, such as a checkout linked
    into ``/tmp``, is not there under the name the link gave it); a bare name is found on ``PATH`` inside."""
    if not command or os.sep not in command[0]:
        return list(command)
    return [_real(command[0]), *command[1:]]


def _installation(path: str) -> list[str]:
    """The folders a program at ``path`` (a real path) needs: a virtual environment (``pyvenv.cfg``
    above its ``bin/``) whole; of an installation (``lib/`` beside ``bin/``: a Python, a Node, ``~/.local``)
    only ``bin/`` and ``lib/``; the outermost ``node_modules`` (a Node CLI and its packages); else the
    program's own folder (``~/bin/agent`` shows ``~/bin``, not the home)."""
    parts = Path(path).parts
    if "node_modules" in parts:
        return [str(Path(*parts[: parts.index("node_modules") + 1]))]
    folder = os.path.dirname(path)
    above = os.path.dirname(folder)
    if os.path.basename(folder) == "bin":
        if os.path.isfile(os.path.join(above, "pyvenv.cfg")):
            return [above]
        if os.path.isdir(os.path.join(above, "lib")):
            return [folder, *(os.path.join(above, lib) for lib in ("lib", "lib64") if os.path.isdir(os.path.join(above, lib)))]
    return [folder]


def _hops(path: str) -> list[str]:
    """``path`` and each link it goes through to the program file, each as a real path (at most 40 links)."""
    hops = [_real(path)]
    while os.path.islink(hops[-1]) and len(hops) < 40:
        hops.append(_real(os.path.join(os.path.dirname(hops[-1]), os.readlink(hops[-1]))))
    return hops


def _interpreter(path: str) -> str | None:
    """The program a script's ``#!`` line runs (through ``/usr/bin/env NAME`` too), resolved on ``PATH``."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        head = os.read(fd, 256)
    finally:
        os.close(fd)
    if not head.startswith(b"#!"):
        return None
    words = head[2:].split(b"\n", 1)[0].decode("utf-8", "replace").split()
    if words and os.path.basename(words[0]) == "env":
        words = [w for w in words[1:] if not w.startswith("-")]
    if not words:
        return None
    return words[0] if os.path.isabs(words[0]) else shutil.which(words[0])


def _shown_for(path: str, hidden: Sequence[str]) -> list[str]:
    """What to show for an existing path the evaluator named: a folder itself; a program, each link
    on its way, and its interpreter with their installations. A folder that would be too high is
    narrowed to the file itself; a file that is itself too high (a home) is not shown."""
    if os.path.isdir(path):
        real = os.path.realpath(path)
        return [] if too_high(real, hidden) else [real]
    hops = _hops(path)
    interpreter = _interpreter(os.path.realpath(path))
    if interpreter is not None and os.path.exists(interpreter):
        hops += _hops(interpreter)
    shown: list[str] = []
    for hop in hops:
        folders = _installation(hop)
        shown += [hop] if any(too_high(f, hidden) for f in folders) else folders
    return [p for p in shown if not _under_system(p) and not too_high(p, hidden)]


def plan(policy: Sandbox, command: Sequence[str]) -> Sandbox:
    """``policy`` with what its sandbox shows decided, once, from the evaluator's command line (the
    agent's program, resolved on ``PATH``, the existing absolute paths among its arguments) and the
    policy's own paths: real paths, links resolved now, so nothing an agent writes later changes what a
    later sandbox shows. ConfigError for a listed path that would show ``/``, a home, ``/tmp``,
    ``/var/tmp``, ``/run`` or a folder holding one."""
    hidden = hidden_places()
    read_only = [os.path.realpath(p) for p in policy.read_only]
    read_write = [os.path.realpath(p) for p in policy.read_write]
    for name, paths in (("read_only", read_only), ("read_write", read_write)):
        for path in paths:
            if too_high(path, hidden):
                raise ConfigError(
                    f"{path} is or holds / , a home, /tmp, /var/tmp or /run, which the sandbox never shows",
                    field=f"Sandbox.{name}",
                )
    shown: list[str] = []
    if command:
        program = command[0] if os.sep in command[0] else (shutil.which(command[0]) or command[0])
        for arg in [program, *command[1:]]:
            if os.path.isabs(arg) and os.path.exists(arg):
                shown += _shown_for(arg, hidden)
    if policy.network == "loopback" and policy.ports:
        shown += _shown_for(sys.executable, hidden)  # the relay runs on waza's own interpreter, standard library only
    return msgspec.structs.replace(
        policy,
        read_only=tuple(Path(p) for p in dict.fromkeys([*shown, *read_only])),
        read_write=tuple(Path(p) for p in dict.fromkeys(read_write)),
        planned=True,
    )


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


#: Longest pause, in seconds, between tries to accept while the process is out of file descriptors.
ACCEPT_BACKOFF = 1.0


async def _accepting(listener: anyio.abc.SocketListener, port: int) -> None:
    """Relay each connection to ``listener``; out of descriptors (EMFILE, ENFILE, ENOBUFS, ENOMEM), wait and try
    again, doubling the pause up to ACCEPT_BACKOFF: the agent's connection waits or fails, the run goes on."""
    import anyio

    pause = 0.01
    async with listener, anyio.create_task_group() as tg:
        while True:
            try:
                client = await listener.accept()
            except (OSError, anyio.BrokenResourceError) as exc:  # anyio's listener: Broken, caused by the OSError
                cause = exc if isinstance(exc, OSError) else exc.__cause__
                if not isinstance(cause, OSError) or cause.errno not in (errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM):
                    raise
                await anyio.sleep(pause)
                pause = min(pause * 2, ACCEPT_BACKOFF)
                continue
            pause = 0.01
            tg.start_soon(_relay_one, port, client)


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
                tg.start_soon(_accepting, listener, port)
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
    setenv: Mapping[str, str] | None = None,
    *,
    mounts: Sequence[tuple[Path, str, bool]] = (),
    chdir: str | None = None,
) -> list[str]:
    """``argv`` as run inside a sandbox whose read-write place is ``workspace`` (``relay``: the folder
    :func:`relayed` gave, for network ``loopback``); ``setenv``: variables set inside only (a terminal's
    ``env`` as the agent sent it), never in the environment of ``bwrap`` itself on the host. ``mounts``
    shows more host folders at other places, as ``(host path, place inside, writable)``, after
    everything else (a benchmark task's ``/app`` or ``/tests``); ``chdir`` is the directory the command
    starts in instead of the current one.

    What is shown comes from ``policy`` alone, planned once (:func:`plan`): nothing of ``argv`` adds to
    it, so a turn's, a terminal's or a session's arguments cannot widen it. Mounts are applied in order,
    so a later, more specific one wins: the homes and the temporary folders are hidden after the
    system is shown, the program's installation and the workspace shown after that. Every capability
    is dropped (run as root too), so nothing inside can remount a read-only bind writable. The command
    starts in the directory it is started in outside (bubblewrap keeps the working directory), which
    must be the workspace or a folder inside it.
    """
    if not policy.planned:
        raise ValueError("plan(policy, command) decides what a sandbox shows; wrap_command takes a planned policy")
    real, hidden = os.path.realpath(workspace), hidden_places()
    if too_high(real, hidden):
        raise ConfigError(f"workspace {workspace} is or holds / , a home, /tmp, /var/tmp or /run", field="workspace")
    for listed in (*policy.read_only, *policy.read_write):
        if too_high(str(listed), hidden):  # a policy marked planned by hand gets the same refusal plan() gives
            raise ConfigError(
                f"{listed} is or holds / , a home, /tmp, /var/tmp or /run, which the sandbox never shows", field="Sandbox"
            )
    bwrap = shutil.which("bwrap") or "bwrap"
    out = [bwrap, "--die-with-parent", "--new-session", "--cap-drop", "ALL"]
    out += ["--unshare-pid", "--unshare-ipc", "--unshare-uts"]
    if policy.network != "host":
        out.append("--unshare-net")
    for path in SYSTEM_PATHS:
        if os.path.islink(path):
            out += ["--symlink", os.readlink(path), path]
        elif os.path.exists(path):
            out += ["--ro-bind", path, path]
    if os.path.isdir("/etc") and not os.path.islink("/etc"):
        files, folders = masked_in_etc()
        for path in filter(os.path.lexists, files):  # one removed since the walk would stop bwrap
            out += ["--ro-bind", "/dev/null", path]
        for path in filter(os.path.isdir, folders):
            out += ["--tmpfs", path, "--remount-ro", path]
    out += ["--dev", "/dev", "--proc", "/proc"]
    for path in TEMPORARY:
        out += ["--tmpfs", path]
    for home in _homes():
        out += ["--tmpfs", home]  # an empty, writable home: configuration an agent writes stays inside
    for path in dict.fromkeys(map(str, policy.read_only)):
        out += ["--ro-bind-try", path, path]
    for path in dict.fromkeys([*map(str, policy.read_write), real]):
        out += ["--bind", path, path]
    if real != str(workspace):
        out += ["--bind", real, str(workspace)]  # the folder the command starts in, as the caller named it
    for name, value in (setenv or {}).items():
        out += ["--setenv", name, value]
    for source, place, writable in mounts:
        out += ["--bind" if writable else "--ro-bind", str(source), place]
    if chdir is not None:
        out += ["--chdir", chdir]
    if relay is not None:
        from . import relay as relay_script

        out += ["--ro-bind", str(relay), RELAY_MOUNT, "--ro-bind", relay_script.__file__, "/run/waza-relay.py"]
        ports = ",".join(str(p) for p in policy.ports)
        out += ["--", _real(sys.executable), "-I", "-S", "/run/waza-relay.py", RELAY_MOUNT, ports, "--"]
    else:
        out.append("--")
    return limited([*out, *argv], policy.limits)
