"""Reading a results file whose kind is not declared: CaptureResult or TrialResult lines.

The analysis commands take what ``waza capture`` and ``waza trials`` wrote
without a flag saying which (and what acp-harness wrote, read through
:mod:`.harness_format`): the first line decides (a TrialResult has a
``trials`` list and counts ``k``/``n``/``passes``), and every later line must
be of the same kind, so a file mixing both is an error at the line that breaks
the pattern rather than a silently wrong statistic.

A line of a file whose kind is known is decoded straight from its bytes into
the record (msgspec validates as it parses, in one pass); only a line that
pass cannot take as it is (one that does not fit the record, acp-harness's
shape, a key named ``unknown``, an integer beyond 64 bits) goes the general way
(parse, kind, conversion, record), which also words its error. Both ways make
the same record of a line: the first only skips work the second would undo.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import msgspec

from waza.protocol.analysis_records import RunKind
from waza.protocol.codec import RecordError
from waza.protocol.jsonl import JsonlError, display_name, has_long_digits, iter_lines, open_input, parse_line
from waza.protocol.records import CaptureResult
from waza.protocol.trial_records import TrialResult
from waza.runner.analysis.harness_format import from_harness

Result = CaptureResult | TrialResult

_TRIAL_MARKERS = ("trials", "passes", "passAtK")


def kind_of(value: Any) -> RunKind:
    """trials when the line looks like a TrialResult, else capture."""
    if isinstance(value, dict) and isinstance(value.get("trials"), list) and any(k in value for k in _TRIAL_MARKERS[1:]):
        return "trials"
    return "capture"


def _record_class(kind: RunKind) -> type[CaptureResult] | type[TrialResult]:
    return TrialResult if kind == "trials" else CaptureResult


class ResultsFile(msgspec.Struct):
    """An open results file: its kind, known once the first line is read, and its records.

    ``on_wait`` is called before a read that may wait for a writer (stdin, a pipe, a FIFO): a
    command writing as it reads flushes there, not after every line."""

    path: str
    kind: RunKind | None = None
    on_wait: Callable[[], None] | None = None

    @property
    def source(self) -> str:
        return display_name(self.path)

    def __iter__(self) -> Iterator[tuple[int, Result]]:
        """(line number, record) lazily; the kind is fixed by the first line."""
        for number, line in self.lines():
            self.kind, record = read_result(self.source, number, line, self.kind)
            yield number, record

    def lines(self) -> Iterator[tuple[int, bytes]]:
        """(line number, line) of each non-blank line, lazily, for a reader that decodes them itself
        (and sets :attr:`kind` from :func:`read_result`)."""
        stream = open_input(self.path, self.on_wait)
        try:
            yield from iter_lines(stream, self.source)
        finally:
            if self.path != "-":
                stream.close()


def read_result(source: str, number: int, line: bytes, kind: RunKind | None) -> tuple[RunKind, Result]:
    """The kind and record of one line (``kind``: the file's, from its first line; None for that line).

    A line of another kind than ``kind``, invalid JSON or a bad field is a JsonlError naming
    ``source``, ``number`` and the field."""
    if kind is not None and (record := _as_written(line, kind)) is not None:
        return kind, record
    value = parse_line(source, number, line)
    found = kind_of(value)
    if kind is not None and found != kind:
        raise JsonlError(source, number, f"is a {found} result, but the file started with {kind} results")
    try:
        return found, _record_class(found).from_dict(from_harness(value, found))
    except RecordError as exc:
        raise JsonlError(source, number, exc.message, exc.path) from None


class _Keys(msgspec.Struct):
    """Whether a line names ``status`` and ``unknown`` at its top level (everything else is skipped)."""

    status: Any = msgspec.UNSET
    unknown: Any = msgspec.UNSET


_CAPTURE = msgspec.json.Decoder(CaptureResult)
_TRIALS = msgspec.json.Decoder(TrialResult)
_KEYS = msgspec.json.Decoder(_Keys)


def _as_written(line: bytes, kind: RunKind) -> Result | None:
    """The record a line of a ``kind`` file holds, decoded straight from its bytes, when that is
    certainly what :func:`read_result`'s general way makes of it; None when it may not be.

    It is not when the line does not fit the record (unknown keys included: a line of the other
    kind, acp-harness's trial entries), holds an integer beyond 64 bits (msgspec would take it),
    is a trials line without trials (then it is not a trials line), lacks ``status`` (acp-harness's
    capture lines: their status comes from their score) or has a key named ``unknown`` (where
    CaptureResult keeps the keys it does not know)."""
    if has_long_digits(line):
        return None
    try:
        if kind == "trials":
            trial: TrialResult = _TRIALS.decode(line)
            return trial if trial.trials else None
        keys = _KEYS.decode(line)
        if keys.status is msgspec.UNSET or keys.unknown is not msgspec.UNSET:
            return None
        capture: CaptureResult = _CAPTURE.decode(line)
    except (msgspec.MsgspecError, UnicodeDecodeError):  # the general way words the error
        return None
    return capture


def check_readable(path: str) -> None:
    """Fail on an unreadable input before any output is opened."""
    if path != "-":
        open_input(path).close()
