"""TypeScript and JavaScript grader modules (``export const grade = ...``), acp-harness's main grader form.

Such a file is not an executable: it is loaded by a small host script
(``hosts/grade_module.mjs``) that reads the request on stdin, calls ``grade``
and prints its result, so it runs through the same per-result process path,
limits and error handling as any other grader. The runtime is the first that
can load the file, found on PATH: Bun (which acp-harness itself runs on),
Node (``.js``/``.mjs``/``.cjs`` always; TypeScript from Node 22.6 on, with
type stripping), or ``tsx``. With none, the error names what to install.
"""

from __future__ import annotations

import functools
import os
import re
import shutil
import subprocess
from pathlib import Path

from waza.protocol.errors import ConfigError

__all__ = ["MODULE_SUFFIXES", "is_module", "module_argv"]

MODULE_SUFFIXES = (".ts", ".mts", ".js", ".mjs", ".cjs")
_TYPESCRIPT = (".ts", ".mts")


def _host() -> str:
    return str(Path(__file__).with_name("hosts") / "grade_module.mjs")


@functools.cache
def _node_strips_types(node: str) -> bool:
    """Node 22.6 and later can run TypeScript by stripping types (behind a flag before 23.6)."""
    try:
        done = subprocess.run([node, "--version"], capture_output=True, timeout=10, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return False
    found = re.match(rb"v(\d+)\.(\d+)", done.stdout)
    return found is not None and (int(found[1]), int(found[2])) >= (22, 6)


def is_module(path: Path) -> bool:
    """A grader module: a file with a module suffix, except an executable script with a ``#!`` line
    (a stdin/stdout grader written in JavaScript, run as such)."""
    if not path.name.endswith(MODULE_SUFFIXES) or not path.is_file():
        return False
    if not os.access(path, os.X_OK):
        return True
    try:
        with path.open("rb") as f:
            return f.read(2) != b"#!"
    except OSError:
        return True


def module_argv(path: Path) -> list[str]:
    """The command that runs the grader module ``path``; ConfigError naming what to install when nothing can."""
    module = str(path.resolve())
    typescript = path.suffix in _TYPESCRIPT
    if bun := shutil.which("bun"):
        return [bun, _host(), module]
    node = shutil.which("node")
    if node and not typescript:
        return [node, _host(), module]
    if node and _node_strips_types(node):
        return [node, "--experimental-strip-types", "--no-warnings", _host(), module]
    if tsx := shutil.which("tsx"):
        return [tsx, _host(), module]
    need = "Bun (https://bun.sh), Node 22.6 or later, or tsx (npm install -g tsx)" if typescript else "Bun or Node"
    raise ConfigError(
        f"grader {str(path)!r} is a {'TypeScript' if typescript else 'JavaScript'} module: install {need} to run it",
        field="graders=",
    )
