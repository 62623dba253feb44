"""The typed specs of the Python API: what to run, as plain frozen data.

Everything here is a frozen msgspec Struct of strings, numbers, paths and tuples,
so a spec can be compared, printed, pickled and sent to another process or
machine: a run is described without opening anything. Only the engine turns
a spec into live objects (an adapter, grader runners), and it checks each one
there, before anything runs (a ConfigError names what is wrong).

One agent spec per adapter (``ExecAgent``, ``AcpAgent``, ``HeadlessAgent``,
``HttpAgent``, ``ReplayAgent``, ``MockAgent``), defined beside the adapters
that take them (:mod:`waza.adapters.specs`) and re-exported here; its fields are
exactly the options that adapter honours, so an option an adapter would ignore
cannot be written. Grader specs: ``Builtin`` (by name, with its config), ``Executable``
(one process per result), ``Worker`` (a persistent worker process),
``PythonGrader`` (``file.py:fn``, ``package.module:fn`` or a callable) and
``Judge`` (an LLM grader pointed at a judge).
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal, TypeAlias

import msgspec
import msgspec.structs
from msgspec.structs import force_setattr

from waza.adapters.specs import (
    AGENTS,
    AcpAgent,
    AgentSpec,
    ExecAgent,
    HeadlessAgent,
    HttpAgent,
    MockAgent,
    ReplayAgent,
    command_argv,
)
from waza.protocol.errors import ConfigError
from waza.protocol.jsonl import DEFAULT_MAX_LINE_MB
from waza.protocol.trajectory import DEFAULT_MAX_STEPS, DEFAULT_MAX_TRAJECTORY_MB
from waza.runner.engine.inputs import TimeoutUnit
from waza.runner.grading.grader_specs import GraderSpec, check_python_target, parse_grader, resolve_argv


class Timeouts(msgspec.Struct, frozen=True):
    """Time limits in seconds: per prompt (``None``: none; a prompt's own ``timeout`` wins) and per grading.

    ``prompt_unit``: how a prompts file's own ``timeout`` values are read: ``s``, ``ms`` (acp-harness
    files), or ``auto`` (seconds; 1000 or more is refused as ambiguous).
    """

    prompt: float | None = None
    grader: float = 60.0
    prompt_unit: TimeoutUnit = "auto"

    def __post_init__(self) -> None:
        if self.prompt is not None:
            _positive(self.prompt, "Timeouts.prompt", "seconds, or None for no limit")
        _positive(self.grader, "Timeouts.grader", "seconds")
        if self.prompt_unit not in ("s", "ms", "auto"):
            raise ConfigError(f"Timeouts.prompt_unit takes 's', 'ms' or 'auto', got {self.prompt_unit!r}")


def _positive(value: object, name: str, unit: str) -> None:
    """Refuse a limit that is not a finite number above zero (a bool is not a number here)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
        raise ConfigError(f"{name} must be a positive number of {unit}, got {value!r}")


