"""Option values checked in one place: numbers, report formats, the old names of renamed options.

Numbers: no NaN, no infinity, no zero or negative durations.

A float option parsed by Python happily takes ``nan``, ``inf`` and ``-1``; used as
a timeout, each silently means "never" or "at once". Every duration and bounded
number option of every command is declared with one of these parsers, so each
rejects such values with a usage error (exit 2) naming the option.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Literal, TypeVar

import typer

from waza.protocol.errors import ConfigError

__all__ = [
    "FORMAT_OPTION",
    "MARKDOWN_ALIAS",
    "ReportFormat",
    "finite_number",
    "parse_gates",
    "positive_seconds",
    "renamed",
    "wants_markdown",
    "whole_number",
]

T = TypeVar("T")

#: What a command that writes a JSON record or its Markdown page for people is asked for, as ``report`` is.
ReportFormat = Literal["json", "markdown"]
FORMAT_OPTION = typer.Option("--format", "-f", help="json (default: the record) or markdown (for people).")
#: ``--markdown``, the old way to ask for ``--format markdown``: kept hidden for one release.
MARKDOWN_ALIAS = typer.Option("--markdown", hidden=True, help="Old name of --format markdown.")


def renamed(value: T | None, old_value: T | None, new: str, old: str) -> T | None:
    """The value of an option given by its new name or by ``old``, its hidden name kept for one release."""
    if old_value is None:
        return value
    if value is not None:
        raise ConfigError(f"{old} is the old name of {new}: give {new} only")
    return old_value


def wants_markdown(format: str | None, markdown: bool) -> bool:
    """``--format markdown``, or the old ``--markdown``; ``--markdown --format json`` asks for both and is refused."""
    return renamed(format, "markdown" if markdown else None, "--format", "--markdown") == "markdown"


def _number(text: str) -> float:
    try:
        value = float(text)
    except (TypeError, ValueError):
        raise typer.BadParameter(f"{text!r} is not a number") from None
    if not math.isfinite(value):
        raise typer.BadParameter(f"{text!r} is not a finite number")
    return value


def positive_seconds(text: str | float) -> float:
    """A duration in seconds: finite and greater than 0."""
    value = _number(str(text))
    if value <= 0:
        raise typer.BadParameter(f"{text!r} must be greater than 0 seconds")
    return value


def whole_number(low: int | None = None, high: int | None = None) -> Callable[[str | int], int]:
    """A whole number within [low, high] (either bound optional), refused in words: "'abc' is not a whole number"."""

    def parse(text: str | int) -> int:
        try:
            value = int(str(text).strip())
        except ValueError:
            raise typer.BadParameter(f"{text!r} is not a whole number{_bounds(low, high, ' (', ')')}") from None
        if (low is not None and value < low) or (high is not None and value > high):
            raise typer.BadParameter(f"{value} is out of range: it must be {_bounds(low, high)}")
        return value

    return parse


def _bounds(low: float | None, high: float | None, before: str = "", after: str = "") -> str:
    """ "between 0 and 1", "at least 1", "at most 9" (or "" without bounds), wrapped in ``before``/``after``."""
    if low is not None and high is not None:
        text = f"between {low:g} and {high:g}"
    elif low is not None or high is not None:
        text = f"at least {low:g}" if low is not None else f"at most {high:g}"
    else:
        return ""
    return before + text + after


def finite_number(low: float | None = None, high: float | None = None) -> Callable[[str | float], float]:
    """A finite number within [low, high] (either bound optional)."""

    def parse(text: str | float) -> float:
        value = _number(str(text))
        if (low is not None and value < low) or (high is not None and value > high):
            raise typer.BadParameter(f"{text!r} must be {_bounds(low, high)}")
        return value

    return parse


def parse_gates(text: str | None) -> dict[str, float]:
    """``--fail-under pass_rate=X,score=Y`` as {gate: threshold}."""
    if not text:
        return {}
    from waza.runner.engine.outputs import GATES  # the engine, only when there is a gate to check

    gates: dict[str, float] = {}
    for part in text.split(","):
        name, sep, value = part.strip().partition("=")
        if not sep or name not in GATES:
            raise ConfigError(f"--fail-under takes pass_rate=X and/or score=X, got {part.strip()!r}")
        try:
            gates[name] = finite_number()(value)
        except typer.BadParameter:
            raise ConfigError(f"--fail-under {name} must be a finite number, got {value!r}") from None
    return gates
