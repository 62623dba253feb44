"""waza's errors: one hierarchy, so a caller (the CLI, or Python code using the API) can tell
"you asked for something that cannot run" from "the agent or a grader could not run".

- ``UsageError``: a bad option or argument combination, found before anything runs.
- ``ConfigError`` (a UsageError): bad configuration, located by ``source`` (a file),
  ``line`` and ``field`` when there is one.
- ``AgentError``: the agent could not be started, so nothing could be captured.
- ``GraderError``: a grader could not be started, so nothing could be graded.

Faults of one prompt (an agent that crashes mid-run, a grader that times out)
are never raised: they are that record's error. The CLI maps these classes to
its exit codes in one place (``runner/runtime.py``).
"""

from __future__ import annotations

from typing import TypeVar

E = TypeVar("E", bound=BaseException)


class WazaError(Exception):
    """Base of the errors waza raises for a run that cannot go on; the message is one line for the user."""


class UsageError(WazaError):
    """Bad usage (an option, an argument), found before anything runs."""


class ConfigError(UsageError):
    """Bad configuration or usage, found before anything runs; the message is one line for the user.

    ``source`` and ``line`` locate it in a file when there is one, ``field`` names the key.
    """

    def __init__(self, message: str, *, source: str | None = None, line: int | None = None, field: str | None = None) -> None:
        self.message = message
        self.source = source
        self.line = line
        self.field = field
        super().__init__(str(self))

    def __str__(self) -> str:
        where = ""
        if self.source:
            where = f"{self.source}:{self.line}: " if self.line else f"{self.source}: "
        what = f"field {self.field!r}: " if self.field else ""
        return f"{where}{what}{self.message}"

    def __reduce__(self) -> tuple[object, ...]:
        """Picklable with its location (an error raised on a remote worker reaches the caller whole)."""
        return (_config_error, (type(self), self.message, self.source, self.line, self.field))


def _config_error(cls: type[ConfigError], message: str, source: str | None, line: int | None, field: str | None) -> ConfigError:
    error = cls.__new__(cls)
    ConfigError.__init__(error, message, source=source, line=line, field=field)
    return error


class AgentError(WazaError):
    """The agent could not be started (a missing program, a failed handshake): no prompt could run."""


class GraderError(WazaError):
    """A grader could not be started: no result could be graded."""


__all__ = ["AgentError", "ConfigError", "GraderError", "UsageError", "WazaError", "find_cause"]


def find_cause(exc: BaseException, kind: type[E]) -> E | None:
    """``exc`` itself, or the first ``kind`` inside the exception groups an event loop wraps it in."""
    if isinstance(exc, kind):
        return exc
    if isinstance(exc, BaseExceptionGroup):
        for inner in exc.exceptions:
            found = find_cause(inner, kind)
            if found is not None:
                return found
    return None
