"""Prompts from CSV and Parquet tables: one row is one PromptCase, read a row at a time.

Which format a prompts file is in comes from ``--prompts-format`` or, without
it, from the extension (``.csv``; ``.parquet`` or ``.pq``; anything else is
JSONL). Columns named like PromptCase fields (``id``, ``input``, ``hint`` or
``expected``, ``reference``, ``timeout``) fill them; ``--map input=question``
names another column for a field; every other column goes into ``metadata``.
A table without an ``id`` column numbers its rows (``1``, ``2``, ...), so a
resumed run still finds its place as long as the file is not reordered.

CSV is read through the ``csv`` module one row at a time (a field is capped by
its default 128 KiB limit, a line by the run's line limit, as JSONL lines are),
errors naming ``file:line``; Parquet through
pyarrow's ``ParquetFile.iter_batches``, errors naming ``file:row N``. pyarrow is
the optional ``waza[parquet]`` extra: without it a Parquet file is a one-line
usage error naming the extra.
"""

from __future__ import annotations

import datetime
import math
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, Literal

import msgspec

from waza.protocol.codec import RecordError
from waza.protocol.errors import ConfigError
from waza.protocol.jsonl import (
    BOM,
    DEFAULT_MAX_LINE,
    JsonlError,
    display_name,
    is_regular,
    line_too_long,
    open_input,
    over_limit,
)
from waza.protocol.records import PromptCase
from waza.runner.install_hints import pip_install

__all__ = [
    "FORMATS",
    "MAX_COLUMNS",
    "PromptFormat",
    "RowError",
    "TableOptions",
    "check_seekable",
    "detect_format",
    "error_type",
    "iter_table",
    "parse_map",
]

PromptFormat = Literal["jsonl", "csv", "parquet"]
FORMATS: tuple[str, ...] = ("jsonl", "csv", "parquet")
#: The PromptCase fields a column can fill; ``expected`` is the older name of ``hint``.
MAPPABLE = ("id", "input", "hint", "reference", "timeout")
ALIASES = {"expected": "hint"}
BATCH_ROWS = 256


class RowError(JsonlError):
    """A bad row of a Parquet file, printed as ``file:row N: field 'x': message``."""

    def __str__(self) -> str:
        where = f"{self.source}:row {self.line}" if self.line else self.source
        what = f"field {self.field!r}: {self.message}" if self.field else self.message
        return f"{where}: {what}"


class TableOptions(msgspec.Struct):
    """How to read a prompts file: its format (None: by extension) and column -> field renames."""

    format: PromptFormat | None = None
    columns: dict[str, str] = msgspec.field(default_factory=dict)  # field -> column


def parse_map(values: list[str] | None) -> dict[str, str]:
    """``--map input=question,hint=answer`` (repeatable) as {field: column}."""
    mapping: dict[str, str] = {}
    for value in values or []:
        for pair in value.split(","):
            name, sep, column = pair.partition("=")
            name, column = ALIASES.get(name.strip(), name.strip()), column.strip()
            if not sep or not name or not column:
                raise ConfigError(f"expected FIELD=COLUMN, got {pair!r}", field="TableOptions.columns")
            if name not in MAPPABLE:
                raise ConfigError(
                    f"unknown field {name!r} (a column can fill {', '.join(MAPPABLE)})", field="TableOptions.columns"
                )
            if name in mapping:
                raise ConfigError(f"field {name!r} is mapped twice", field="TableOptions.columns")
            mapping[name] = column
    return mapping


def detect_format(path: str | Path, given: str | None = None) -> PromptFormat:
    if given is not None:
        if given not in FORMATS:
            raise ConfigError(f"takes {', '.join(FORMATS)}, got {given!r}", field="TableOptions.format")
        fmt: PromptFormat = given  # type: ignore[assignment]
    else:
        suffix = Path(str(path)).suffix.lower()
        fmt = "csv" if suffix == ".csv" else "parquet" if suffix in (".parquet", ".pq") else "jsonl"
    if fmt == "parquet" and str(path) == "-":
        raise ConfigError(
            "a Parquet file cannot be read from stdin (it is read from its end); give its path", field="TableOptions.format"
        )
    return fmt


def error_type(fmt: PromptFormat) -> type[JsonlError]:
    """The error that locates a problem in this format: by line (JSONL, CSV) or by row (Parquet)."""
    return RowError if fmt == "parquet" else JsonlError


