"""Opening files inside a directory an untrusted program controls, without ever following a symlink.

An agent owns its workspace: between a check of a path and its open it can
swap a file for a symlink to anything the user can read or write. So the check
*is* the open: every path is opened relative to a file descriptor of the root,
with ``openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS)`` where the kernel has it
(Linux 5.6+), else one component at a time with ``O_NOFOLLOW`` (directories
with ``O_DIRECTORY``). Any symlink on the way, even one pointing inside, is
refused: there is no "safe" symlink an agent could not retarget a moment later.

Files are opened ``O_NONBLOCK`` and must be regular (``fstat``), so a FIFO or a
device never blocks the caller. Writes go to a temporary file in the target's
directory and are renamed over the target, both relative to that directory's
descriptor, so a hard link or a symlink planted at the target is replaced,
never written through. The root itself is trusted (waza chose it).
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import os
import secrets
import stat
from collections.abc import Iterator
from pathlib import Path, PurePosixPath

__all__ = ["Refused", "open_dir", "open_regular", "relative_parts", "replace_file"]

_SYS_OPENAT2 = 437  # the same number on every Linux architecture (added with the unified syscall table)
_RESOLVE_NO_SYMLINKS = 0x04
_RESOLVE_BENEATH = 0x08
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_DIRECTORY = getattr(os, "O_DIRECTORY", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)


class Refused(OSError):
    """The path leaves the root, goes through a symlink, or names something that is not a regular file."""


class _OpenHow(ctypes.Structure):
    _fields_ = [("flags", ctypes.c_uint64), ("mode", ctypes.c_uint64), ("resolve", ctypes.c_uint64)]


def _load_openat2() -> object | None:
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.syscall
    except (OSError, AttributeError):
        return None


_syscall = _load_openat2()
_have_openat2 = _syscall is not None and os.uname().sysname == "Linux"


def relative_parts(root: Path, raw: str) -> list[str]:
    """The components of ``raw`` below ``root`` (absolute paths must start with ``root``); Refused if it leaves.

    ``..`` is collapsed textually: with no symlink ever followed, that is what
    the kernel would do too. An empty result names the root itself.
    """
    path = PurePosixPath(raw)
    if path.is_absolute():
        for base in (PurePosixPath(root), PurePosixPath(root.resolve())):
            if path.is_relative_to(base):
                path = path.relative_to(base)
                break
        else:
            raise Refused(errno.EXDEV, f"{raw!r} is outside the workspace {root}")
    parts: list[str] = []
    for part in path.parts:
        if part == "..":
            if not parts:
                raise Refused(errno.EXDEV, f"{raw!r} is outside the workspace {root}")
            parts.pop()
        elif part not in (".", ""):
            parts.append(part)
    return parts


def _openat2(dir_fd: int, relative: str, flags: int, mode: int) -> int | None:
    """The descriptor, or None when this kernel has no openat2; OSError as the kernel says."""
    global _have_openat2
    how = _OpenHow(flags | _CLOEXEC, mode if flags & os.O_CREAT else 0, _RESOLVE_BENEATH | _RESOLVE_NO_SYMLINKS)
    fd = _syscall(  # type: ignore[operator]
        ctypes.c_long(_SYS_OPENAT2), ctypes.c_int(dir_fd), relative.encode(), ctypes.byref(how), ctypes.c_size_t(24)
    )
    if fd >= 0:
        return int(fd)
    err = ctypes.get_errno()
    if err in (errno.ENOSYS, errno.EPERM):  # no openat2 here (EPERM: a seccomp filter that does not know it)
        _have_openat2 = False
        return None
    if err in (errno.ELOOP, errno.EXDEV):
        raise Refused(err, f"{relative!r} goes through a symlink or leaves the workspace")
    raise OSError(err, os.strerror(err), relative)


def _open_at(dir_fd: int, parts: list[str], flags: int, mode: int = 0o666) -> int:
    """Open ``parts`` below ``dir_fd`` with no symlink followed anywhere."""
    relative = "/".join(parts) or "."
    if _have_openat2:
        fd = _openat2(dir_fd, relative, flags, mode)
        if fd is not None:
            return fd
    current = dir_fd
    try:
        for i, part in enumerate(parts):
            last = i == len(parts) - 1
            step = flags if last else os.O_RDONLY | _DIRECTORY
            try:
                fd = os.open(part, step | _NOFOLLOW | _CLOEXEC, mode, dir_fd=current)
            except OSError as exc:
                if exc.errno in (errno.ELOOP, errno.EMLINK) or (exc.errno == errno.ENOTDIR and _is_link(current, part)):
                    raise Refused(errno.ELOOP, f"{relative!r} goes through a symlink") from None
                raise
            if current != dir_fd:
                os.close(current)
            current = fd
        if current == dir_fd:
            return os.dup(dir_fd)
        return current
    except BaseException:
        if current != dir_fd:
            os.close(current)
        raise


def _is_link(dir_fd: int, name: str) -> bool:
    try:
        return stat.S_ISLNK(os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode)
    except OSError:
        return False


@contextlib.contextmanager
def _root_fd(root: Path) -> Iterator[int]:
    fd = os.open(root, os.O_RDONLY | _DIRECTORY | _CLOEXEC)
    try:
        yield fd
    finally:
        os.close(fd)


def open_dir(root: Path, parts: list[str], *, create: bool = False) -> int:
    """A descriptor of directory ``root/parts`` (made when ``create``), no symlink followed; caller closes it."""
    with _root_fd(root) as base:
        current = os.dup(base)
        try:
            for part in parts:
                if create:
                    with contextlib.suppress(FileExistsError):
                        os.mkdir(part, 0o777, dir_fd=current)
                fd = _open_at(current, [part], os.O_RDONLY | _DIRECTORY)
                os.close(current)
                current = fd
        except BaseException:
            os.close(current)
            raise
        return current


def open_regular(root: Path, parts: list[str]) -> int:
    """A read descriptor of the regular file ``root/parts``; Refused for a symlink, FIFO, device or directory.

    Opened non-blocking so a FIFO with no writer cannot stall this call; the
    flag is cleared again once the file is known to be regular.
    """
    if not parts:
        raise Refused(errno.EISDIR, "the workspace itself is a directory, not a file")
    with _root_fd(root) as base:
        fd = _open_at(base, parts, os.O_RDONLY | os.O_NONBLOCK)
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            kind = "a directory" if stat.S_ISDIR(mode) else "a FIFO" if stat.S_ISFIFO(mode) else "not a regular file"
            code = errno.EISDIR if stat.S_ISDIR(mode) else errno.EINVAL
            raise Refused(code, f"{'/'.join(parts)!r} is {kind}; only regular files are read")
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd


def replace_file(root: Path, parts: list[str], data: bytes) -> None:
    """Create or replace ``root/parts`` with ``data`` (parents made), atomically, no symlink followed.

    An existing regular file keeps its permission bits. A symlink or a
    non-regular file at the target is refused rather than replaced.
    """
    if not parts:
        raise Refused(errno.EISDIR, "the workspace itself is a directory, not a file")
    parent = open_dir(root, parts[:-1], create=True)
    name = parts[-1]
    try:
        mode: int | None = None
        try:
            old = os.stat(name, dir_fd=parent, follow_symlinks=False)
        except FileNotFoundError:
            old = None
        if old is not None:
            if stat.S_ISLNK(old.st_mode):
                raise Refused(errno.ELOOP, f"{'/'.join(parts)!r} is a symlink; it is not written through")
            if not stat.S_ISREG(old.st_mode):
                raise Refused(errno.EINVAL, f"{'/'.join(parts)!r} is not a regular file")
            mode = stat.S_IMODE(old.st_mode)
        temp = f".{name[:200]}.waza-{secrets.token_hex(6)}.tmp"
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | _CLOEXEC, 0o666, dir_fd=parent)
        try:
            try:
                if mode is not None:
                    os.fchmod(fd, mode)
                view = memoryview(data)
                while view:
                    view = view[os.write(fd, view) :]
            finally:
                os.close(fd)
            # A rename replaces whatever entry is at the target now (even a symlink planted since the
            # check above), never the file it points to.
            os.rename(temp, name, src_dir_fd=parent, dst_dir_fd=parent)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(temp, dir_fd=parent)
            raise
    finally:
        os.close(parent)
