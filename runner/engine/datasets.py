"""Prompts from CSV and Parquet tables: one row is one PromptCase, read a row at a time.

Which format a prompts file is in comes from ``--prompts-format`` or, without
it, from the extension (``.csv``; ``.parquet`` or ``.pq``; anything else is
JSONL). Columns named like PromptCase fields (``id``, ``input``, ``hint`` or
``expected``, ``reference``, ``timeout``) fill them; ``--map input=question``
names another column for a field; every other column goes into ``metadata``.
A table without an ``id`` column numbers its rows (``1``, ``2``, ...), so a
resumed run still finds its place as long as the file is not reordered.

CSV is read through the ``csv`` module one row at a time (a field is capped by
its default 128 KiB limit), errors naming ``file:line``; Parquet through
pyarrow's ``ParquetFile.iter_batches``, errors naming ``file:row N``. pyarrow is
the optional ``waza[parquet]`` extra: without it a Parquet file is a one-line
usage error naming the extra.
"""

from __future__ import annotations

import datetime
import io
import math
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from waza.protocol.codec import RecordError
from waza.protocol.errors import ConfigError
from waza.protocol.jsonl import JsonlError, display_name, open_input
from waza.protocol.records import PromptCase

__all__ = ["FORMATS", "PromptFormat", "RowError", "TableOptions", "detect_format", "error_type", "iter_table", "parse_map"]

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


@dataclass(slots=True)
class TableOptions:
    """How to read a prompts file: its format (None: by extension) and column -> field renames."""

    format: PromptFormat | None = None
    columns: dict[str, str] = field(default_factory=dict)  # field -> column


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


def iter_table(path: str | Path, fmt: PromptFormat, columns: dict[str, str]) -> Iterator[tuple[int, PromptCase]]:
    """The prompts of a CSV or Parquet file with their line (CSV) or row (Parquet) numbers."""
    rows = _csv_rows(path) if fmt == "csv" else _parquet_rows(path)
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


def _csv_rows(path: str | Path) -> Iterator[tuple[int, dict[str, str]]]:
    import csv  # here, not at import: a JSONL run never needs it

    source = display_name(path)
    raw = open_input(path)
    text = io.TextIOWrapper(raw, encoding="utf-8-sig", newline="")
    reader = csv.reader(text)
    header: list[str] | None = None
    last = 0
    try:
        while True:
            try:
                cells = next(reader)
            except StopIteration:
                break
            except csv.Error as exc:
                raise JsonlError(source, reader.line_num, f"bad CSV: {exc}") from None
            except UnicodeDecodeError:
                raise JsonlError(source, last + 1, "is not UTF-8 text") from None
            number, last = last + 1, reader.line_num
            if not cells or cells == [""]:
                continue
            if header is None:
                header = [c.strip() for c in cells]
                repeated = next((c for i, c in enumerate(header) if c in header[:i] or not c), None)
                if repeated is not None:
                    raise JsonlError(source, number, f"column {repeated!r} is empty or repeated in the header")
                continue
            if len(cells) != len(header):
                raise JsonlError(source, number, f"has {len(cells)} fields, the header has {len(header)}")
            yield number, dict(zip(header, cells, strict=True))
    finally:
        if str(path) != "-":
            text.close()
        else:
            text.detach()


def _parquet_rows(path: str | Path) -> Iterator[tuple[int, dict[str, Any]]]:
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:
        raise ConfigError("reading Parquet prompts needs pyarrow: pip install 'waza[parquet]'") from None
    source = display_name(path)
    raw = open_input(path)
    try:
        try:
            table = pq.ParquetFile(raw)
        except (pa.ArrowException, OSError, ValueError) as exc:  # not a Parquet file
            raise JsonlError(source, 0, f"is not a readable Parquet file: {' '.join(str(exc).split())[:200]}") from None
        number = 0
        for batch in table.iter_batches(batch_size=BATCH_ROWS):
            for row in batch.to_pylist():
                number += 1
                yield number, row
    finally:
        raw.close()
