"""Copying a directory tree into a workspace, and removing a workspace, without following links.

Both walk the tree once through directory descriptors (``openat``-style
calls with ``O_NOFOLLOW``), iteratively, so a link planted in a tree never
takes the walk outside it, a path never grows past what the kernel accepts,
and no Python recursion limit is reached however deep the tree is.

Copying keeps what ``cp -a`` keeps but ownership: file contents, modes,
modification times and symlinks (made again as links, never followed). A
symlink whose target would leave the copied tree (an absolute target, or
``..`` climbing past the top; unless the caller allows such links) and anything but a regular file, a directory or
a symlink (a FIFO, a device, a socket) are refused with :class:`TreeError`.
File data is moved by the kernel: a reflink (``FICLONE``) where the
filesystem shares blocks (Btrfs, XFS, bcachefs, ...), else
``copy_file_range`` (in-kernel, itself a reflink on some filesystems), else
``sendfile``; the first kind that the filesystem refuses is not tried again
for the rest of the copy.

These calls block: the engine runs them in a worker thread, so other
trials' agents, graders and timeouts go on meanwhile.
"""

from __future__ import annotations

import errno
import fcntl
import itertools
import os
import stat
from pathlib import Path

__all__ = ["MAX_DEPTH", "MAX_ENTRIES", "TreeError", "copy_tree", "remove_tree", "tree_bytes"]

#: The deepest directory a copy descends into (one descriptor open per level).
MAX_DEPTH = 256
#: The most entries one copy or one removal handles before it gives up with a TreeError.
MAX_ENTRIES = 10_000_000
#: ``FICLONE`` from ``linux/fs.h`` (``fcntl.FICLONE`` from Python 3.12 only).
_FICLONE = getattr(fcntl, "FICLONE", 0x40049409)
#: Errors meaning "this filesystem cannot do that kind of copy": fall back to the next kind.
_UNSUPPORTED = frozenset({errno.EOPNOTSUPP, errno.EXDEV, errno.EINVAL, errno.ENOSYS, errno.ENOTTY, errno.EBADF, errno.EPERM})
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
#: Directories a removal keeps open at once; deeper ones are moved up to the top first.
_REMOVE_DEPTH = 64


class TreeError(OSError):
    """A tree that cannot be copied or removed as asked (an escaping link, a FIFO, too many entries)."""


class _Copier:
    """One copy's state: which kinds of kernel copy the filesystem refused, and how many entries so far."""

    def __init__(self) -> None:
        self.clone = True
        self.copy_range = True
        self.entries = 0

    def data(self, src: int, dst: int, size: int) -> None:
        if self.clone:
            try:
                fcntl.ioctl(dst, _FICLONE, src)
                return
            except OSError as exc:
                if exc.errno not in _UNSUPPORTED:
                    raise
                self.clone = False
        done = 0
        if self.copy_range:
            try:
                while done < size or size == 0:
                    n = os.copy_file_range(src, dst, 1 << 30)
                    if n == 0:
                        return
                    done += n
                return
            except OSError as exc:
                if exc.errno not in _UNSUPPORTED or done:
                    raise
                self.copy_range = False
        while True:
            n = os.sendfile(dst, src, None, 1 << 30)
            if n == 0:
                return

    def file(self, src_dir: int, dst_dir: int, name: str, st: os.stat_result) -> None:
        src = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=src_dir)
        try:
            if not stat.S_ISREG(os.fstat(src).st_mode):
                raise TreeError(f"{name!r} changed while being copied")
            dst = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600, dir_fd=dst_dir)
            try:
                self.data(src, dst, st.st_size)
                os.fchmod(dst, stat.S_IMODE(st.st_mode))
                os.utime(dst, ns=(st.st_atime_ns, st.st_mtime_ns))
            finally:
                os.close(dst)
        finally:
            os.close(src)


def _link_stays_inside(target: str, depth: int) -> bool:
    """Whether a symlink ``depth`` directories below the top, pointing at ``target``, stays in the tree."""
    if not target or target.startswith("/"):
        return False
    level = depth
    for part in target.split("/"):
        if part == "..":
            level -= 1
            if level < 0:
                return False
        elif part not in ("", "."):
            level += 1
    return True