def iter_table(
    path: str | Path,
    fmt: PromptFormat,
    columns: dict[str, str],
    max_line: int = DEFAULT_MAX_LINE,
    on_wait: Callable[[], None] | None = None,
) -> Iterator[tuple[int, PromptCase]]:
    """The prompts of a CSV or Parquet file with their line (CSV) or row (Parquet) numbers.

    A CSV line is bounded by ``max_line`` bytes, as a JSONL line is; ``on_wait``: see ``open_input``."""
    rows = _csv_rows(path, max_line, on_wait) if fmt == "csv" else _parquet_rows(path)
    source = display_name(path)
    error = error_type(fmt)
    renames: dict[str, str] | None = None
    for count, (number, row) in enumerate(rows, start=1):
        if renames is None:
            renames = _renames(list(row), columns, source, error)
        yield number, _case(row, renames, count, source, number, error)


def _renames(header: list[str], columns: dict[str, str], source: str, error: type[JsonlError]) -> dict[str, str]:
    """{column: field} for the columns that fill a field; the rest are metadata."""
    missing = [c for c in columns.values() if c not in header]
    if missing:
        raise error(source, 1, f"no column {missing[0]!r} (it has {', '.join(header)})", "TableOptions.columns")
    renames = {column: name for name, column in columns.items()}
    for column in header:
        name = ALIASES.get(column, column)
        if column not in renames and name in MAPPABLE and name not in columns:
            renames[column] = name
    return renames


def _case(
    row: dict[str, Any], renames: dict[str, str], count: int, source: str, number: int, error: type[JsonlError]
) -> PromptCase:
    record: dict[str, Any] = {"id": str(count)}
    metadata: dict[str, Any] = {}
    for column, value in row.items():
        name = renames.get(column)
        if name is None:
            metadata[column] = _plain(value, column, source, number, error)
        elif value is None or value == "":
            if name in ("id", "input"):
                raise error(source, number, "is empty", column)
            continue  # an empty hint, reference or timeout cell is an absent field
        elif name == "timeout" and isinstance(value, str):
            try:
                record[name] = float(value)
            except ValueError:
                raise error(source, number, f"must be a number of seconds, got {value!r}", column) from None
        elif name == "id" and isinstance(value, int) and not isinstance(value, bool):
            record[name] = str(value)
        else:
            record[name] = _plain(value, column, source, number, error)
    if "input" not in record:
        raise error(source, number, "no column gives the prompt (name it in TableOptions.columns: input=COLUMN)", "input")
    record["metadata"] = metadata
    try:
        return PromptCase.from_dict(record)
    except RecordError as exc:
        column = next((c for c, n in renames.items() if n == exc.path), exc.path)
        raise error(source, number, exc.message, column) from None


