"""The launcher that puts a sandbox under its limits: run as a script, standard library only.

Usage (waza builds it, :func:`waza.adapters.sandbox.limits.limited`):
``python -I -S limiter.py [FIELD=N ...] [group.KIND=FOLDER ...] -- BWRAP ARGV...``:
the limits that are set (``memory_mb``, ``pids``, ``cpu_seconds``, ``disk_mb``)
and where this launcher may make its control group (``group.v2``, or
``group.memory`` and ``group.pids``; none: ``setrlimit`` only). It imports
nothing it can do without, as it starts once per sandboxed process.

It makes the group ``waza-limit-PID`` there, sets its limits and moves itself
in, so bubblewrap and every process of the sandbox are counted together;
without a group, memory and processes are ``setrlimit`` limits. CPU time and
file size are always ``setrlimit`` limits (inherited by every process of the
sandbox). Then it runs the command with the same standard streams, passes on
the signals that stop it, and when the command ends writes a
``waza-limit: FIELD`` line on stderr for each limit it can tell was reached,
removes its group and exits as the command did. A group left by a launcher
that was killed is removed by the next launcher that starts.
"""

import os
import resource
import signal
import sys
import time

PREFIX = "waza-limit-"


def _write(path: str, text: str) -> None:
    with open(path, "w") as f:
        f.write(text)


def _read(path: str) -> dict[str, str]:
    """A cgroup ``key value`` file as a dict (missing file: empty)."""
    try:
        with open(path) as f:
            return {k: v for k, _, v in (line.strip().partition(" ") for line in f)}
    except OSError:
        return {}


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _reap(parent: str) -> None:
    """Remove the groups of launchers that no longer run (a killed one could not remove its own)."""
    try:
        names = os.listdir(parent)
    except OSError:
        return
    for name in names:
        pid = name[len(PREFIX) :]
        if name.startswith(PREFIX) and pid.isdigit() and not _alive(int(pid)):
            try:  # noqa: SIM105 - contextlib would cost an import at every sandbox start
                os.rmdir(os.path.join(parent, name))
            except OSError:
                pass  # still holding a process, or gone already


def _groups(spec: dict[str, int | None], parents: dict[str, str]) -> dict[str, str]:
    """Make this launcher's groups, set their limits and move it in; {controller or 'v2': folder}."""
    made: dict[str, str] = {}
    name = f"{PREFIX}{os.getpid()}"
    for kind, parent in parents.items():
        _reap(parent)
        folder = os.path.join(parent, name)
        os.mkdir(folder)
        made[kind] = folder
        memory, pids = spec["memory_mb"], spec["pids"]
        if kind in ("v2", "memory") and memory is not None:
            limit = str(memory << 20)
            if kind == "v2":
                _write(os.path.join(folder, "memory.max"), limit)
                _write(os.path.join(folder, "memory.swap.max"), "0")
            else:
                _write(os.path.join(folder, "memory.limit_in_bytes"), limit)
                if os.path.exists(os.path.join(folder, "memory.memsw.limit_in_bytes")):
                    _write(os.path.join(folder, "memory.memsw.limit_in_bytes"), limit)
        if kind in ("v2", "pids") and pids is not None:
            _write(os.path.join(folder, "pids.max"), str(pids))
        _write(os.path.join(folder, "cgroup.procs"), str(os.getpid()))
    return made


def _rlimits(spec: dict[str, int | None], grouped: bool) -> None:
    def cap(which: int, value: int, slack: int = 0) -> None:
        resource.setrlimit(which, (value, value + slack))

    if spec["cpu_seconds"] is not None:
        cap(resource.RLIMIT_CPU, spec["cpu_seconds"], slack=5)  # SIGXCPU first, SIGKILL 5 s later
    if spec["disk_mb"] is not None:
        cap(resource.RLIMIT_FSIZE, spec["disk_mb"] << 20)
    if not grouped:
        if spec["memory_mb"] is not None:
            cap(resource.RLIMIT_AS, spec["memory_mb"] << 20)
        if spec["pids"] is not None:
            cap(resource.RLIMIT_NPROC, spec["pids"])


def _reached(spec: dict[str, int | None], groups: dict[str, str], code: int) -> list[str]:
    """The limits the command's end shows were reached."""
    found: list[str] = []
    for kind, folder in groups.items():
        if kind in ("v2", "memory") and spec["memory_mb"] is not None:
            events = _read(os.path.join(folder, "memory.events" if kind == "v2" else "memory.oom_control"))
            if int(events.get("oom_kill", "0")) > 0:
                found.append("memory_mb")
        pids_events = _read(os.path.join(folder, "pids.events")) if kind in ("v2", "pids") else {}
        if spec["pids"] is not None and int(pids_events.get("max", "0")) > 0:
            found.append("pids")
    signalled = -code if code < 0 else code - 128 if code > 128 else 0
    if spec["cpu_seconds"] is not None and signalled in (signal.SIGXCPU, signal.SIGKILL):
        used = resource.getrusage(resource.RUSAGE_CHILDREN)
        if signalled == signal.SIGXCPU or used.ru_utime + used.ru_stime >= spec["cpu_seconds"]:
            found.append("cpu_seconds")
    if spec["disk_mb"] is not None and signalled == signal.SIGXFSZ:
        found.append("disk_mb")
    return list(dict.fromkeys(found))


def _leave(groups: dict[str, str]) -> None:
    """Move back to the parent groups and remove this launcher's (empty once the sandbox is gone)."""
    for folder in groups.values():
        try:
            _write(os.path.join(os.path.dirname(folder), "cgroup.procs"), str(os.getpid()))
        except OSError:
            continue
        for _ in range(40):  # the sandbox's last processes may take a moment to be reaped
            try:
                os.rmdir(folder)
                break
            except OSError:
                time.sleep(0.05)  # still busy after 2 s: removed by the next launcher's sweep


def main(argv: list[str]) -> int:
    split = argv.index("--") if "--" in argv else len(argv)
    if split + 1 >= len(argv):
        print("usage: limiter.py [FIELD=N ...] [group.KIND=FOLDER ...] -- COMMAND...", file=sys.stderr)
        return 2
    spec: dict[str, int | None] = dict.fromkeys(("memory_mb", "pids", "cpu_seconds", "disk_mb"))
    parents: dict[str, str] = {}
    for item in argv[:split]:
        key, _, value = item.partition("=")
        if key.startswith("group."):
            parents[key[len("group.") :]] = value
        else:
            spec[key] = int(value)
    command = argv[split + 1 :]
    try:
        groups = _groups(spec, parents)
    except OSError as exc:
        print(f"waza: cannot make the sandbox's control group: {exc}", file=sys.stderr)
        return 125
    try:
        _rlimits(spec, grouped=bool(groups))
        try:
            child = os.posix_spawnp(command[0], command, os.environ)
        except OSError as exc:
            print(f"cannot start {command[0]!r}: {exc.strerror or exc}", file=sys.stderr)
            return 127
        for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            signal.signal(sig, lambda number, _frame: os.kill(child, number))
        code = os.waitstatus_to_exitcode(os.waitpid(child, 0)[1])  # retried by Python after a signal passed on
        for field in _reached(spec, groups, code):
            print(f"waza-limit: {field}", file=sys.stderr, flush=True)
        return code if code >= 0 else 128 - code
    finally:
        _leave(groups)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
