"""Being told when files change, so an idle viewer does no work however many files it shows.

On Linux the kernel says what changed through inotify (called through
``ctypes``: the C library has had it since glibc 2.4, and no package is needed
for three calls); one watch per directory covers every file in it. Elsewhere,
or when the kernel refuses more watches, :class:`Watcher` says so and the
registry falls back to checking files with ``stat`` at intervals that grow
while nothing changes.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import os
import select
import struct
import sys
from pathlib import Path

__all__ = ["Watcher", "open_watcher"]

IN_MODIFY = 0x2
IN_ATTRIB = 0x4
IN_CLOSE_WRITE = 0x8
IN_MOVED_FROM = 0x40
IN_MOVED_TO = 0x80
IN_CREATE = 0x100
IN_DELETE = 0x200
IN_DELETE_SELF = 0x400
IN_MOVE_SELF = 0x800
IN_Q_OVERFLOW = 0x4000
IN_IGNORED = 0x8000
IN_ONLYDIR = 0x1000000
IN_DONT_FOLLOW = 0x2000000
IN_ISDIR = 0x40000000
IN_NONBLOCK = os.O_NONBLOCK
IN_CLOEXEC = getattr(os, "O_CLOEXEC", 0)

MASK = (
    IN_MODIFY
    | IN_ATTRIB
    | IN_CLOSE_WRITE
    | IN_MOVED_FROM
    | IN_MOVED_TO
    | IN_CREATE
    | IN_DELETE
    | IN_DELETE_SELF
    | IN_MOVE_SELF
    | IN_ONLYDIR
    | IN_DONT_FOLLOW
)
EVENT = struct.Struct("iIII")
#: Bytes read from the inotify descriptor at once (many events each).
READ_BYTES = 64 * 1024


class Watcher:
    """Directories watched with inotify; :meth:`wait` returns the paths that changed.

    ``None`` from :meth:`wait` means "anything may have changed" (the kernel's
    queue overflowed): the caller looks at everything once.
    """

    def __init__(self, fd: int, add_watch: ctypes._CFuncPtr) -> None:  # type: ignore[name-defined]
        self._fd = fd
        self._add_watch = add_watch
        self._dirs: dict[int, Path] = {}
        self._wds: dict[Path, int] = {}

    def watch(self, directory: Path) -> bool:
        """Watch one directory (not its subdirectories); False when the kernel refuses (limit reached, gone)."""
        if directory in self._wds:
            return True
        wd = self._add_watch(self._fd, os.fsencode(directory), MASK)
        if wd < 0:
            return False
        self._dirs[wd] = directory
        self._wds[directory] = wd
        return True

    def wait(self, timeout: float) -> tuple[set[Path], set[Path]] | None:
        """(changed paths, new directories) seen within ``timeout`` seconds; None after an overflow."""
        ready, _, _ = select.select([self._fd], [], [], timeout)
        changed: set[Path] = set()
        created: set[Path] = set()
        if not ready:
            return changed, created
        while True:
            try:
                data = os.read(self._fd, READ_BYTES)
            except BlockingIOError:
                break
            overflow = self._parse(data, changed, created)
            if overflow:
                return None
            if len(data) < READ_BYTES // 2:
                break
        return changed, created

    def _parse(self, data: bytes, changed: set[Path], created: set[Path]) -> bool:
        at = 0
        while at + EVENT.size <= len(data):
            wd, mask, _cookie, length = EVENT.unpack_from(data, at)
            name = data[at + EVENT.size : at + EVENT.size + length].rstrip(b"\0")
            at += EVENT.size + length
            if mask & IN_Q_OVERFLOW:
                return True
            directory = self._dirs.get(wd)
            if directory is None:
                continue
            if mask & IN_IGNORED:
                self._dirs.pop(wd, None)
                self._wds.pop(directory, None)
                continue
            if not name:
                continue
            path = directory / os.fsdecode(name)
            if mask & IN_ISDIR:
                if mask & (IN_CREATE | IN_MOVED_TO):
                    created.add(path)
            else:
                changed.add(path)
        return False

    def close(self) -> None:
        with contextlib.suppress(OSError):
            os.close(self._fd)


def open_watcher() -> Watcher | None:
    """An inotify watcher, or None where there is none (not Linux, no C library, no descriptors left)."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        init = libc.inotify_init1
        add_watch = libc.inotify_add_watch
    except (OSError, AttributeError):
        return None
    init.argtypes = [ctypes.c_int]
    init.restype = ctypes.c_int
    add_watch.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_uint32]
    add_watch.restype = ctypes.c_int
    fd = init(IN_NONBLOCK | IN_CLOEXEC)
    if fd < 0:
        err = ctypes.get_errno()
        if err in (errno.EMFILE, errno.ENFILE, errno.ENOSYS, errno.EPERM):
            return None
        return None
    return Watcher(fd, add_watch)
