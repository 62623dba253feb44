"""Errors that mean "the user asked for something that cannot run" (exit code 2)."""

from __future__ import annotations


class ConfigError(Exception):
    """Bad configuration or usage, found before anything runs; the message is one line for the user.

    ``source`` and ``line`` locate it in a file when there is one, ``field`` names the key.
    """

    def __init__(self, message: str, *, source: str | None = None, line: int | None = None, field: str | None = None):
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
