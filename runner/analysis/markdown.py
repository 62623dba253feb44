"""Small Markdown writers: the analysis summaries and every report (``runner/reports``, suites, the viewer) use them.

They live with the analysis, the lower of the two layers, so imports run one way: reports → analysis.

Values come from agents and graders, so anything put in a table cell is made
safe for it: pipes escaped, newlines folded, length bounded, control
characters (terminal escape sequences) made inert. Numbers print the
same way everywhere ("n/a" for a value that is not defined, never 0).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from waza.protocol.inert import inert


def shorten(text: str, width: int) -> str:
    """At most ``width`` characters (0: no limit), marked with an ellipsis when cut."""
    if width and len(text) > width:
        return text[: max(width - 1, 0)] + "…"
    return text


def one_line(value: object, limit: int = 120) -> str:
    """Whitespace folded to single spaces, control characters made inert, shortened to ``limit`` characters
    ("n/a" for None)."""
    return shorten(inert(" ".join(("n/a" if value is None else str(value)).split())), limit)


def cell(value: object, limit: int = 120) -> str:
    """One table cell: :func:`one_line` with backslashes, pipes and tags escaped."""
    return one_line(value, limit).replace("\\", "\\\\").replace("|", "\\|").replace("<", "&lt;")


def num(value: float | None, digits: int = 3) -> str:
    return "n/a" if value is None else f"{value:.{digits}f}"


def signed(value: float | None, digits: int = 3) -> str:
    return "n/a" if value is None else f"{value:+.{digits}f}"


def table(headers: Sequence[str], rows: Iterable[Sequence[object]]) -> str:
    """A GitHub-flavoured Markdown table; cells are passed through :func:`cell`."""
    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    lines.extend("| " + " | ".join(cell(v) for v in row) + " |" for row in rows)
    return "\n".join(lines) + "\n"


def fence(text: str) -> str:
    """A fenced block that the text cannot close early (the fence outgrows any backtick run inside)."""
    longest = run = 0
    for ch in text:
        run = run + 1 if ch == "`" else 0
        longest = max(longest, run)
    ticks = "`" * max(3, longest + 1)
    return f"{ticks}\n{text}\n{ticks}\n"


def ids(values: Sequence[str], limit: int = 50) -> str:
    """A comma-separated id list in backticks, shortened past ``limit`` ids."""
    shown = ", ".join("`" + cell(v, 80).replace("`", "'") + "`" for v in values[:limit])
    more = len(values) - limit
    return shown + (f" and {more} more" if more > 0 else "") if values else "none"
