"""The grader specs, and parsing a grader named by a string (``graders=["builtin:regex"]``, the CLI's
``--grader``) into one.

One description of a grader, from the parse to the worker: ``Builtin`` (by name, with its config),
``Executable`` (one process per result), ``Worker`` (a persistent worker process), ``PythonGrader``
(``file.py:fn``, ``package.module:fn`` or a callable) and ``Judge`` (an LLM grader pointed at a judge),
frozen msgspec Structs (re-exported by :mod:`waza.runner.engine.specs`, the API's home). They live here,
under the engine, because the grader runners take them: :func:`waza.runner.grading.build.resolve` checks a
spec and fills what the user left out (the name, the program's absolute path, the judge's keys), and that
resolved spec is what a runner holds and what a Ray job carries.

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

import math
import os
import re
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal, TypeAlias

import msgspec
from msgspec.structs import force_setattr

from waza.adapters.specs import command_argv
from waza.protocol.errors import ConfigError
from waza.protocol.io.agent_command import absolute_file_args
from waza.runner.grading.module_graders import is_module, module_argv

_NAME = re.compile(r"^[A-Za-z_][\w.-]*$")
_CALLABLE = re.compile(r"^(?P<target>.+?):(?P<func>[A-Za-z_]\w*)$")


def positive_number(value: object, name: str, unit: str) -> None:
    """Refuse a limit that is not a finite number above zero (a bool is not a number here)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
        raise ConfigError(f"{name} must be a positive number of {unit}, got {value!r}")


class GraderBase(msgspec.Struct, frozen=True, kw_only=True):
    """Base of the grader specs (a list of several kinds is a ``list[GraderBase]``): ``name`` labels its grades (default: from the grader), ``weight`` its share of the score."""

    name: str | None = None
    config: Mapping[str, Any] = msgspec.field(default_factory=dict)
    weight: float = 1.0
    #: Seconds per result; ``None``: the run's ``Timeouts.grader``.
    timeout: float | None = None

    def __post_init__(self) -> None:
        kind = type(self).__name__
        if self.name is not None and not self.plain_name(self.name):
            raise ConfigError(f"{kind}.name {self.name!r} must be letters, digits, _ . -")
        if isinstance(self.weight, bool) or not isinstance(self.weight, (int, float)) or not math.isfinite(self.weight):
            raise ConfigError(f"{kind}.weight must be a number, got {self.weight!r}")
        if self.weight < 0:
            raise ConfigError(f"{kind}.weight must not be negative, got {self.weight}")
        if self.timeout is not None:
            positive_number(self.timeout, f"{kind}.timeout", "seconds, or None for the run's Timeouts.grader")

    @staticmethod
    def plain_name(name: str) -> bool:
        """Whether ``name`` may name a grader: a plain name, which ``--grader-config NAME=VALUE`` can say."""
        return bool(_NAME.match(name))


class Builtin(GraderBase, frozen=True, kw_only=True):
    """A built-in grader by name (``waza graders list``); ``isolate`` runs it as a worker process."""

    grader: str
    isolate: bool = False


class Executable(GraderBase, frozen=True, kw_only=True):
    """An executable run once per result: a GraderRequest on stdin, a result on stdout."""

    #: The program and its arguments: a sequence, or a string split as a POSIX shell would.
    argv: str | Sequence[str]

    def __post_init__(self) -> None:
        super().__post_init__()
        force_setattr(self, "argv", command_argv(self.argv, "Executable.argv"))


class Worker(GraderBase, frozen=True, kw_only=True):
    """An executable in persistent worker mode: one process per concurrency slot, JSONL in and out."""

    #: The program and its arguments: a sequence, or a string split as a POSIX shell would.
    argv: str | Sequence[str]

    def __post_init__(self) -> None:
        super().__post_init__()
        force_setattr(self, "argv", command_argv(self.argv, "Worker.argv"))


class PythonGrader(GraderBase, frozen=True, kw_only=True):
    """A Python function called in-process with the request as a dict; returns a result dict.

    ``fn`` is a reference (``file.py:fn`` or ``package.module:fn``), which any
    machine with the same files can import, or the callable itself (pickled by
    reference, so a module-level function of an importable module travels too).
    """

    fn: str | Callable[[dict[str, Any]], Any]


