"""External commands named in grader configs (script, program, git's test_command).

A command is a list (argv) or a string (split like a shell would, without a
shell). Its program is looked up as a path relative to ``base_dir`` (or the
current directory) when it has a slash or exists there, else on PATH; a
Python file runs with the interpreter running waza. Not found, or not
executable, is a config error before anything runs. Commands run with the
secret-free environment graders get, in the result's workspace when it has one.
A command that runs what the agent wrote (git's ``test_command``) runs, while
:data:`AGENTS_CODE_CONFINEMENT` holds a confinement (a capture with ``--sandbox``: the runner sets it
to a sandbox with the agent's view), inside it, in that workspace. Graders import no sandbox themselves:
what confines is the runner's to choose.
"""

from __future__ import annotations

import os
import shlex
import shutil
import sys
from collections.abc import Callable
from contextvars import ContextVar
from pathlib import Path
from typing import Any

from waza.protocol.errors import ConfigError
from waza.protocol.io.process import ProcessOutcome, run_once
from waza.protocol.io.secrets import scrubbed_env
from waza.protocol.records import GraderRequest

from ._paths import config_root

#: ``(argv, workspace) -> argv`` run confined, set by the runner around grading a sandboxed agent's
#: result: a grader command that runs the agent's work (git's ``test_command``) goes through it.
AGENTS_CODE_CONFINEMENT: ContextVar[Callable[[list[str], Path], list[str]] | None] = ContextVar(
    "waza_agents_code_confinement", default=None
)


def command_argv(value: str | list[str], config: dict[str, Any], where: str) -> list[str]:
    argv = shlex.split(value) if isinstance(value, str) else list(value)
    if not argv:
        raise ConfigError(f"{where}: the command is empty")
    program = argv[0]
    local = config_root(config, "base_dir") / program
    if os.sep in program or local.exists():
        path = local.resolve()
        if not path.is_file():
            raise ConfigError(f"{where}: {program!r} not found (looked in {local.parent})")
        if path.suffix == ".py":
            return [sys.executable, str(path), *argv[1:]]
        if not os.access(path, os.X_OK):
            raise ConfigError(f"{where}: {program!r} is not executable (chmod +x it)")
        return [str(path), *argv[1:]]
    found = shutil.which(program)
    if found is None:
        raise ConfigError(f"{where}: {program!r} not found on PATH")
    return [found, *argv[1:]]


async def run_command(
    argv: list[str],
    request: GraderRequest,
    stdin: bytes,
    timeout: float,
    extra_env: dict[str, str] | None = None,
    *,
    agents_code: bool = False,
) -> ProcessOutcome:
    cwd = request.cwd if request.cwd and Path(request.cwd).is_dir() else None
    confine = AGENTS_CODE_CONFINEMENT.get() if agents_code else None
    if confine is not None and cwd is not None:
        argv = confine(argv, Path(cwd))
    return await run_once(argv, stdin=stdin, cwd=cwd, env={**scrubbed_env(), **(extra_env or {})}, timeout=timeout)


def last_line(text: str) -> str:
    lines = text.strip().splitlines()
    return lines[-1][:200] if lines else ""
