"""The agent command line, checked and made independent of the directory the agent runs in.

An agent runs in its prompt's workspace (``--cwd``, ``--workspace-dir``, or a
fresh directory per trial), not where waza was started. A relative
``./agent.sh`` would then name a file that is not there and every record
would say "cannot start agent". So before anything runs, the program is
found (on PATH for a bare name, against the start directory for a path) and
must be an executable regular file, and relative paths among its arguments
that name existing files there (``python my_agent.py``) are made absolute too.
"""

from __future__ import annotations

import os
import shutil
import stat
from pathlib import Path

from waza.protocol.errors import ConfigError

__all__ = ["absolute_file_args", "resolve_agent_command"]


def resolve_agent_command(command: list[str], start: Path | None = None) -> list[str]:
    """``command`` with its program checked and relative file paths made absolute against ``start``.

    Raises ConfigError (one line, exit 2) when the program does not exist or cannot be run.
    """
    if not command:
        return command
    base = (start or Path.cwd()).absolute()
    program = command[0]
    if os.sep not in program:
        if shutil.which(program) is None:
            raise ConfigError(f"agent command {program!r} not found on PATH (for a file here, write ./{program})")
        resolved = program
    else:
        path = Path(program) if os.path.isabs(program) else base / program
        try:
            mode = path.stat().st_mode
        except OSError as exc:
            raise ConfigError(f"agent command {program!r} cannot be run: {exc.strerror or exc}") from None
        if not stat.S_ISREG(mode):
            raise ConfigError(f"agent command {program!r} is not a regular file")
        if not os.access(path, os.X_OK):
            raise ConfigError(
                f"agent command {program!r} is not executable (chmod +x it, or name its interpreter: python {program})"
            )
        resolved = str(path)
    return [resolved, *absolute_file_args(command[1:], base)]


def absolute_file_args(args: list[str], base: Path) -> list[str]:
    """``args`` with each relative path that names an existing file under ``base`` made absolute
    (agents and graders run in a workspace, not where the user named the file)."""
    return [_absolute_if_file(arg, base) for arg in args]


def _absolute_if_file(arg: str, base: Path) -> str:
    """A relative path naming an existing regular file under ``base`` becomes absolute; anything else is kept."""
    if not arg or arg.startswith("-") or os.path.isabs(arg) or "\0" in arg:
        return arg
    candidate = base / arg
    try:
        return str(candidate) if candidate.is_file() else arg
    except OSError:
        return arg
