"""Path safety for graders that look at files (file, diff, git, json_schema, script).

Config paths are relative and stay inside their root: an absolute path or a
``..`` that climbs out is a config error, found before anything runs. At grade
time a file's content is read with no symlink followed at all (an agent could
plant ``README.md -> /etc/passwd`` to pass a check, or swap one in while the
grader looks): a symlink on the path is an error, never read. Existence checks
resolve symlinks and are an error when the target lands outside the root.
"""

from __future__ import annotations

import errno
import os
from pathlib import Path, PurePosixPath
from typing import Any

from waza.protocol.errors import ConfigError
from waza.protocol.io.confined import Refused, open_regular, relative_parts
from waza.protocol.records import GraderRequest


class PathEscape(ValueError):
    """A path resolves outside the directory it must stay in."""


def check_relative(text: str, where: str) -> None:
    """ConfigError unless ``text`` is a relative path that does not climb out with ``..``."""
    if not text:
        raise ConfigError(f"{where}: path is empty")
    if text.startswith(("/", "\\", "~")) or PurePosixPath(text).is_absolute() or (len(text) > 1 and text[1] == ":"):
        raise ConfigError(f"{where}: {text!r} must be relative to the workspace, not absolute")
    depth = 0
    for part in PurePosixPath(text.replace("\\", "/")).parts:
        depth += -1 if part == ".." else (0 if part == "." else 1)
        if depth < 0:
            raise ConfigError(f"{where}: {text!r} climbs out of its directory with '..'")


def inside(root: Path, relative: str) -> Path:
    """``root/relative`` with symlinks resolved; PathEscape when that leaves ``root``."""
    base = root.resolve()
    target = (base / relative).resolve()
    if target != base and base not in target.parents:
        raise PathEscape(f"{relative!r} resolves to {target}, outside {base} (symlink or '..' escape)")
    return target


#: Most bytes a grader reads from one workspace file; a larger file is a grader error, not a verdict.
READ_LIMIT = 64 * 1024 * 1024


def read_inside(root: Path, relative: str) -> bytes | None:
    """The bytes of regular file ``root/relative`` (None when it is missing or a directory).

    Opened relative to ``root`` with no symlink followed at any step
    (:mod:`waza.protocol.io.confined`), so an agent still running cannot swap the
    file for a symlink between a check and the read. A symlink on the path, a
    FIFO or device, or a file over :data:`READ_LIMIT` is PathEscape / ValueError.
    """
    try:
        fd = open_regular(root, relative_parts(root, relative))
    except FileNotFoundError:
        return None
    except Refused as exc:
        if exc.errno == errno.EISDIR:
            return None
        raise PathEscape(
            f"{relative!r} is a symlink, leads outside {root.resolve()} or is not a regular file: {exc.strerror}"
        ) from None
    except NotADirectoryError:
        return None
    with os.fdopen(fd, "rb") as f:
        data = f.read(READ_LIMIT + 1)
    if len(data) > READ_LIMIT:
        raise ValueError(f"{relative!r} is over the {READ_LIMIT // (1024 * 1024)} MiB a grader reads")
    return data


def workspace(request: GraderRequest, grader: str) -> Path:
    """The request's workspace directory; a grader that needs one cannot judge without it."""
    if not request.cwd:
        raise ValueError(f"the {grader} grader needs the result's workspace (cwd), and the request has none")
    root = Path(request.cwd)
    if not root.is_dir():
        raise ValueError(
            f"workspace {request.cwd!r} does not exist (was it removed? Workspace.keep keeps workspaces for grading later)"
        )
    return root


def config_root(config: dict[str, Any], key: str) -> Path:
    """The directory config files are relative to: ``config[key]`` when set, else the current directory."""
    value = config.get(key)
    return Path(value) if value else Path.cwd()


def config_file(config: dict[str, Any], root_key: str, name: str, where: str, *, contained: bool) -> Path:
    """A file a config names, relative to ``config[root_key]`` (or the current directory).

    ``contained`` files (diff snapshots) must stay inside that root, like
    workspace paths; others (a script, a schema file) may be absolute or reach
    a shared folder with ``..``, as a suite author writes them.
    """
    root = config_root(config, root_key)
    if contained:
        check_relative(name, where)
        try:
            path = inside(root, name)
        except PathEscape as exc:
            raise ConfigError(f"{where}: {exc}") from None
    else:
        path = (root / name).resolve()
    if not path.is_file():
        raise ConfigError(f"{where}: file {name!r} not found (looked in {root})")
    return path
