"""Reading prompts: validated up front when the file can be read twice, streamed always.

A regular prompts file is checked whole before anything runs (bad JSON, missing
or duplicate ids, wrong types: one line naming file, line and field, exit 2), yet
only the ids are held in memory. Stdin, a pipe (``<(cat p.jsonl)``) or a FIFO
cannot be read twice, so there each line is checked as it arrives and a bad one
stops the run after what is in flight. The file is opened and its lines pulled
in batches from a worker thread, so a slow pipe or a FIFO no one writes never
blocks the event loop, and SIGINT/SIGTERM still end the run (the blocked thread
is abandoned); a batch goes on as soon as the stream would wait, so each line is
used as it arrives. CSV and Parquet files are read row by row the same way
(``datasets``); the checks here apply to every format.
"""

from __future__ import annotations

import contextlib
import math
import os
import queue
import threading
from collections.abc import AsyncIterator, Callable, Iterable, Iterator
from pathlib import Path
from typing import Any, Literal, TypeVar

import anyio
import anyio.from_thread
import anyio.lowlevel

from waza.protocol.errors import ConfigError
from waza.protocol.jsonl import DEFAULT_MAX_LINE, JsonlError, decode_line, display_name, is_regular, iter_lines, open_input
from waza.protocol.records import PromptCase
from waza.runner.engine.datasets import PromptFormat, TableOptions, check_seekable, detect_format, error_type, iter_table

__all__ = [
    "AMBIGUOUS_TIMEOUT",
    "BATCH",
    "PromptFile",
    "TimeoutUnit",
    "check_resumed",
    "in_batches",
    "is_stream",
    "require_lines",
]

T = TypeVar("T")

#: How a prompt's ``timeout`` is read: ``s`` (waza's unit), ``ms`` (acp-harness's), or ``auto``: seconds,
#: refusing a value of AMBIGUOUS_TIMEOUT or more, which is far likelier an acp-harness file's milliseconds.
TimeoutUnit = Literal["auto", "s", "ms"]
AMBIGUOUS_TIMEOUT = 1000

BATCH = 256


class _Stopped(Exception):
    """The consumer of ``in_batches`` went away: the reader thread unwinds its source and ends."""


class _ReadAhead:
    """The reader thread of ``in_batches``: values in batches, each handed over when it is full or
    when the source is about to wait (``waiting``), so a line that has arrived is never held back.

    A batch cut short by an error holds what came before it, then the error:
    the lines before a bad one are still graded and written."""

    def __init__(self, size: int, token: Any, ready: anyio.Event) -> None:
        self.size = size
        self.token = token
        self.requests: queue.SimpleQueue[anyio.Event | None] = queue.SimpleQueue()
        self.box: list[tuple[list[Any], BaseException | None, bool]] = []
        self.batch: list[Any] = []
        #: Set when the next batch is in ``box``; the consumer puts the one after in ``requests``.
        self.ready = ready

    def run(self, source: Iterable[Any] | Callable[[Callable[[], None]], Iterable[Any]]) -> None:
        error: BaseException | None = None
        try:
            values = source(self.waiting) if callable(source) else source
            for value in values:
                self.batch.append(value)
                if len(self.batch) >= self.size:
                    self._hand_over()
        except _Stopped:
            return
        except BaseException as exc:  # handed to the awaiting task after the batch
            error = exc
        with contextlib.suppress(_Stopped):
            self._hand_over(error, done=True)

    def waiting(self) -> None:
        """Called by the source before a read that may wait: what has been read goes on now."""
        if self.batch:
            self._hand_over()

    def _hand_over(self, error: BaseException | None = None, *, done: bool = False) -> None:
        self.box.append((self.batch, error, done))
        self.batch = []
        try:
            anyio.from_thread.run_sync(self.ready.set, token=self.token)
        except RuntimeError:  # the loop is gone: the run was interrupted
            raise _Stopped from None
        if not done:
            ready = self.requests.get()  # the consumer asks again as soon as it has a batch
            if ready is None:
                raise _Stopped
            self.ready = ready


async def in_batches(source: Iterable[T] | Callable[[Callable[[], None]], Iterable[T]], size: int = BATCH) -> AsyncIterator[T]:
    """Iterate a blocking iterator without blocking the loop, a batch at a time from one daemon thread.

    ``source`` is an iterable, or a function that makes one given a callback to
    call before each read that may wait (``open_input``'s ``on_wait``): a batch
    is handed on when it holds ``size`` values or when the source is about to
    wait, so each line of a slow stream is used as it arrives and a stream that
    stays open keeps running.

    The thread reads the next batch while this one is used (two batches in
    memory at most). A daemon thread, not a pool's: a read blocked for good (a
    FIFO no one writes) cannot keep waza from ending on SIGINT/SIGTERM, as a
    pool thread would (the interpreter joins those). One thread per iteration,
    not per batch: starting one cost as much as reading the batch."""
    ready = anyio.Event()
    reader = _ReadAhead(size, anyio.lowlevel.current_token(), ready)
    thread = threading.Thread(target=reader.run, args=(source,), name="waza-read", daemon=True)
    thread.start()
    try:
        while True:
            await ready.wait()
            batch, error, done = reader.box.pop()
            if not done:
                ready = anyio.Event()
                reader.requests.put(ready)  # read ahead while this batch is used
            for value in batch:
                yield value
            if error is not None:
                raise error
            if done:
                return
    finally:
        reader.requests.put(None)


