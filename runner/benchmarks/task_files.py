"""Reading a task folder someone else wrote: relative to a directory descriptor, no symlink followed, bounded.

A benchmark is downloaded data: a task folder may hold a symlink to the user's
keys, a FIFO, or a multi-gigabyte file. Every read here goes through
:mod:`waza.protocol.io.confined` (the check is the open), refuses anything but a
regular file or directory, and stops at a size bound, so reading a hostile
dataset costs at most an error naming the file.
"""

from __future__ import annotations

import hashlib
import os
import stat
from pathlib import Path

from waza.protocol.errors import ConfigError
from waza.protocol.io.confined import Refused, open_dir, open_regular, relative_parts

__all__ = ["FILE_LIMIT", "TREE_LIMIT", "checksum", "entries", "exists", "is_dir", "read_text"]

#: The largest single file read (task.toml, instruction.md, a Dockerfile, a script).
FILE_LIMIT = 1024 * 1024
#: The most bytes a task's checksum reads (all its files together).
TREE_LIMIT = 256 * 1024 * 1024
#: The most entries in one folder (a dataset of tasks, a task's tests/).
ENTRY_LIMIT = 100_000


def _kind(root: Path, rel: str) -> int | None:
    """The file type of ``root/rel`` (the last component itself, never followed), or None when absent."""
    parts = relative_parts(root, rel)
    try:
        fd = open_dir(root, parts[:-1])
    except (FileNotFoundError, NotADirectoryError):
        return None
    except Refused as exc:
        raise ConfigError(f"refused: {exc.strerror}", source=str(root / rel)) from None
    try:
        return os.stat(parts[-1], dir_fd=fd, follow_symlinks=False).st_mode if parts else os.fstat(fd).st_mode
    except FileNotFoundError:
        return None
    finally:
        os.close(fd)


def exists(root: Path, rel: str) -> bool:
    """Whether ``root/rel`` is there as a regular file; a symlink or anything else there is a ConfigError."""
    mode = _kind(root, rel)
    if mode is None:
        return False
    if not stat.S_ISREG(mode):
        raise ConfigError("is not a regular file (symlinks are not followed)", source=str(root / rel))
    return True


def is_dir(root: Path, rel: str) -> bool:
    """Whether ``root/rel`` is a real directory (a symlink to one is not)."""
    mode = _kind(root, rel)
    return mode is not None and stat.S_ISDIR(mode)


def read_text(root: Path, rel: str, limit: int = FILE_LIMIT) -> str:
    """The UTF-8 text of the regular file ``root/rel``; ConfigError naming it when refused, too big or not text."""
    where = str(root / rel)
    try:
        fd = open_regular(root, relative_parts(root, rel))
    except FileNotFoundError:
        raise ConfigError("is missing", source=where) from None
    except OSError as exc:
        raise ConfigError(f"cannot be read: {exc.strerror or exc}", source=where) from None
    with os.fdopen(fd, "rb") as f:
        data = f.read(limit + 1)
    if len(data) > limit:
        raise ConfigError(f"is larger than {limit} bytes", source=where)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(f"is not UTF-8 text (byte {exc.start})", source=where) from None


def entries(root: Path, rel: str = "") -> list[tuple[str, int]]:
    """The names in folder ``root/rel`` with their types (not followed), sorted; at most ENTRY_LIMIT."""
    fd = open_dir(root, relative_parts(root, rel) if rel else [])
    try:
        names = os.listdir(fd)
        if len(names) > ENTRY_LIMIT:
            raise ConfigError(f"holds more than {ENTRY_LIMIT} entries", source=str(root / rel))
        return sorted((n, os.stat(n, dir_fd=fd, follow_symlinks=False).st_mode) for n in names)
    finally:
        os.close(fd)


def checksum(root: Path) -> str:
    """``sha256:`` of every file below ``root`` (paths and contents, in name order; a symlink by its target
    text), so a result names exactly the task it ran; a tree beyond TREE_LIMIT bytes, or holding a FIFO or
    a device, is a ConfigError (so nothing later copies one)."""
    digest = hashlib.sha256()
    budget = TREE_LIMIT

    def walk(rel: str) -> None:
        nonlocal budget
        for name, mode in entries(root, rel):
            path = f"{rel}/{name}" if rel else name
            if stat.S_ISDIR(mode):
                digest.update(b"d\0" + path.encode() + b"\0")
                walk(path)
            elif stat.S_ISLNK(mode):
                fd = open_dir(root, relative_parts(root, rel) if rel else [])
                try:
                    target = os.readlink(name, dir_fd=fd)
                finally:
                    os.close(fd)
                digest.update(b"l\0" + path.encode() + b"\0" + target.encode() + b"\0")
            elif stat.S_ISREG(mode):
                fd = open_regular(root, relative_parts(root, path))
                with os.fdopen(fd, "rb") as f:
                    digest.update(b"f\0" + path.encode() + b"\0")
                    while chunk := f.read(1 << 20):
                        budget -= len(chunk)
                        if budget < 0:
                            raise ConfigError(f"the task's files exceed {TREE_LIMIT} bytes", source=str(root))
                        digest.update(chunk)
                digest.update(b"\0")
            else:  # a FIFO or a device: copying the task would block on it or read without end
                raise ConfigError("is not a regular file, folder or symlink", source=str(root / path))

    walk("")
    return "sha256:" + digest.hexdigest()
