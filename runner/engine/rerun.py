"""Running a resumed output's error records again (``Output.retry_errors``).

Resuming reads the output once (``outputs.resume_state`` for capture,
``trial_runs.load_finished`` for trials) and notes here the line numbers of the
records that ended as errors; their keys are then not done, so they run again.
The lines themselves are removed only when the run writes its first result: a
run that stops before any (an agent that cannot start, a cluster that cannot be
joined) leaves the file as it was. Removing never truncates the file in place:
the kept lines are copied byte for byte to a temporary file beside it, which is
flushed to disk and renamed over it, so a crash at any moment leaves the old
file or the new one. Reruns are then appended, so the file ends with one
record per key; a rerun cut short leaves its keys missing, and the next
``resume`` runs them.
"""

from __future__ import annotations

import contextlib
import os
import stat
import sys
from pathlib import Path

import msgspec

from waza.protocol.jsonl import DEFAULT_MAX_LINE
from waza.runner.engine.sink import output_stream
from waza.runner.wording import count

__all__ = ["ErrorRecords"]


class ErrorRecords(msgspec.Struct):
    """The error records of a resumed output that run again, by line number."""

    path: str
    max_line: int = DEFAULT_MAX_LINE
    #: Line numbers (from 1, as ``iter_lines`` counts them) of the records to remove.
    lines: set[int] = msgspec.field(default_factory=set)
    #: Where removed lines are appended (flushed to disk) before the output is replaced; None: dropped.
    move_to: Path | None = None
    #: The prompts whose records are removed (each must be in the prompts, or it would be lost).
    ids: set[str] = msgspec.field(default_factory=set)
    #: How many runs that makes (results, or trials), counted by the reader.
    again: int = 0

    def announce(self, noun: str) -> None:
        """Say on stderr how many ``noun``s run again (nothing when none does)."""
        if self.again:
            one = self.again == 1
            what = f"{count(self.again, noun)} in {self.path} ended as {'an error' if one else 'errors'}"
            print(f"waza: {what}; running {'it' if one else 'them'} again", file=sys.stderr)

    def remove(self) -> None:
        """Take the noted lines out of the output (once; nothing to do when there are none)."""
        if not self.lines:
            return
        mode = stat.S_IMODE(os.stat(self.path).st_mode)
        with contextlib.ExitStack() as stack:
            kept = stack.enter_context(output_stream(self.path, durable=True))
            os.fchmod(kept.fileno(), mode)  # the new file keeps the permissions of the one it replaces
            moved = stack.enter_context(open(self.move_to, "ab")) if self.move_to is not None else None
            with open(self.path, "rb") as source:
                number = 0
                # The same bounded reads as iter_lines, so the numbers match; resuming already refused a longer line.
                while line := source.readline(self.max_line + 3):
                    number += 1
                    if number not in self.lines:
                        kept.write(line)
                    elif moved is not None:
                        moved.write(line)
            if moved is not None:
                moved.flush()
                os.fsync(moved.fileno())  # on disk before the output loses them
        self.lines.clear()
