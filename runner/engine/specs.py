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
``Judge`` (an LLM grader pointed at a judge), defined beside the grader runners
that take them (:mod:`waza.runner.grading.grader_specs`) and re-exported here.
"""

from __future__ import annotations

import os
from pathlib import Path

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
)
from waza.protocol.errors import ConfigError
from waza.protocol.jsonl import DEFAULT_MAX_LINE_MB
from waza.protocol.trajectory import DEFAULT_MAX_STEPS, DEFAULT_MAX_TRAJECTORY_MB
from waza.runner.engine.inputs import TimeoutUnit
from waza.runner.grading.grader_specs import (
    Builtin,
    Executable,
    GraderBase,
    GraderLike,
    Graders,
    GraderSpecT,
    Judge,
    PythonGrader,
    Worker,
    grader_specs,
    positive_number,
)


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
            positive_number(self.prompt, "Timeouts.prompt", "seconds, or None for no limit")
        positive_number(self.grader, "Timeouts.grader", "seconds")
        if self.prompt_unit not in ("s", "ms", "auto"):
            raise ConfigError(f"Timeouts.prompt_unit takes 's', 'ms' or 'auto', got {self.prompt_unit!r}")


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
    "grader_specs",
]