def _plain(value: Any, column: str, source: str, number: int, error: type[JsonlError]) -> Any:
    """A cell as a JSON value: dates as ISO text, decimals as text; binary is refused, not guessed at."""
    if value is None or isinstance(value, (str, bool, int)):
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise error(source, number, f"{value} cannot be written as JSON", column)
        return value
    if isinstance(value, (datetime.date, datetime.time)):
        return value.isoformat()
    from decimal import Decimal  # here, not at import: only Parquet cells can hold one

    if isinstance(value, (Decimal, datetime.timedelta)):
        return str(value)
    if isinstance(value, dict):
        return {str(k): _plain(v, column, source, number, error) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        if value and all(isinstance(p, tuple) and len(p) == 2 for p in value):  # a Parquet map column
            return {str(k): _plain(v, column, source, number, error) for k, v in value}
        return [_plain(v, column, source, number, error) for v in value]
    raise error(source, number, f"a {type(value).__name__} value cannot be a prompt field or metadata", column)


#: The most columns a CSV header may name (a row may not have more fields than its header).
MAX_COLUMNS = 1 << 16
#: How many fields past the header's count a line may plainly hold before it is refused unsplit
#: (a line with fewer is split and refused with its exact count).
SPLIT_SLACK = 1024


def _text_lines(
    path: str | Path, source: str, max_line: int, on_wait: Callable[[], None] | None, counter: list[int]
) -> Iterator[str]:
    """The physical lines of a CSV file as text, each bounded by ``max_line`` bytes; ``counter[0]``
    is the number of the line last read, so an error names the line it is on (a decoder reading
    ahead in blocks would name a later one)."""
    with open_input(path, on_wait) as stream:
        while line := stream.readline(max_line + 3):
            counter[0] += 1
            if over_limit(line, max_line):
                raise line_too_long(source, counter[0], max_line)
            if counter[0] == 1 and line.startswith(BOM):
                line = line[len(BOM) :]
            try:
                yield line.decode()
            except UnicodeDecodeError as exc:
                raise JsonlError(source, counter[0], f"is not UTF-8 text (byte {exc.start + 1})") from None


def _csv_rows(path: str | Path, max_line: int, on_wait: Callable[[], None] | None) -> Iterator[tuple[int, dict[str, str]]]:
    """Rows as {column: cell} with the number of the line each starts on.

    Lines are bounded as JSONL lines are, and a line that plainly holds more
    fields than the header (more delimiters than columns, no quote that could
    hide one) is refused before it is split into fields, which would cost
    eight bytes a field whatever the line's size."""
    import csv  # here, not at import: a JSONL run never needs it

    source = display_name(path)
    counter = [0]
    lines = _text_lines(path, source, max_line, on_wait, counter)
    header: list[str] | None = None

    def checked() -> Iterator[str]:
        for line in lines:
            most = MAX_COLUMNS if header is None else len(header) + SPLIT_SLACK
            if line.count(",") >= most and '"' not in line:
                what = (
                    f"more than {MAX_COLUMNS} columns"
                    if header is None
                    else f"more than {most} fields, the header has {len(header)}"
                )
                raise JsonlError(source, counter[0], f"has {what}")
            yield line

    # strict: a quote the file never closes is an error (not a last field that swallows the rest of the file),
    # and so is text after a closing quote ("a"b), which would otherwise be glued on silently
    reader = csv.reader(checked(), strict=True)
    while True:
        starts = counter[0] + 1  # the line the next row starts on
        try:
            cells = next(reader)
        except StopIteration:
            break
        except csv.Error as exc:
            if "unexpected end of data" in str(exc):
                raise JsonlError(source, starts, "has a quoted field that is never closed (the file ends inside it)") from None
            raise JsonlError(source, counter[0], f"bad CSV: {exc}") from None
        number = counter[0]
        if not cells or cells == [""]:
            continue
        if header is None:
            if len(cells) > MAX_COLUMNS:
                raise JsonlError(source, number, f"has more than {MAX_COLUMNS} columns")
            header = [c.strip() for c in cells]
            seen: set[str] = set()
            for column in header:
                if not column or column in seen:
                    raise JsonlError(source, number, f"column {column!r} is empty or repeated in the header")
                seen.add(column)
            continue
        if len(cells) != len(header):
            raise JsonlError(source, number, f"has {len(cells)} fields, the header has {len(header)}")
        yield number, dict(zip(header, cells, strict=True))


def check_seekable(path: str | Path) -> None:
    """A Parquet file is read from its end, so it must be a regular file: a FIFO or a device is refused
    at once instead of blocking on a read that can never seek."""
    if str(path) == "-" or (Path(path).exists() and not is_regular(path)):
        raise JsonlError(
            display_name(path), 0, "is not a regular file: a Parquet file is read from its end, so it cannot be a pipe or a FIFO"
        )


def _parquet_rows(path: str | Path) -> Iterator[tuple[int, dict[str, Any]]]:
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:
        raise ConfigError(f"reading Parquet prompts needs pyarrow: {pip_install('parquet')}") from None
    source = display_name(path)
    check_seekable(path)
    with open_input(path) as raw:
        try:
            table = pq.ParquetFile(raw)
        except (pa.ArrowException, OSError, ValueError) as exc:  # not a Parquet file
            raise JsonlError(source, 0, f"is not a readable Parquet file: {_short(exc)}") from None
        number = 0
        batches = table.iter_batches(batch_size=BATCH_ROWS)
        while True:
            try:
                batch = next(batches, None)
            except (pa.ArrowException, OSError, ValueError) as exc:  # a damaged page
                raise RowError(source, number + 1, f"cannot be read: {_short(exc)}") from None
            if batch is None:
                return
            try:
                rows = batch.to_pylist()
            except (pa.ArrowException, OverflowError, ValueError):  # a date or time Python cannot hold: find its row
                rows = None
            for index in range(batch.num_rows):
                number += 1
                if rows is not None:
                    yield number, rows[index]
                    continue
                try:
                    row = batch.slice(index, 1).to_pylist()[0]
                except (pa.ArrowException, OverflowError, ValueError) as exc:
                    raise RowError(source, number, f"holds a value Python cannot represent: {_short(exc)}") from None
                yield number, row


def _short(exc: BaseException) -> str:
    return " ".join(str(exc).split())[:200]
