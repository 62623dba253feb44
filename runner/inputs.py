"""Reading prompts: validated up front when the file can be read twice, streamed always.

A prompts file is checked whole before anything runs (bad JSON, missing or
duplicate ids, wrong types: one line naming file, line and field, exit 2), yet
only the ids are held in memory. Stdin cannot be read twice, so there each line
is checked as it arrives and a bad one stops the run after what is in flight.
Lines are pulled in batches from a worker thread so a slow pipe never blocks
the event loop. CSV and Parquet files are read row by row the same way
(``datasets``); the checks here apply to every format.
"""

from __future__ import annotations

import math
from collections.abc import AsyncIterator, Callable, Iterable, Iterator
from itertools import islice
from pathlib import Path
from typing import Literal, TypeVar

import anyio

from waza.protocol.errors import ConfigError
from waza.protocol.jsonl import JsonlError, decode_line, display_name, iter_lines, open_input
from waza.protocol.records import PromptCase

from .datasets import TableOptions, detect_format, error_type, iter_table

T = TypeVar("T")

#: How a prompt's ``timeout`` is read: ``s`` (waza's unit), ``ms`` (acp-harness's), or ``auto``: seconds,
#: refusing a value of AMBIGUOUS_TIMEOUT or more, which is far likelier an acp-harness file's milliseconds.
TimeoutUnit = Literal["auto", "s", "ms"]
AMBIGUOUS_TIMEOUT = 1000

BATCH = 256


async def in_batches(source: Iterable[T], size: int = BATCH) -> AsyncIterator[T]:
    """Iterate a blocking iterator without blocking the loop: one thread hop per batch."""
    iterator = iter(source)
    while True:
        batch = await anyio.to_thread.run_sync(lambda: list(islice(iterator, size)))
        if not batch:
            return
        for value in batch:
            yield value


def _decoded(path: str | Path, table: TableOptions | None) -> Iterator[tuple[int, PromptCase]]:
    """Prompts as written, with their line (or Parquet row) numbers: JSONL, CSV or Parquet."""
    table = table or TableOptions()
    fmt = detect_format(path, table.format)
    if fmt != "jsonl":
        yield from iter_table(path, fmt, table.columns)
        return
    if table.columns:
        raise ConfigError("--map is for CSV and Parquet prompts files; a JSONL prompt names its fields", field="--map")
    source = display_name(path)
    stream = open_input(path)
    try:
        for number, line in iter_lines(stream):
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
            raise error(source, number, f"must be a number of seconds greater than 0, got {case.timeout!r}", "timeout")
        seen[case.id] = number
        if timeout_unit is not None and case.timeout is not None:
            case.timeout = _seconds(case.timeout, timeout_unit, error(source, number, "", "timeout"))
        yield number, case


def _seconds(value: float, unit: TimeoutUnit, where: JsonlError) -> float:
    if unit == "ms":
        return value / 1000
    if unit == "auto" and value >= AMBIGUOUS_TIMEOUT:
        raise type(where)(
            where.source, where.line,
            f"{value:g} is ambiguous: waza reads seconds, acp-harness files milliseconds; "
            "pass --prompt-timeout-unit s or ms",
            "timeout",
        )
    return value


def prescan(path: str | Path, timeout_unit: TimeoutUnit | None = None, table: TableOptions | None = None) -> int:
    """Validate a whole prompts file (not stdin) before running; returns the number of prompts."""
    if str(path) == "-":
        return -1
    count = 0
    for _ in iter_prompts(path, timeout_unit, table):
        count += 1
    if count == 0:
        raise JsonlError(display_name(path), 0, "holds no prompts")
    return count


async def prompt_cases(
    path: str | Path,
    keep: Callable[[PromptCase], bool] = lambda c: True,
    timeout_unit: TimeoutUnit | None = None,
    table: TableOptions | None = None,
) -> AsyncIterator[PromptCase]:
    async for _, case in in_batches(iter_prompts(path, timeout_unit, table)):
        if keep(case):
            yield case