class PromptFile:
    """A prompts file and how to read it: its path (or ``-``), its format (decided once, here, from
    ``TableOptions.format`` or the extension), the columns that fill a table's fields, how a
    prompt's ``timeout`` is read, and the longest line. ``scan`` checks it whole before a run,
    ``cases`` reads it lazily and ``stream`` hands its prompts to a run as they are read: the one
    place prompts files are read."""

    def __init__(
        self,
        path: str | Path,
        table: TableOptions | None = None,
        *,
        timeout_unit: TimeoutUnit | None = None,
        max_line: int = DEFAULT_MAX_LINE,
    ) -> None:
        """``timeout_unit``: a prompt's ``timeout`` converted to seconds from it (None: left as written)."""
        self.path = path
        self.name = display_name(path)
        self.format: PromptFormat = detect_format(path, table.format if table else None)
        self.columns = table.columns if table else {}
        self.timeout_unit = timeout_unit
        self.max_line = max_line
        self._error = error_type(self.format)

    def scan(self) -> set[str] | None:
        """Validate a whole regular prompts file before running; its ids (None for a stream, read once later)."""
        if self.format == "parquet":
            check_seekable(self.path)  # before is_stream: a Parquet FIFO is refused, not left for a reader to block on
        if is_stream(self.path):
            return None
        ids = {case.id for _, case in self.cases()}
        if not ids:
            raise JsonlError(self.name, 0, "holds no prompts")
        return ids

    def cases(self, on_wait: Callable[[], None] | None = None) -> Iterator[tuple[int, PromptCase]]:
        """Decode prompts lazily with their line (or Parquet row) numbers, rejecting a repeated id at the
        line that repeats it; ``on_wait`` is called before a read of a stream that may wait."""
        error, source = self._error, self.name
        seen: dict[str, int] = {}
        for number, case in self._decoded(on_wait):
            if case.id in seen:
                raise error(source, number, f"duplicate id {case.id!r} (first on line {seen[case.id]})", "id")
            if not case.turns or not all(isinstance(t, str) for t in case.turns):
                raise error(source, number, "must be a string or a non-empty list of strings", "input")
            nul = _nul_field(case)
            if nul is not None:
                raise error(source, number, "must not contain a NUL character (no agent can be handed one)", nul)
            if case.timeout is not None and not (math.isfinite(case.timeout) and case.timeout > 0):
                raise error(source, number, f"must be a number greater than 0, got {case.timeout!r}", "timeout")
            seen[case.id] = number
            if self.timeout_unit is not None and case.timeout is not None:
                case.timeout = _seconds(case.timeout, self.timeout_unit, error(source, number, "", "timeout"))
            yield number, case

    async def stream(self, keep: Callable[[PromptCase], bool] = lambda c: True) -> AsyncIterator[PromptCase]:
        """The prompts ``keep`` accepts, as they are read (each line of a stream handed on as it arrives)."""
        async for _, case in in_batches(self.cases):
            if keep(case):
                yield case

    def _decoded(self, on_wait: Callable[[], None] | None) -> Iterator[tuple[int, PromptCase]]:
        """Prompts as written, with their line (or Parquet row) numbers: JSONL, CSV or Parquet."""
        if self.format != "jsonl":
            yield from iter_table(self.path, self.format, self.columns, self.max_line, on_wait)
            return
        if self.columns:
            raise ConfigError("TableOptions.columns is for CSV and Parquet prompts files; a JSONL prompt names its fields")
        with open_input(self.path, on_wait) as stream:
            for number, line in iter_lines(stream, self.name, self.max_line):
                yield number, decode_line(self.name, number, line, PromptCase)


def _nul_field(case: PromptCase) -> str | None:
    """The first text field of ``case`` holding a NUL character: no agent can be handed one (argv,
    environment and file names end at a NUL), so it is refused where it is read, not at run time."""
    if "\0" in case.id:
        return "id"
    if any("\0" in turn for turn in case.turns):
        return "input"
    for name in ("hint", "reference"):
        value = getattr(case, name)
        if isinstance(value, str) and "\0" in value:
            return name
    return None


def _seconds(value: float, unit: TimeoutUnit, where: JsonlError) -> float:
    if unit == "ms":
        return value / 1000
    if unit == "auto" and value >= AMBIGUOUS_TIMEOUT:
        raise type(where)(
            where.source,
            where.line,
            f"{value:g} is ambiguous: waza reads seconds, acp-harness files milliseconds; set Timeouts.prompt_unit to s or ms",
            "timeout",
        )
    return value


def is_stream(path: str | Path) -> bool:
    """Stdin, a pipe, a FIFO or a device: anything that cannot be read a second time."""
    return str(path) == "-" or (os.path.exists(path) and not is_regular(path))  # a missing path: the open says why


def require_lines(path: str | Path, what: str) -> None:
    """A regular file with no non-blank line is an error before anything runs (streams are checked
    by their reader once read)."""
    if is_stream(path):
        return
    with open_input(path) as stream:
        if next(iter_lines(stream, display_name(path)), None) is None:
            raise JsonlError(display_name(path), 0, f"holds no {what}")


def check_resumed(output: str, done: set[str], ids: set[str] | None, prompts: str | Path) -> None:
    """Refuse to resume into an output holding results of prompts this file does not have."""
    if ids is None:
        return
    stray = sorted(done - ids)
    if stray:
        raise ConfigError(
            f"holds results for ids not in {display_name(prompts)} (first: {stray[0]!r}); it belongs to another prompts file",
            source=output,
            field="Output.resume",
        )
