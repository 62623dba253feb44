"""The human review queue: what the ``human`` graders ask a person to look at.

A pending review item is one line of the queue file (JSONL, appended as
results are graded). ``waza review`` shows the items and writes the person's
answers as :class:`~waza.protocol.trial_records.CalibrationLabel` lines, the
format ``waza calibrate --labels`` reads and the human graders look labels up
in, so one labels file serves both.
"""

from __future__ import annotations

from typing import Annotated

from msgspec import Meta

from .codec import Record, always


class ReviewItem(Record, kw_only=True, omit_defaults=True):
    """One output waiting for a person's verdict."""

    id: Annotated[str, Meta(min_length=1, description="The result's id.")]
    trial: Annotated[int | None, Meta(description="Trial number, for results of waza trials.")] = None
    grader: Annotated[str, Meta(description="The built-in that queued it: human or human_calibration.")]
    calibrates: Annotated[str | None, Meta(description="human_calibration: the automated grader this label checks.")] = None
    instructions: Annotated[str, Meta(description="What the reviewer should look for.")] = always("")
    criteria: Annotated[list[str], Meta(description="Checklist for the reviewer.")] = always([])
    input: Annotated[str | list[str], Meta(description="The prompt (or its user turns).")] = always("")
    output_preview: Annotated[str, Meta(description="The agent's output, cut to the configured preview length.")] = always("")
    output_chars: Annotated[int, Meta(ge=0, description="Length of the whole output, in characters.")] = always(0)
    hint: str | None = None
    reference: str | None = None
    queued: Annotated[int, Meta(description="Epoch ms when the item was queued.")]

    @property
    def key(self) -> str:
        """How a person names the item on the command line: ``ID``, or ``ID#TRIAL`` for a trial."""
        return self.id if self.trial is None else f"{self.id}#{self.trial}"