class Judge(GraderBase, frozen=True, kw_only=True):
    """An LLM grader (``llm``, ``llm_comparison`` or ``prompt``) and where its judge is.

    ``base_url`` (+ ``model``, ``api_key_env``): an OpenAI-compatible endpoint;
    ``command``: a judge program (prompt on stdin, reply on stdout); ``local``:
    a local model server started for the run (``model_path``: its GGUF file).
    """

    grader: Literal["llm", "llm_comparison", "prompt"] = "llm"
    base_url: str | None = None
    model: str | None = None
    api_key_env: str | None = None
    command: str | None = None
    local: bool = False
    model_path: Path | None = None
    isolate: bool = False
    #: False: the judge is asked every time and nothing is kept in the model cache (--no-cache).
    cache: bool = True

    def judge_config(self) -> dict[str, Any]:
        """The grader-config keys saying where this judge is (``local``: ``judge: local``), only those set;
        ConfigError when they contradict each other."""
        if self.local and (self.base_url or self.command):
            raise ConfigError("Judge.local starts its own server; drop Judge.base_url / Judge.command")
        if self.base_url and self.command:
            raise ConfigError("give Judge.base_url or Judge.command, not both")
        if self.model_path and not self.local:
            raise ConfigError("Judge.model_path is for Judge.local", field="Judge.model_path")
        values = {
            "judge": "local" if self.local else None,
            "base_url": self.base_url,
            "model": self.model,
            "api_key_env": self.api_key_env,
            "command": self.command,
            "model_path": str(self.model_path) if self.model_path else None,
            "cache": None if self.cache else False,
        }
        return {k: v for k, v in values.items() if v is not None}


GraderSpecT: TypeAlias = Builtin | Executable | Worker | PythonGrader | Judge
#: One grader as ``graders=`` takes it: a spec; a string, read as ``waza capture --grader SPEC`` reads it
#: (``builtin:NAME``, ``FILE.py:FUNC``, ``worker:PROGRAM``, a program); or a function (a ``PythonGrader``).
GraderLike: TypeAlias = GraderBase | str | Callable[[dict[str, Any]], Any]
#: What ``graders=`` takes: one grader, or a sequence of them.
Graders: TypeAlias = GraderLike | Sequence[GraderLike]


def grader_specs(graders: Graders) -> list[GraderSpecT]:
    """The grader specs ``graders=`` names, in order; ConfigError for anything that names no grader."""
    items: Sequence[object] = [graders] if isinstance(graders, (GraderBase, str)) or callable(graders) else graders
    if not isinstance(items, Sequence):
        raise ConfigError(f"graders takes a grader spec, a string, a function or a list of them, got {graders!r}")
    specs: list[GraderSpecT] = []
    for i, item in enumerate(items):
        if isinstance(item, (Builtin, Executable, Worker, PythonGrader, Judge)):
            specs.append(item)
        elif isinstance(item, GraderBase):
            raise ConfigError(f"graders[{i}] is a GraderBase, not one of its kinds (Builtin, Executable, ...): {item!r}")
        elif isinstance(item, str):
            specs.append(parse_grader(item))
        elif callable(item):
            specs.append(PythonGrader(fn=item))
        else:
            raise ConfigError(f"graders[{i}] is not a grader spec, a string or a function: {item!r}")
    return specs


def parse_grader(text: str, *, plain: bool = True) -> Builtin | Executable | Worker | PythonGrader:
    """Parse one ``--grader`` value into its spec, named (``NAME=``, or from what it runs) and checked;
    raises ConfigError when it names nothing runnable. ``plain``: the name must be a plain one, as a run's
    graders' names must (false for the conformance kit, which checks any grader file and names none)."""
    name: str | None = None
    head, sep, rest = text.partition("=")
    if sep and _NAME.match(head) and not os.path.exists(text):
        name, text = head, rest
    if not text:
        raise ConfigError("graders= needs a value")
    spec: Builtin | Executable | Worker | PythonGrader
    if text.startswith("builtin:"):
        builtin = text[len("builtin:") :]
        from waza.graders import canonical, load

        load(builtin)
        spec, own = Builtin(grader=canonical(builtin)), builtin
    elif text.startswith("worker:"):
        argv = _executable_argv(text[len("worker:") :])
        spec, own = Worker(argv=tuple(argv)), Path(argv[0]).name
    elif _CALLABLE.match(text) and not os.path.exists(text):
        target, func = check_python_target(text)
        spec, own = PythonGrader(fn=f"{target}:{func}"), func
    elif is_module(Path(text)):
        spec, own = Executable(argv=tuple(module_argv(Path(text)))), Path(text).name
    else:
        argv = _executable_argv(text)
        spec, own = Executable(argv=tuple(argv)), Path(argv[0]).name
    if plain or name is not None:
        return msgspec.structs.replace(spec, name=name or own)
    force_setattr(spec, "name", own)
    return spec


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


def grader_files(spec: GraderSpecT) -> list[str]:
    """The files a grader runs from (its program and file arguments, its Python file), as its spec names them."""
    if isinstance(spec, (Executable, Worker)):
        return [str(a) for a in spec.argv]
    if isinstance(spec, PythonGrader) and isinstance(spec.fn, str):
        return [spec.fn.rpartition(":")[0]]
    return []


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


__all__ = [
    "Builtin",
    "Executable",
    "GraderBase",
    "GraderLike",
    "GraderSpecT",
    "Graders",
    "Judge",
    "PythonGrader",
    "Worker",
    "check_python_target",
    "grader_files",
    "grader_specs",
    "parse_grader",
    "positive_number",
    "resolve_argv",
]
