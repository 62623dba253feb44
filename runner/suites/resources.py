"""A task's workspace resources in the original's 1.x format: ``repos``, ``context.fixture``, prompt and instruction files.

These are checked when the suite loads, so a run never starts with a
repository that has no such ref, a fixture that is not there or a prompt file
that cannot be read; and applied per trial, before the task's ``files`` are
copied and the git grader's baseline is committed (``fixtures.preparer``), so
that baseline holds them. A repository is cloned from the local ``source`` without touching it (``git clone --no-checkout`` then a detached
checkout of ``commit``), where the original adds a ``git worktree`` to the
source: the agent gets the same files at the same commit and the source
repository gains no worktree entry to clean up. A ``context.fixture`` file or
folder is copied to the workspace root (a folder's contents, not the folder); a folder
with no ``repos`` beside it is an ``overlays.Seed``, so a sandboxed run as root overlays it
instead of copying it.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

from waza.graders._paths import check_relative, inside
from waza.protocol.errors import ConfigError
from waza.runner.engine.overlays import Seed
from waza.runner.suites import fixtures
from waza.runner.suites.models import FixtureFile, RepoCheckout

__all__ = ["check_fixture", "check_repo", "prepare", "read_text_file"]

#: Most bytes of a prompt or instruction file: they go into the agent's prompt.
TEXT_LIMIT = 1024 * 1024
#: Seconds a git command may take when a suite loads or a trial's workspace is filled.
GIT_TIMEOUT = 300


def _git(args: list[str], cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["git", "-c", "advice.detachedHead=false", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=GIT_TIMEOUT,
        check=False,
    )


def check_repo(here: Path, raw: dict[str, str]) -> RepoCheckout:
    """A RepoCheckout from a ``repos`` entry (relative to the task file), or ConfigError saying what is wrong."""
    check_relative(raw["dest"], "dest")
    source = (here / raw["source"]).resolve()
    if not source.is_dir():
        raise ConfigError(f"source: {raw['source']!r} is not a directory (looked for {source})")
    ref = raw.get("commit") or "HEAD"
    found = _git(["-C", str(source), "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}"])
    if found.returncode != 0:
        raise ConfigError(f"commit: {source} is not a git repository with a commit {ref!r}")
    return RepoCheckout(source=source, dest=raw["dest"], commit=found.stdout.strip())


def check_fixture(root: Path, relative: str) -> None:
    """ConfigError unless ``relative`` is a file or folder inside ``root`` whose every entry resolves inside
    ``root`` (a sandboxed run may show the folder as it is, links included, rather than copy it)."""
    fixtures.check(root, FixtureFile(relative), "fixture")


def read_text_file(root: Path, relative: str, what: str) -> str:
    """The UTF-8 text of a prompt or instruction file, relative to ``root``, bounded by TEXT_LIMIT.

    The suite's author wrote the path, so it may lead out of ``root`` (a shared
    prompts folder beside the tasks, as the original allows); it is not an agent's.
    """
    path = (root / relative).resolve()
    if not path.is_file():
        raise ConfigError(f"{what}: {relative!r} is not a file (looked for {path})")
    with path.open("rb") as fh:
        data = fh.read(TEXT_LIMIT + 1)
    if len(data) > TEXT_LIMIT:
        raise ConfigError(f"{what}: {relative!r} is larger than {TEXT_LIMIT:,} bytes")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise ConfigError(f"{what}: {relative!r} is not UTF-8 text") from None


def _copy_fixture(root: Path, relative: str, workspace: Path) -> None:
    source = inside(root, relative)
    if source.is_file():
        shutil.copyfile(source, inside(workspace, source.name))
        return
    for top, _, names in os.walk(source):
        for name in names:
            within = Path(top, name).relative_to(source).as_posix()
            origin = inside(source, within)  # a link out of the fixture is refused
            target = inside(workspace, within)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(origin, target)


def _checkout(repo: RepoCheckout, workspace: Path) -> None:
    target = inside(workspace, repo.dest)
    if target.exists():
        raise ConfigError(f"repos: {repo.dest!r} already exists in the workspace")
    target.parent.mkdir(parents=True, exist_ok=True)
    for args, cwd in (
        (["clone", "--quiet", "--no-checkout", str(repo.source), str(target)], None),
        (["checkout", "--quiet", "--detach", repo.commit], target),
    ):
        done = _git(args, cwd)
        if done.returncode != 0:
            raise ConfigError(f"repos: git {args[0]} of {repo.source} failed: {done.stderr.strip()[:500]}")


def prepare(first: Callable[[Path], None], fixture: tuple[Path, str] | None, repos: list[RepoCheckout]) -> Callable[[Path], None]:
    """The context fixture, then each repository, then ``first`` (the task's files and git baseline)."""
    if fixture is None and not repos:
        return first
    if fixture is not None and not repos and inside(*fixture).is_dir():
        # one folder the workspace starts as: a sandboxed run may overlay it (overlays.Seed)
        return Seed(inside(*fixture), then=first, copy=functools.partial(_copy_fixture, *fixture))

    def run(workspace: Path) -> None:
        if fixture is not None:
            _copy_fixture(*fixture, workspace)
        for repo in repos:
            _checkout(repo, workspace)
        first(workspace)

    return run
