"""A progress bar on stderr, only when stderr is a terminal (or when asked).

rich is imported only when a bar is drawn: a run whose stderr is a file or a
pipe (scripts, CI, benchmarks) does not pay for loading it.
"""

from __future__ import annotations

import sys
from collections import Counter
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rich.progress import Progress as RichProgress


def wanted(flag: bool | None) -> bool:
    """--progress/--no-progress win; by default a bar only when stderr is a terminal."""
    return sys.stderr.isatty() if flag is None else flag


class Progress:
    """A bar of finished results, counted by status, when enabled; otherwise it does nothing."""

    def __init__(self, total: int | None, *, enabled: bool = False, label: str = "results") -> None:
        self.counts: Counter[str] = Counter()
        self._bar: RichProgress | None = None
        if enabled:
            from rich.console import Console
            from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeElapsedColumn
            from rich.progress import Progress as RichProgress

            self._bar = RichProgress(
                TextColumn("[bold]{task.description}"),
                BarColumn(),
                MofNCompleteColumn(),
                TextColumn("{task.fields[status]}"),
                TimeElapsedColumn(),
                console=Console(file=sys.stderr),
                transient=False,
            )
            self._task = self._bar.add_task(label, total=total if total and total > 0 else None, status="")
            self._bar.start()

    def advance(self, status: str) -> None:
        if self._bar is not None:  # called once per result: without a bar, nothing to count
            self.counts[status] += 1
            shown = " ".join(f"{k}:{v}" for k, v in sorted(self.counts.items()))
            self._bar.update(self._task, advance=1, status=shown)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.stop()
