"""What the human graders share: queueing an item for review, and finding a person's label.

A grade asks the labels file first: when a person has labelled this result
(same id and trial, ``pass`` true or false), that label is the verdict (score
1.0 or 0.0). Otherwise the result is appended to the review queue as one
:class:`ReviewItem` line (one write, so concurrent graders never interleave)
and the grade is *pending*: neither pass nor fail in any aggregate.

``queue`` defaults to ``waza-review.jsonl`` and ``labels`` to
``waza-labels.jsonl``, both relative to the current directory; ``waza review``
reads the one and writes the other with the same defaults, so the loop
(capture -> review -> grade again) needs no configuration.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import orjson

from waza.protocol.codec import RecordError
from waza.protocol.records import GraderRequest, GraderResult
from waza.protocol.review_records import ReviewItem
from waza.protocol.trial_records import CalibrationLabel

DEFAULT_QUEUE = "waza-review.jsonl"
DEFAULT_LABELS = "waza-labels.jsonl"
DEFAULT_PREVIEW = 2000


def find_label(path: Path, id: str, trial: int | None) -> CalibrationLabel | None:
    """The last label with a verdict for (id, trial) in the labels file, if the file exists."""
    if not path.is_file():
        return None
    found = None
    with path.open("rb") as lines:
        for number, line in enumerate(lines, 1):
            if not line.strip():
                continue
            try:
                label = CalibrationLabel.from_dict(orjson.loads(line))
            except (orjson.JSONDecodeError, RecordError) as exc:
                raise ValueError(f"{path}:{number}: not a label line: {exc}") from None
            if label.id == id and label.trial == trial and label.passed is not None:
                found = label
    return found


def queue_item(path: Path, item: ReviewItem) -> None:
    line = orjson.dumps(item.to_dict()) + b"\n"
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, line)
    finally:
        os.close(fd)


def review(request: GraderRequest, grader: str, calibrates: str | None = None) -> GraderResult:
    """The person's label as the verdict, or a queued item and a pending grade."""
    config: dict[str, Any] = request.config
    tag = {"calibrates": calibrates} if calibrates else {}
    labels = Path(config.get("labels", DEFAULT_LABELS))
    label = find_label(labels, request.id, request.trial)
    if label is not None:
        return GraderResult(
            passed=label.passed,
            score=1.0 if label.passed else 0.0,
            reasoning=f"human label: {'pass' if label.passed else 'fail'}" + (f" ({label.notes})" if label.notes else ""),
            details={"labels": str(labels), **tag},
        )
    queue = Path(config.get("queue", DEFAULT_QUEUE))
    preview = config.get("preview_chars", DEFAULT_PREVIEW)
    item = ReviewItem(
        id=request.id,
        trial=request.trial,
        grader=grader,
        calibrates=calibrates,
        instructions=config.get("instructions", ""),
        criteria=list(config.get("criteria", [])),
        input=request.input,
        output_preview=request.output[:preview],
        output_chars=len(request.output),
        hint=request.hint if request.hint is not None else request.expected,
        reference=request.reference,
        queued=int(time.time() * 1000),
    )
    queue_item(queue, item)
    return GraderResult(
        status="pending",
        reasoning=f"awaiting human review: waza review {queue}",
        details={"queue": str(queue), "item": item.key, **tag},
    )
