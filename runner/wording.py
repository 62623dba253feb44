"""Counts and failures worded as a person writes them: "1 result", "2 results", "ValueError: bad input"."""

from __future__ import annotations

__all__ = ["count", "failure"]


def count(n: int, noun: str, nouns: str | None = None) -> str:
    """``n`` and the noun, singular for exactly one (``nouns`` for a plural that is not noun + s)."""
    return f"{n} {noun if n == 1 else (nouns or noun + 's')}"


def failure(exc: BaseException) -> str:
    """An exception as the last line of its traceback reads: its type, and its message when it has one."""
    message = str(exc)
    return f"{type(exc).__name__}: {message}" if message else type(exc).__name__