class Limits(msgspec.Struct, frozen=True):
    """How much of an input or of an agent's reports waza holds at once, so neither can exhaust memory.

    ``line_mb``: the longest line (JSONL) or CSV line of a prompts or results file;
    a longer one stops the run with an error naming the file and line.
    ``steps`` and ``trajectory_mb``: what one prompt's trajectory keeps (steps;
    megabytes of their text and data, as JSON). An agent that reports more (a
    flood of events) has the rest counted, not kept: its record gets one error
    saying how many events were dropped, and the run goes on.
    """

    line_mb: int = DEFAULT_MAX_LINE_MB
    steps: int = DEFAULT_MAX_STEPS
    trajectory_mb: int = DEFAULT_MAX_TRAJECTORY_MB

    def __post_init__(self) -> None:
        for name in ("line_mb", "steps", "trajectory_mb"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_LIMIT:
                raise ConfigError(f"must be a whole number from 1 to {MAX_LIMIT}, got {value!r}", field=f"Limits.{name}")

    @property
    def line_bytes(self) -> int:
        return self.line_mb << 20


#: The largest value of a ``Limits`` field.
MAX_LIMIT = 1 << 20


class Workspace(msgspec.Struct, frozen=True):
    """Where each prompt runs.

    ``root``: a fresh ``root/<id>[-tN]`` directory per run (kept). ``fresh``: a
    fresh temporary directory per run, removed after grading unless ``keep``.
    Otherwise every run shares ``cwd`` (default: the current directory).
    ``template``: a directory copied into each fresh workspace first.
    """

    cwd: Path | None = None
    root: Path | None = None
    fresh: bool = False
    keep: bool = False
    template: Path | None = None


class Output(msgspec.Struct, frozen=True):
    """Where results are written as JSONL (``"-"``: stdout), and whether to skip results already there.

    ``retry_errors`` (with ``resume``): a result already there whose status is
    ``error`` (for trials: an errored trial) is not skipped but run again, and
    the new result replaces it, so the file keeps one record per prompt.
    """

    path: str
    resume: bool = False
    retry_errors: bool = False
    #: A progress bar on stderr; ``None``: when stderr is a terminal.
    progress: bool | None = False

    def __post_init__(self) -> None:
        if isinstance(self.path, Path):
            force_setattr(self, "path", str(self.path))
        if not isinstance(self.path, str) or not self.path:
            raise ConfigError(f"Output.path takes a file path or '-' (stdout), got {self.path!r}")
        if self.retry_errors and not self.resume:
            raise ConfigError("Output.retry_errors needs Output.resume (it runs again the errors of the file being resumed)")

    def check(self) -> None:
        """Refuse, before anything runs, a file that could not be opened when the first result arrives (the
        file itself is opened only then, so a failed start leaves it as it was): a directory, a file in a
        folder that does not exist, one that may not be written."""
        if self.path == "-":
            return
        target = Path(self.path)
        folder = target.parent
        if target.is_dir():
            problem = "is a directory"
        elif not folder.is_dir():
            problem = f"{str(folder)!r} is a file, not a folder" if folder.exists() else f"folder {str(folder)!r} does not exist"
        elif not os.access(target if target.exists() else folder, os.W_OK):
            problem = "may not be written"
        else:
            return
        raise ConfigError(f"Output.path {self.path!r}: {problem}")


# --- graders --------------------------------------------------------------------------------------

_NAME = re.compile(r"^[A-Za-z_][\w.-]*$")


class GraderBase(msgspec.Struct, frozen=True, kw_only=True):
    """Base of the grader specs (a list of several kinds is a ``list[GraderBase]``): ``name`` labels its grades (default: from the grader), ``weight`` its share of the score."""

    name: str | None = None
    config: Mapping[str, Any] = msgspec.field(default_factory=dict)
    weight: float = 1.0
    #: Seconds per result; ``None``: the run's ``Timeouts.grader``.
    timeout: float | None = None

    def __post_init__(self) -> None:
        kind = type(self).__name__
        if self.name is not None and not _NAME.match(self.name):
            raise ConfigError(f"{kind}.name {self.name!r} must be letters, digits, _ . -")
        if isinstance(self.weight, bool) or not isinstance(self.weight, (int, float)) or not math.isfinite(self.weight):
            raise ConfigError(f"{kind}.weight must be a number, got {self.weight!r}")
        if self.weight < 0:
            raise ConfigError(f"{kind}.weight must not be negative, got {self.weight}")
        if self.timeout is not None:
            _positive(self.timeout, f"{kind}.timeout", "seconds, or None for the run's Timeouts.grader")

    def _spec(self, name: str, kind: Literal["builtin", "python", "exec", "worker"], target: str, **kw: Any) -> GraderSpec:
        return GraderSpec(
            name=self.name or name,
            kind=kind,
            target=target,
            config=dict(self.config),
            weight=self.weight,
            timeout=self.timeout,
            **kw,
        )

    def internal(self) -> GraderSpec:
        """The engine's mutable spec for this grader, checked (ConfigError when it names nothing runnable)."""
        raise NotImplementedError


class Builtin(GraderBase, frozen=True, kw_only=True):
    """A built-in grader by name (``waza graders list``); ``isolate`` runs it as a worker process."""

    grader: str
    isolate: bool = False

    def internal(self) -> GraderSpec:
        from waza.graders import canonical, load

        load(self.grader)
        target = canonical(self.grader)
        return self._spec(target, "builtin", target)


class Executable(GraderBase, frozen=True, kw_only=True):
    """An executable run once per result: a GraderRequest on stdin, a result on stdout."""

    #: The program and its arguments: a sequence, or a string split as a POSIX shell would.
    argv: str | Sequence[str]

    def __post_init__(self) -> None:
        super().__post_init__()
        force_setattr(self, "argv", command_argv(self.argv, "Executable.argv"))

    def internal(self) -> GraderSpec:
        argv = resolve_argv([str(a) for a in self.argv])
        return self._spec(Path(argv[0]).name, "exec", argv[0], argv=argv)


class Worker(GraderBase, frozen=True, kw_only=True):
    """An executable in persistent worker mode: one process per concurrency slot, JSONL in and out."""

    #: The program and its arguments: a sequence, or a string split as a POSIX shell would.
    argv: str | Sequence[str]

    def __post_init__(self) -> None:
        super().__post_init__()
        force_setattr(self, "argv", command_argv(self.argv, "Worker.argv"))

    def internal(self) -> GraderSpec:
        argv = resolve_argv([str(a) for a in self.argv])
        return self._spec(Path(argv[0]).name, "worker", argv[0], argv=argv)


class PythonGrader(GraderBase, frozen=True, kw_only=True):
    """A Python function called in-process with the request as a dict; returns a result dict.

    ``fn`` is a reference (``file.py:fn`` or ``package.module:fn``), which any
    machine with the same files can import, or the callable itself (pickled by
    reference, so a module-level function of an importable module travels too).
    """

    fn: str | Callable[[dict[str, Any]], Any]

    def internal(self) -> GraderSpec:
        if isinstance(self.fn, str):
            target, func = check_python_target(self.fn)
            return self._spec(func, "python", target, func=func)
        if not callable(self.fn):
            raise ConfigError(f"PythonGrader needs a callable or 'file.py:fn', got {self.fn!r}", field="fn")
        name = getattr(self.fn, "__name__", "grader")
        module = getattr(self.fn, "__module__", None) or "__main__"
        return self._spec(name, "python", module, func=getattr(self.fn, "__qualname__", name), fn=self.fn)


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

    def internal(self) -> GraderSpec:
        from waza.runner.grading.judge_setup import apply

        spec = Builtin(
            grader=self.grader, name=self.name, config=self.config, weight=self.weight, timeout=self.timeout
        ).internal()
        apply([spec], self.judge_config())
        return spec


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
            specs.append(from_internal(parse_grader(item)))
        elif callable(item):
            specs.append(PythonGrader(fn=item))
        else:
            raise ConfigError(f"graders[{i}] is not a grader spec, a string or a function: {item!r}")
    return specs


def from_internal(spec: GraderSpec, *, isolate: bool = False) -> GraderSpecT:
    """The API spec of a parsed ``--grader`` (its judge options already merged into its config)."""
    common: dict[str, Any] = {"name": spec.name, "config": spec.config, "weight": spec.weight, "timeout": spec.timeout}
    if spec.kind == "builtin":
        return Builtin(grader=spec.target, isolate=isolate, **common)
    if spec.kind == "python":
        return PythonGrader(fn=f"{spec.target}:{spec.func}", **common)
    if spec.kind == "worker":
        return Worker(argv=tuple(spec.argv), **common)
    return Executable(argv=tuple(spec.argv), **common)


__all__ = [
    "AGENTS",
    "AcpAgent",
    "AgentSpec",
    "Builtin",
    "ExecAgent",
    "Executable",
    "GraderBase",
    "GraderLike",
    "GraderSpecT",
    "Graders",
    "HeadlessAgent",
    "HttpAgent",
    "Judge",
    "Limits",
    "MockAgent",
    "Output",
    "PythonGrader",
    "ReplayAgent",
    "Timeouts",
    "Worker",
    "Workspace",
    "from_internal",
    "grader_specs",
]