def copy_tree(source: Path, destination: Path, *, links_outside: bool = False, max_entries: int = MAX_ENTRIES) -> None:
    """Copy the directory ``source``'s contents into the existing directory ``destination``.

    ``links_outside``: copy (as links, still never followed) symlinks whose
    target leaves the tree, as ``cp -a`` does, instead of refusing them.
    An entry already in ``destination`` with the name of one being copied
    stops the copy (``FileExistsError``), so nothing there is overwritten.
    """
    copier = _Copier()
    top_src = os.open(source, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        top_dst = os.open(destination, _DIR_FLAGS)
    except BaseException:
        os.close(top_src)
        raise
    # Each level: (source dir fd, destination dir fd, its path for messages, names left to copy, mode, times).
    stack: list[tuple[int, int, str, list[os.DirEntry[str]], os.stat_result | None]] = []
    try:
        stack.append((top_src, top_dst, "", list(os.scandir(top_src)), None))
        while stack:
            src_dir, dst_dir, where, entries, own = stack[-1]
            if not entries:
                stack.pop()
                if own is not None:  # a directory's mode and time are set once its contents are in
                    os.chmod(dst_dir, stat.S_IMODE(own.st_mode))
                    os.utime(dst_dir, ns=(own.st_atime_ns, own.st_mtime_ns))
                os.close(dst_dir)
                os.close(src_dir)
                continue
            entry = entries.pop()
            copier.entries += 1
            if copier.entries > max_entries:
                raise TreeError(f"{source} holds more than {max_entries} entries")
            relative = where + entry.name
            st = entry.stat(follow_symlinks=False)
            if stat.S_ISREG(st.st_mode):
                copier.file(src_dir, dst_dir, entry.name, st)
            elif stat.S_ISLNK(st.st_mode):
                target = os.readlink(entry.name, dir_fd=src_dir)
                if not links_outside and not _link_stays_inside(target, len(stack) - 1):
                    raise TreeError(f"{source}: symlink {relative!r} -> {target!r} leads outside it; refusing to copy it")
                os.symlink(target, entry.name, dir_fd=dst_dir)
            elif stat.S_ISDIR(st.st_mode):
                if len(stack) >= MAX_DEPTH:
                    raise TreeError(f"{source}: {relative!r} is more than {MAX_DEPTH} directories deep")
                os.mkdir(entry.name, 0o700, dir_fd=dst_dir)
                child_src = os.open(entry.name, _DIR_FLAGS, dir_fd=src_dir)
                try:
                    child_dst = os.open(entry.name, _DIR_FLAGS, dir_fd=dst_dir)
                except BaseException:
                    os.close(child_src)
                    raise
                stack.append((child_src, child_dst, relative + "/", list(os.scandir(child_src)), st))
            else:
                raise TreeError(f"{source}: {relative!r} is not a regular file, directory or symlink; refusing to copy it")
    finally:
        for src_dir, dst_dir, *_ in stack:
            os.close(dst_dir)
            os.close(src_dir)


_spares = itertools.count()


def remove_tree(path: Path, *, max_entries: int = MAX_ENTRIES) -> None:
    """Remove the directory ``path`` and everything in it, however deep, following no link.

    At most a fixed number of directories are open at once: a directory deeper
    than that is first moved (``renameat``, same filesystem) to the top of the
    tree under a fresh name and removed from there, so depth costs neither
    descriptors nor recursion. A missing ``path`` is not an error.
    """
    parent = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        try:
            top = os.open(path.name, _DIR_FLAGS, dir_fd=parent)
        except FileNotFoundError:
            return
        except NotADirectoryError:
            os.unlink(path.name, dir_fd=parent)
            return
        try:
            _empty(top, max_entries)
        finally:
            os.close(top)
        os.rmdir(path.name, dir_fd=parent)
    finally:
        os.close(parent)


def _empty(top: int, max_entries: int) -> None:
    """Remove everything inside the open directory ``top``."""
    count = [0]

    def scan(fd: int) -> list[str]:
        """Unlink every non-directory in ``fd``; the names of its directories, left to empty."""
        folders: list[str] = []
        with os.scandir(fd) as entries:
            for entry in entries:
                count[0] += 1
                if count[0] > max_entries:
                    raise TreeError(f"more than {max_entries} entries to remove")
                if entry.is_dir(follow_symlinks=False):
                    folders.append(entry.name)
                else:
                    os.unlink(entry.name, dir_fd=fd)
        return folders

    # Each level: (open directory, its directories left to empty, its name in the level below).
    stack: list[tuple[int, list[str], str]] = [(top, scan(top), "")]
    try:
        while stack:
            current, folders, name = stack[-1]
            if not folders:
                stack.pop()
                if stack:
                    os.close(current)
                    os.rmdir(name, dir_fd=stack[-1][0])
                continue
            child = folders.pop()
            if len(stack) >= _REMOVE_DEPTH:
                spare = f".waza-deep-{os.getpid()}-{next(_spares)}"
                os.rename(child, spare, src_dir_fd=current, dst_dir_fd=top)
                stack[0][1].append(spare)  # emptied from the top when the walk is back there
                continue
            fd = os.open(child, _DIR_FLAGS, dir_fd=current)
            try:
                stack.append((fd, scan(fd), child))
            except BaseException:
                os.close(fd)
                raise
    finally:
        for fd, _, _ in stack[1:]:
            os.close(fd)


def tree_bytes(path: Path, *, max_entries: int = MAX_ENTRIES) -> int:
    """The disk space (allocated blocks, as ``du``) the files under the directory ``path`` use; links not
    followed. One descriptor is open per level: a tree more than ``MAX_DEPTH`` folders deep is a TreeError."""
    total = 0
    count = 0

    def scan(fd: int) -> list[str]:
        nonlocal total, count
        folders: list[str] = []
        with os.scandir(fd) as entries:
            for entry in entries:
                count += 1
                if count > max_entries:
                    raise TreeError(f"{path} holds more than {max_entries} entries")
                st = entry.stat(follow_symlinks=False)
                total += st.st_blocks * 512
                if stat.S_ISDIR(st.st_mode):
                    folders.append(entry.name)
        return folders

    top = os.open(path, _DIR_FLAGS)
    stack: list[tuple[int, list[str]]] = []
    try:
        stack.append((top, []))
        stack[0] = (top, scan(top))
        while stack:
            fd, folders = stack[-1]
            if not folders:
                os.close(stack.pop()[0])
                continue
            if len(stack) >= MAX_DEPTH:
                raise TreeError(f"{path} is more than {MAX_DEPTH} folders deep")
            child = os.open(folders.pop(), _DIR_FLAGS, dir_fd=fd)
            try:
                stack.append((child, scan(child)))
            except BaseException:
                os.close(child)
                raise
    finally:
        for fd, _ in stack:
            os.close(fd)
    return total
