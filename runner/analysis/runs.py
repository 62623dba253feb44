"""Reading a results file whose kind is not declared: CaptureResult or TrialResult lines.

The analysis commands take what ``waza capture`` and ``waza trials`` wrote
without a flag saying which (and what acp-harness wrote, read through
:mod:`.harness_format`): the first line decides (a TrialResult has a
``trials`` list and counts ``k``/``n``/``passes``), and every later line must
be of the same kind, so a file mixing both is an error at the line that breaks
the pattern rather than a silently wrong statistic.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from waza.protocol.analysis_records import RunKind
from waza.protocol.codec import RecordError
from waza.protocol.jsonl import JsonlError, display_name, iter_lines, open_input, parse_line
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


@dataclass
class ResultsFile:
    """An open results file: its kind, known once the first line is read, and its records."""

    path: str
    kind: RunKind | None = None

    @property
    def source(self) -> str:
        return display_name(self.path)

    def __iter__(self) -> Iterator[tuple[int, Result]]:
        """(line number, record) lazily; the kind is fixed by the first line."""
        stream = open_input(self.path)
        try:
            for number, line in iter_lines(stream, self.source):
                value = parse_line(self.source, number, line)
                kind = kind_of(value)
                if self.kind is None:
                    self.kind = kind
                elif kind != self.kind:
                    raise JsonlError(self.source, number, f"is a {kind} result, but the file started with {self.kind} results")
                try:
                    record = _record_class(kind).from_dict(from_harness(value, kind))
                except RecordError as exc:
                    raise JsonlError(self.source, number, exc.message, exc.path) from None
                yield number, record
        finally:
            if self.path != "-":
                stream.close()


def check_readable(path: str) -> None:
    """Fail on an unreadable input before any output is opened."""
    if path != "-":
        open_input(path).close()
