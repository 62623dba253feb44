"""Workspaces from a template without copying it: a kernel overlayfs per trial (Linux, as root).

A sandboxed trial whose workspace starts as a copy of ``Workspace.template`` (or of a suite task's
``context.fixture`` folder) gets, where the
kernel allows, an ``overlay`` mount instead: the template is the read-only lower layer, the
trial's writes go to an upper folder of its own beside the workspace, and the workspace folder
is the merged view. Setting it up is one ``mount`` call whatever the template's size, so a
trial over a large repository costs about what an empty one does. Graders read the merged view
as a plain folder; after grading the mount is taken down and the upper folder removed, or, for
a workspace that is kept (``--keep-workspaces``, ``--workspace-dir``), the merged view is copied
into a plain folder at the same place first.

The mount is made in waza's own mount namespace (so graders on the host see it), which needs
``CAP_SYS_ADMIN`` there: run as root. Elsewhere (an ordinary user, a kernel without overlayfs, a
template path the mount options cannot name) the workspace is copied as before, and waza says
so once on stderr. bubblewrap 0.8 (Debian 12) has no ``--overlay-src``, which is why waza makes
the mount itself.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import sys
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path

from waza.runner.engine.trees import copy_tree, remove_tree

__all__ = ["Seed", "mount_overlay", "mounted", "unmount_overlay"]

_MNT_DETACH = 2
#: Characters the overlay mount options cannot carry in a path (they separate options and layers).
_UNSAFE = (",", ":", "\\", "\n")

_lock = threading.Lock()
#: The workspaces mounted by this process, with the folder holding their upper and work layers.
_layers: dict[Path, Path] = {}
_said = False


class Seed:
    """The WorkItem ``prepare`` hook that fills a fresh workspace with a copy of the tree ``source``, then runs
    ``then`` over it (a suite task's extra files and git baseline); a sandboxed run may overlay ``source``
    instead and run only ``then``, whose writes land in the trial's upper layer.

    The copy is ``copy`` when given (a suite fixture keeps its own copying rules), else ``trees.copy_tree``
    (links copied as links, FIFOs and devices refused)."""

    def __init__(
        self,
        source: Path,
        then: Callable[[Path], None] | None = None,
        copy: Callable[[Path], None] | None = None,
    ) -> None:
        self.source = source
        self.then = then
        self.copy = copy

    def __call__(self, workspace: Path) -> None:
        if self.copy is None:
            copy_tree(self.source, workspace, links_outside=True)
        else:
            self.copy(workspace)
        if self.then is not None:
            self.then(workspace)


def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(ctypes.util.find_library("c") or None, use_errno=True)


def _fall_back(why: str) -> None:
    global _said
    with _lock:
        if _said:
            return
        _said = True
    print(f"waza: workspaces are copied from the template, not overlaid: {why}", file=sys.stderr)


def mount_overlay(template: Path, workspace: Path) -> bool:
    """Make the empty folder ``workspace`` an overlay of ``template`` (blocking); False, said once on stderr,
    when this machine cannot (the caller copies instead)."""
    if not sys.platform.startswith("linux"):
        _fall_back("overlayfs is Linux only")
        return False
    if os.geteuid() != 0:
        _fall_back("mounting an overlay needs root")
        return False
    lower = str(template)
    layers = Path(tempfile.mkdtemp(prefix=f".{workspace.name[:60]}.overlay-", dir=workspace.parent))
    paths = (lower, str(layers), str(workspace))
    if any(c in p for p in paths for c in _UNSAFE):
        remove_tree(layers)
        _fall_back(f"a path holds one of {' '.join(_UNSAFE[:3])}, which overlay options cannot name")
        return False
    (layers / "upper").mkdir()
    (layers / "work").mkdir()
    options = f"lowerdir={lower},upperdir={layers / 'upper'},workdir={layers / 'work'}".encode()
    if _libc().mount(b"overlay", str(workspace).encode(), b"overlay", 0, options) != 0:
        err = ctypes.get_errno()
        remove_tree(layers)
        _fall_back(f"mount -t overlay failed: {os.strerror(err)}")
        return False
    with _lock:
        _layers[workspace] = layers
    return True


def mounted(workspace: Path) -> bool:
    with _lock:
        return workspace in _layers


def unmount_overlay(workspace: Path, *, keep: bool) -> None:
    """Take ``workspace``'s overlay down (blocking). With ``keep``, what the merged view shows is copied
    into a plain folder at ``workspace`` first; the upper and work layers are removed either way."""
    with _lock:
        layers = _layers.pop(workspace, None)
    if layers is None:
        return
    try:
        if keep:
            plain = layers / "kept"
            plain.mkdir()
            copy_tree(workspace, plain, links_outside=True)
        if _libc().umount2(str(workspace).encode(), _MNT_DETACH) != 0:
            raise OSError(ctypes.get_errno(), f"cannot unmount the overlay at {workspace}")
        if keep:  # moved in entry by entry: the folder under the mount may hold waza's mark already
            for entry in os.listdir(plain):
                os.rename(plain / entry, workspace / entry)
    finally:
        remove_tree(layers)
