"""The human review queue: what the ``human`` graders ask a person to look at.

A pending review item is one line of the queue file (JSONL, appended as
results are graded). ``waza review`` shows the items and writes the person's
answers as :class:`~waza.protocol.trial_records.CalibrationLabel` lines, the
format ``waza calibrate --labels`` reads and the human graders look labels up
in, so one labels file serves both.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

from .codec import Record, doc


@dataclass(slots=True, kw_only=True)
class ReviewItem(Record):
    """One output waiting for a person's verdict."""

    _omit_none: ClassVar[bool] = True

    id: str = field(metadata=doc("The result's id.", minLength=1))
    trial: int | None = field(default=None, metadata=doc("Trial number, for results of waza trials."))
    grader: str = field(metadata=doc("The built-in that queued it: human or human_calibration."))
    calibrates: str | None = field(default=None, metadata=doc("human_calibration: the automated grader this label checks."))
    instructions: str = field(default="", metadata=doc("What the reviewer should look for."))
    criteria: list[str] = field(default_factory=list, metadata=doc("Checklist for the reviewer."))
    input: str | list[str] = field(default="", metadata=doc("The prompt (or its user turns)."))
    output_preview: str = field(default="", metadata=doc("The agent's output, cut to the configured preview length."))
    output_chars: int = field(default=0, metadata=doc("Length of the whole output, in characters.", minimum=0))
    hint: str | None = None
    reference: str | None = None
    queued: int = field(metadata=doc("Epoch ms when the item was queued."))

    @property
    def key(self) -> str:
        """How a person names the item on the command line: ``ID``, or ``ID#TRIAL`` for a trial."""
        return self.id if self.trial is None else f"{self.id}#{self.trial}"
