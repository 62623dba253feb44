"""Parsing a grader named by a string (``graders=["builtin:regex"]``, and the CLI's ``--grader``) into a spec.

A string takes, optionally prefixed by ``NAME=``:
  ``builtin:NAME``           a built-in grader (in-process; ``--isolate`` runs it as a process)
  ``worker:CMD``             an executable in persistent worker mode (JSONL in, JSONL out)
  ``FILE.py:FUNC`` / ``pkg.module:FUNC``   a Python callable, imported and called in-process
  ``FILE.ts`` / ``.js`` / ``.mjs`` / ``.cjs`` / ``.mts``   a module exporting ``grade`` (acp-harness's form),
                             run per result under Bun, Node or tsx (see :mod:`.module_graders`),
                             unless it is an executable script with a ``#!`` line
  ``PATH [ARGS...]``         any executable: one process per result (shell-split when it has spaces)
Errors name the API's ``graders=``; the command line says ``--grader`` (``runner/cli/api_terms.py``).
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

import msgspec

from waza.protocol.errors import ConfigError
from waza.protocol.io.agent_command import absolute_file_args
from waza.runner.grading.module_graders import is_module, module_argv

Kind = Literal["builtin", "python", "exec", "worker"]

_NAME = re.compile(r"^[A-Za-z_][\w.-]*$")
_CALLABLE = re.compile(r"^(?P<target>.+?):(?P<func>[A-Za-z_]\w*)$")


class GraderSpec(msgspec.Struct):
    """One grader as the user named it, resolved enough to check it exists before running."""

    name: str
    kind: Kind
    target: str
    argv: list[str] = msgspec.field(default_factory=list)
    func: str | None = None
    config: dict[str, Any] = msgspec.field(default_factory=dict)
    weight: float = 1.0
    timeout: float | None = None
    #: A python grader given as a callable (the API), called instead of importing ``target:func``.
    fn: Callable[[Any], Any] | None = None


def parse_grader(text: str) -> GraderSpec:
    """Parse one ``--grader`` value; raises ConfigError when it names nothing runnable."""
    name: str | None = None
    head, sep, rest = text.partition("=")
    if sep and _NAME.match(head) and not os.path.exists(text):
        name, text = head, rest
    if not text:
        raise ConfigError("graders= needs a value")
    if text.startswith("builtin:"):
        builtin = text[len("builtin:") :]
        from waza.graders import canonical, load

        load(builtin)
        return GraderSpec(name=name or builtin, kind="builtin", target=canonical(builtin))
    if text.startswith("worker:"):
        argv = _executable_argv(text[len("worker:") :])
        return GraderSpec(name=name or Path(argv[0]).name, kind="worker", target=argv[0], argv=argv)
    if _CALLABLE.match(text) and not os.path.exists(text):
        target, func = check_python_target(text)
        return GraderSpec(name=name or func, kind="python", target=target, func=func)
    if is_module(Path(text)):
        argv = module_argv(Path(text))
        return GraderSpec(name=name or Path(text).name, kind="exec", target=str(Path(text).resolve()), argv=argv)
    argv = _executable_argv(text)
    return GraderSpec(name=name or Path(argv[0]).name, kind="exec", target=argv[0], argv=argv)


def check_python_target(text: str) -> tuple[str, str]:
    """(target, function) of ``FILE.py:FUNC`` or ``package.module:FUNC``; ConfigError when it is neither."""
    match = _CALLABLE.match(text)
    if not match:
        raise ConfigError(f"{text!r} is neither FILE.py:FUNC nor package.module:FUNC", field="graders=")
    target, func = match["target"], match["func"]
    if target.endswith(".py"):
        if not Path(target).is_file():
            raise ConfigError(f"grader file {target!r} does not exist", field="graders=")
    elif not re.match(r"^[A-Za-z_][\w.]*$", target):
        raise ConfigError(f"{text!r} is neither FILE.py:FUNC nor package.module:FUNC", field="graders=")
    return target, func


def _executable_argv(text: str) -> list[str]:
    if any(c.isspace() for c in text):
        import shlex  # a command line with arguments: most graders are one path

        return resolve_argv(shlex.split(text))
    return resolve_argv([text])


def resolve_argv(argv: list[str]) -> list[str]:
    """``argv`` with its program resolved to an absolute path (ConfigError when it cannot run)."""
    argv = list(argv)
    if not argv or not argv[0]:
        raise ConfigError("graders= needs a value")
    exe = argv[0]
    path = Path(exe)
    if os.sep in exe or path.exists():
        if path.is_dir():
            raise ConfigError(f"grader {exe!r} is a directory, not an executable", field="graders=")
        if not path.exists():
            raise ConfigError(f"grader {exe!r} does not exist", field="graders=")
        if not os.access(path, os.X_OK):
            raise ConfigError(f"grader {exe!r} is not executable (chmod +x it)", field="graders=")
        # Absolute (graders run in the workspace), but not through symlinks: a venv's python is
        # a symlink whose own path is what makes it the venv's.
        argv[0] = os.path.abspath(exe)
    else:
        import shutil

        found = shutil.which(exe)
        if found is None:
            raise ConfigError(f"grader {exe!r} not found on PATH", field="graders=")
        argv[0] = found
    # `python3 g.py`: the file argument too, or the grader would look for it in the workspace.
    argv[1:] = absolute_file_args(argv[1:], Path.cwd())
    return argv
