"""Filling a trial's fresh workspace with the files its task asks for.

A task names files relative to its fixture root (``--context-dir``, the task's
``context_dir``, or ``fixtures/`` beside eval.yaml); each is copied to the same
relative place in the workspace, or written there from inline ``content``.
Paths are checked twice: when the suite loads (relative, no ``..`` climbing
out, present, and every entry of a fixture directory resolving inside the
root), and again when copying: a named file with symlinks resolved, a
directory in one descriptor-based walk (``trees.copy_tree``: links made again
as links and refused if they lead outside the directory, nothing but regular
files, directories and links), so a fixture tree cannot smuggle in a file
from outside its root. A task graded by
the ``git`` grader also gets its starting state committed, so the grader sees
exactly what the agent changed.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

from waza.graders._paths import PathEscape, check_relative, inside
from waza.protocol.errors import ConfigError
from waza.runner.engine.trees import copy_tree
from waza.runner.suites.models import FixtureFile, Task


def check(root: Path, item: FixtureFile, where: str) -> None:
    """ConfigError (message prefixed by ``where``) unless ``item`` can be copied from ``root``."""
    check_relative(item.path, where)
    if item.content is not None:
        return
    try:
        source = inside(root, item.path)
    except PathEscape as exc:
        raise ConfigError(f"{where}: {exc}") from None
    if not source.exists():
        raise ConfigError(f"{where}: fixture {item.path!r} not found in {root}")
    if source.is_dir():
        for top, dirs, names in os.walk(source):
            for name in [*dirs, *names]:
                relative = Path(top, name).relative_to(root.resolve()).as_posix()
                try:
                    inside(root, relative)
                except PathEscape as exc:
                    raise ConfigError(f"{where}: fixture directory {item.path!r} holds {relative!r}: {exc}") from None


def preparer(task: Task) -> Callable[[Path], None]:
    """The WorkItem ``prepare`` hook for one trial of ``task``."""
    git = any(spec.grader == "git" for spec in task.graders)

    def prepare(workspace: Path) -> None:
        for item in task.files:
            copy_one(task.fixture_root, item, workspace)
        if git:
            commit_baseline(workspace)

    return prepare


def commit_baseline(workspace: Path) -> None:
    """Make the workspace a git repository whose one commit is the fixtures, for the git grader.

    The git grader measures created / modified / deleted files against HEAD;
    committing the starting state makes that "what the agent changed".
    """
    quiet = {"cwd": workspace, "check": True, "capture_output": True}
    identity = ["-c", "user.name=waza", "-c", "user.email=waza@localhost", "-c", "commit.gpgsign=false"]
    subprocess.run(["git", "init", "-q"], **quiet)  # type: ignore[call-overload]
    subprocess.run(["git", "add", "-A"], **quiet)  # type: ignore[call-overload]
    subprocess.run(["git", *identity, "commit", "-q", "--allow-empty", "-m", "waza: fixtures"], **quiet)  # type: ignore[call-overload]


def copy_one(root: Path, item: FixtureFile, workspace: Path) -> None:
    """Copy (or write) one file; PathEscape if a source or destination resolves outside its root."""
    target = inside(workspace, item.path)
    target.parent.mkdir(parents=True, exist_ok=True)
    if item.content is not None:
        target.write_text(item.content, encoding="utf-8")
        return
    source = inside(root, item.path)
    if source.is_dir():
        target.mkdir(exist_ok=True)
        copy_tree(source, target)
        return
    shutil.copyfile(source, target)
