"""Writing results: one whole line each, flushed before waza waits, secrets masked, counts kept for the summary and gates.

``--fail-under`` takes ``pass_rate=X`` and/or ``score=X`` (comma-separated).
pass_rate is passed / (passed + failed) (``analysis.pass_rate``, as ``waza
compare`` counts): an errored result is counted apart (and makes the run exit
1), a pending or ungraded one is not judged; score is the mean aggregate score
of the results that have one, errors left out.
"""

from __future__ import annotations

import asyncio
import sys
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import msgspec

from waza.protocol.errors import ConfigError
from waza.protocol.io.secrets import Redactor
from waza.protocol.jsonl import DEFAULT_MAX_LINE, JsonlError, OutputFile, dumps, iter_existing, repair_torn_tail
from waza.protocol.records import CaptureResult
from waza.runner.analysis.error_digest import ErrorDigest
from waza.runner.analysis.pass_rate import pass_rate
from waza.runner.engine.progress import Progress
from waza.runner.engine.rerun import ErrorRecords
from waza.runner.wording import count

#: The gates ``--fail-under`` can set (parsed by ``cli.option_values.parse_gates``).
GATES = ("pass_rate", "score")


class Tally(msgspec.Struct):
    """Running counts over written results."""

    statuses: Counter[str] = msgspec.field(default_factory=Counter)
    score_sum: float = 0.0
    scored: int = 0

    def add(self, status: str, score: float | None) -> None:
        self.statuses[status] += 1
        if score is not None and status != "error":  # as ``waza compare`` counts: an error's score says nothing
            self.score_sum += score
            self.scored += 1

    @property
    def total(self) -> int:
        return sum(self.statuses.values())

    def pass_rate(self) -> float | None:
        return pass_rate(self.statuses["passed"], self.statuses["failed"])

    def mean_score(self) -> float | None:
        return self.score_sum / self.scored if self.scored else None

    def describe(self, noun: str = "result", nouns: str | None = None) -> str:
        """ "3 results: 2 passed, 1 failed" (``noun``/``nouns`` name what was counted)."""
        parts = [f"{n} {s}" for s in ("passed", "failed", "error", "pending", "ungraded") if (n := self.statuses[s])]
        return count(self.total, noun, nouns) + (": " + ", ".join(parts) if parts else "")

    def missed_gates(self, gates: dict[str, float]) -> list[str]:
        return missed_gates(gates, {"pass_rate": self.pass_rate(), "score": self.mean_score()})


def missed_gates(gates: dict[str, float], actual: dict[str, float | None]) -> list[str]:
    """The gates ``actual`` falls below (a value that could not be computed misses its gate)."""
    missed = []
    for name, threshold in gates.items():
        value = actual[name]
        if value is None or value < threshold:
            shown = "n/a" if value is None else f"{value:.3f}"
            missed.append(f"{name} {shown} < {threshold:g}")
    return missed


#: Output buffer of a results file: a batch of 2 KB results goes out in a few writes, not one each.
BUFFER = 1 << 16


class ResultWriter(OutputFile):
    """The single writer of a run's output (a file, or ``-`` for stdout).

    Each line is written whole as its result arrives and flushed before the
    event loop next runs anything else, that is before waza waits for anything
    (the next batch of input, a grader, an agent): results that arrive in one
    go (in-process graders working through a batch of input lines) share one
    flush instead of paying one each, and none sits in the buffer while waza
    waits. Outside an event loop every line is flushed at once. ``first``
    runs once, just before the first line is written (``ErrorRecords.remove``
    when a resumed run retries errors).
    """

    buffering = BUFFER

    def __init__(
        self,
        path: str | Path,
        *,
        append: bool = False,
        progress: Progress | None = None,
        tally: Tally | None = None,
        errors: ErrorDigest | None = None,
        first: Callable[[], None] | None = None,
    ) -> None:
        super().__init__(path, append=append)
        self._first = first
        self._flush_pending = False
        self._failed: OSError | None = None
        self.redact = Redactor()
        self.tally = tally if tally is not None else Tally()
        self.errors = errors if errors is not None else ErrorDigest()
        self.progress = progress or Progress(None)

    async def __call__(self, result: CaptureResult) -> None:
        self.write(result)

    def write(self, result: CaptureResult) -> None:
        self.errors.add(result)
        self.write_line(dumps(result), result.status, result.score.score if result.score else None)

    def write_line(self, line: bytes, status: str, score: float | None) -> None:
        self._raise_failed()
        if self._first is not None:
            first, self._first = self._first, None
            first()
        stream = self._open()
        stream.write(self.redact(line))
        if not self._flush_pending:
            try:
                loop = asyncio.get_running_loop()
            except RuntimeError:  # not in an event loop: nothing to batch with
                stream.flush()
            else:
                self._flush_pending = True
                loop.call_soon(self._flush)
        self.tally.add(status, score)
        self.progress.advance(status)

    def _flush(self) -> None:
        self._flush_pending = False
        if self._stream is None or self._stream.closed:
            return
        try:
            self._stream.flush()
        except OSError as exc:  # a full disk, a closed pipe: raised in the run by the next write or close
            self._failed = exc

    def _raise_failed(self) -> None:
        if self._failed is not None:
            failed, self._failed = self._failed, None
            raise failed

    def close(self, *, complete: bool = False) -> None:
        """Flush and close (see :class:`OutputFile`); a write that failed since the last one is raised now."""
        super().close(complete=complete)
        self._raise_failed()


def resume_state(
    output: str | None, key: tuple[str, ...] = ("id",), max_line: int = DEFAULT_MAX_LINE, *, retry: ErrorRecords | None = None
) -> set[tuple[object, ...]]:
    """Keys of results already complete in ``output``, after repairing a torn last line.

    With ``retry`` a result whose status is ``error`` is not complete: its line is noted there (to be
    removed when the run writes its first result) and its key runs again, unless the file also holds
    a result of that key that is not an error."""
    if not output or output == "-":
        raise ConfigError("Output.resume needs a file as Output.path (it reads what that file already holds)")
    path = Path(output)
    if not path.exists():
        return set()
    removed = repair_torn_tail(path)
    if removed:
        print(f"waza: repaired {output}: removed a torn last line ({removed} bytes)", file=sys.stderr)
    done: set[tuple[object, ...]] = set()
    errored: set[tuple[object, ...]] = set()
    try:
        for number, value in iter_existing(path, max_line):
            if retry is not None and value.get("status") == "error":
                retry.lines.add(number)
                errored.add(tuple(value.get(k) for k in key))
            else:
                done.add(tuple(value.get(k) for k in key))
    except JsonlError as exc:
        raise ConfigError(f"cannot resume: {exc}") from None
    if retry is not None:
        retry.ids = {key[0] for key in errored - done if isinstance(key[0], str)}
        retry.again = len(errored - done)
    return done
