"""Reading prompts: validated up front when the file can be read twice, streamed always.

A regular prompts file is checked whole before anything runs (bad JSON, missing
or duplicate ids, wrong types: one line naming file, line and field, exit 2), yet
only the ids are held in memory. Stdin, a pipe (``<(cat p.jsonl)``) or a FIFO
cannot be read twice, so there each line is checked as it arrives and a bad one
stops the run after what is in flight. The file is opened and its lines pulled
in batches from a worker thread, so a slow pipe or a FIFO no one writes never
blocks the event loop, and SIGINT/SIGTERM still end the run (the blocked thread
is abandoned). CSV and Parquet files are read row by row the same way
(``datasets``); the checks here apply to every format.
"""

from __future__ import annotations

import math
import os
import queue
import stat
import threading
from collections.abc import AsyncIterator, Callable, Iterable, Iterator
from itertools import islice
from pathlib import Path
from typing import Any, Literal, TypeVar

import anyio
import anyio.from_thread
import anyio.lowlevel

from waza.protocol.errors import ConfigError
from waza.protocol.jsonl import JsonlError, decode_line, display_name, iter_lines, open_input
from waza.protocol.records import PromptCase
from waza.runner.engine.datasets import TableOptions, detect_format, error_type, iter_table

T = TypeVar("T")

#: How a prompt's ``timeout`` is read: ``s`` (waza's unit), ``ms`` (acp-harness's), or ``auto``: seconds,
#: refusing a value of AMBIGUOUS_TIMEOUT or more, which is far likelier an acp-harness file's milliseconds.
TimeoutUnit = Literal["auto", "s", "ms"]
AMBIGUOUS_TIMEOUT = 1000

BATCH = 256


def _read_ahead(
    iterator: Iterator[T], size: int, requests: queue.SimpleQueue[anyio.Event | None], box: list[Any], token: Any
) -> None:
    """The reader thread of ``in_batches``: a batch per request, set ``ready`` when it is in ``box``.

    A batch cut short by an error holds what came before it, then the error:
    the lines before a bad one are still graded and written."""
    while (ready := requests.get()) is not None:
        batch: list[T] = []
        error: BaseException | None = None
        try:
            for value in islice(iterator, size):
                batch.append(value)
        except BaseException as exc:  # noqa: BLE001 - handed to the awaiting task after the batch
            error = exc
        box.append((batch, error))
        try:
            anyio.from_thread.run_sync(ready.set, token=token)
        except RuntimeError:  # the loop is gone: the run was interrupted
            return
        if error is not None:
            return


async def in_batches(source: Iterable[T], size: int = BATCH) -> AsyncIterator[T]:
    """Iterate a blocking iterator without blocking the loop, a batch at a time from one daemon thread.

    The thread reads the next batch while this one is used (two batches in
    memory at most). A daemon thread, not a pool's: a read blocked for good (a
    FIFO no one writes) cannot keep waza from ending on SIGINT/SIGTERM, as a
    pool thread would (the interpreter joins those). One thread per iteration,
    not per batch: starting one cost as much as reading the batch."""
    requests: queue.SimpleQueue[anyio.Event | None] = queue.SimpleQueue()
    box: list[Any] = []
    reader = threading.Thread(
        target=_read_ahead,
        args=(iter(source), size, requests, box, anyio.lowlevel.current_token()),
        name="waza-read",
        daemon=True,
    )
    ready = anyio.Event()
    requests.put(ready)
    reader.start()
    try:
        while True:
            await ready.wait()
            batch, error = box.pop()
            if error is None and batch:
                ready = anyio.Event()
                requests.put(ready)  # read ahead while this batch is used
            for value in batch:
                yield value
            if error is not None:
                raise error
            if not batch:
                return
    finally:
        requests.put(None)


def _decoded(path: str | Path, table: TableOptions | None) -> Iterator[tuple[int, PromptCase]]:
    """Prompts as written, with their line (or Parquet row) numbers: JSONL, CSV or Parquet."""
    table = table or TableOptions()
    fmt = detect_format(path, table.format)
    if fmt != "jsonl":
        yield from iter_table(path, fmt, table.columns)
        return
    if table.columns:
        raise ConfigError("TableOptions.columns is for CSV and Parquet prompts files; a JSONL prompt names its fields")
    source = display_name(path)
    stream = open_input(path)
    try:
        for number, line in iter_lines(stream, source):
            yield number, decode_line(source, number, line, PromptCase)
    finally:
        if str(path) != "-":
            stream.close()


def iter_prompts(
    path: str | Path, timeout_unit: TimeoutUnit | None = None, table: TableOptions | None = None
) -> Iterator[tuple[int, PromptCase]]:
    """Decode prompts lazily, rejecting a repeated id at the line that repeats it; with a
    ``timeout_unit``, a prompt's ``timeout`` is converted to seconds (None: left as written).
    ``table`` says how to read a CSV or Parquet file (without it: by extension, columns by name)."""
    source = display_name(path)
    error = error_type(detect_format(path, table.format if table else None))
    seen: dict[str, int] = {}
    for number, case in _decoded(path, table):
        if case.id in seen:
            raise error(source, number, f"duplicate id {case.id!r} (first on line {seen[case.id]})", "id")
        if not case.turns or not all(isinstance(t, str) for t in case.turns):
            raise error(source, number, "must be a string or a non-empty list of strings", "input")
        if "\0" in case.id:
            raise error(source, number, "must not contain a NUL character", "id")
        if case.timeout is not None and not (math.isfinite(case.timeout) and case.timeout > 0):
            raise error(source, number, f"must be a number greater than 0, got {case.timeout!r}", "timeout")
        seen[case.id] = number
        if timeout_unit is not None and case.timeout is not None:
            case.timeout = _seconds(case.timeout, timeout_unit, error(source, number, "", "timeout"))
        yield number, case


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
    if str(path) == "-":
        return True
    try:
        return not stat.S_ISREG(os.stat(path).st_mode)
    except OSError:
        return False  # let the open report why


def prescan(path: str | Path, timeout_unit: TimeoutUnit | None = None, table: TableOptions | None = None) -> set[str] | None:
    """Validate a whole regular prompts file before running; its ids (None for a stream, read once later)."""
    if is_stream(path):
        return None
    ids = {case.id for _, case in iter_prompts(path, timeout_unit, table)}
    if not ids:
        raise JsonlError(display_name(path), 0, "holds no prompts")
    return ids


def require_lines(path: str | Path, what: str) -> None:
    """A regular file with no non-blank line is an error before anything runs (streams are checked
    by their reader once read)."""
    if is_stream(path):
        return
    stream = open_input(path)
    try:
        if next(iter_lines(stream, display_name(path)), None) is None:
            raise JsonlError(display_name(path), 0, f"holds no {what}")
    finally:
        stream.close()


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


async def prompt_cases(
    path: str | Path,
    keep: Callable[[PromptCase], bool] = lambda c: True,
    timeout_unit: TimeoutUnit | None = None,
    table: TableOptions | None = None,
) -> AsyncIterator[PromptCase]:
    async for _, case in in_batches(iter_prompts(path, timeout_unit, table)):
        if keep(case):
            yield case
