"""The summaries of one line of a results file, for ``waza summarize``.

A line of a capture file is decoded straight into lean copies of the records
(the same fields, types and constraints, so it is accepted exactly when the
record would be), except that what a summary never reads (a tool call's output
and content blocks, metadata, outcomes, grader details) is kept as raw JSON
instead of being built into Python values; and its summary is made from its
fields without the record or the :class:`.attempts.Attempt` in between. The
line is checked once, in that decode, where :func:`.runs.read_result` checks
its keys first. Any other line (a file's first line, a trials line, acp-harness's
shape, a key named ``unknown``, an integer beyond 64 bits, a line that does not
fit) goes through :func:`.runs.read_result` and :func:`.summaries.summaries`,
which also word its error; both ways give the same summaries.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import msgspec
from msgspec import UNSET, Raw, UnsetType

from waza.protocol.analysis_records import ResultSummary, RunKind
from waza.protocol.jsonl import has_long_digits
from waza.protocol.records import CaptureResult, Grade, ResultStatus, TrajectoryStep
from waza.runner.analysis.runs import read_result
from waza.runner.analysis.summaries import summaries, summary, summary_markdown

__all__ = ["capture_summary", "line_summaries", "write_summaries"]


def _lean(
    record: type[msgspec.Struct], name: str, changed: dict[str, tuple[Any, Any]], *, strict: bool = True
) -> type[msgspec.Struct]:
    """A Struct with ``record``'s fields (names, JSON names, types, defaults) but those in ``changed``
    (field name -> (type, default)); a field ``changed`` names that the record lacks is added."""
    fields: list[tuple[str, Any] | tuple[str, Any, Any]] = []
    names: dict[str, str] = {}
    for f in msgspec.structs.fields(record):
        names[f.name] = f.encode_name
        if f.name in changed:
            fields.append((f.name, *changed.pop(f.name)))
        elif f.default_factory is not msgspec.NODEFAULT:  # made once: a lean struct is only read
            fields.append((f.name, f.type, f.default_factory()))
        elif f.default is not msgspec.NODEFAULT:
            fields.append((f.name, f.type, f.default))
        else:
            fields.append((f.name, f.type))  # required
    for extra, (kind, default) in changed.items():
        names[extra] = extra
        fields.append((extra, kind, default))
    # gc=False: a lean struct holds decoded JSON, which cannot form a cycle.
    return msgspec.defstruct(name, fields, kw_only=True, rename=names, forbid_unknown_fields=strict, gc=False)


class _Object(msgspec.Struct, frozen=True, gc=False):
    """Any JSON object, its values skipped (their syntax checked): what ``dict[str, Any]`` accepts
    (JSON keys are strings), without building the dict."""


_NO_OBJECT = _Object()

_Step = _lean(
    TrajectoryStep,
    "_Step",
    {"output": (Raw, Raw(b"null")), "tool_content": (list[Raw] | None, None), "locations": (list[Raw] | None, None)},
)
_Grade = _lean(Grade, "_Grade", {"outcome": (_Object, _NO_OBJECT), "details": (_Object, _NO_OBJECT)})
#: Unknown top-level keys are skipped: CaptureResult keeps them aside, and a summary does not show them.
#: ``status`` unset (acp-harness's shape), ``unknown`` or ``trials`` set: the general way decides.
_Capture = _lean(
    CaptureResult,
    "_Capture",
    {
        "trajectory": (list[_Step], []),  # type: ignore[valid-type]
        "grades": (list[_Grade], []),  # type: ignore[valid-type]
        "metadata": (_Object, _NO_OBJECT),
        "outcome": (_Object, _NO_OBJECT),
        "status": (ResultStatus | UnsetType, UNSET),
        "unknown": (Raw | UnsetType, UNSET),
        "trials": (Raw | UnsetType, UNSET),
    },
    strict=False,
)
_decode = msgspec.json.Decoder(_Capture).decode


def line_summaries(
    source: str, number: int, line: bytes, kind: RunKind | None, width: int
) -> tuple[RunKind, list[ResultSummary]]:
    """The file's kind and the summaries of one line (``kind``: the file's, None for its first line);
    a bad line is :func:`.runs.read_result`'s JsonlError."""
    if kind == "capture" and (straight := capture_summary(line, width)) is not None:
        return kind, [straight]
    found, result = read_result(source, number, line, kind)
    return found, summaries(result, width)


def capture_summary(line: bytes, width: int) -> ResultSummary | None:
    """The summary of a line of a capture file (not its first line), decoded into :data:`_Capture`;
    None when the general way (:func:`line_summaries`) must decide."""
    if has_long_digits(line):  # msgspec would take such an integer; read_result refuses it
        return None
    if not line.isascii() and not _utf8(line):  # what the decode skips (metadata, details) it does not check
        return None
    try:
        c: Any = _decode(line)
    except msgspec.MsgspecError:
        return None
    if c.status is UNSET or c.unknown is not UNSET or c.trials is not UNSET:
        return None
    score, timing = c.score, c.timing
    return summary(
        c.id,
        c.trial,
        c.status,
        score.passed if score else None,
        score.score if score else None,
        c.output,
        timing.total if timing else None,
        timing.first_response if timing else None,
        c.input,
        c.trajectory,
        c.grades,
        c.errors,
        c.usage,
        width,
    )


def _utf8(line: bytes) -> bool:
    try:
        line.decode()
    except UnicodeDecodeError:
        return False
    return True


_encode_into = msgspec.json.Encoder().encode_into  # a ResultSummary's JSON is its to_json()


def write_summaries(
    lines: Iterable[tuple[int, bytes]],
    source: str,
    kind: RunKind | None,
    width: int,
    markdown: bool,
    pending: bytearray,
    spill: Callable[[], None] | None = None,
) -> tuple[RunKind | None, int]:
    """Append the summaries of ``lines`` (numbered lines of ``source``, a file of ``kind``; None: not known
    yet) to ``pending``, as JSON lines or Markdown; ``spill`` is called whenever ``pending`` holds a piece
    worth writing. The file's kind and the number of lines read; a bad line is a JsonlError."""
    count = 0
    for number, line in lines:
        count += 1
        # Every capture line after the first: the short way, tried first (and only once).
        one = capture_summary(line, width) if kind == "capture" else None
        if one is None:
            kind, result = read_result(source, number, line, kind)
            made = summaries(result, width)
        else:
            made = [one]
        for each in made:
            if markdown:
                pending += summary_markdown(each).encode()
            else:
                _encode_into(each, pending, -1)
                pending += b"\n"
        if spill is not None and len(pending) >= PIECE:
            spill()
    return kind, count


#: Bytes of summaries gathered before they are written.
PIECE = 1 << 16
