"""What ``waza graders check`` reports: a verdict per protocol rule, with the evidence behind it.

The report is for grader authors working in any language, so every verdict
carries what was sent and what came back (bytes, exit code, stderr tail, time)
and a reason in words; ``--json`` prints this record.
"""

from __future__ import annotations

from typing import Annotated, Literal

from msgspec import Meta

from .codec import Record

RuleStatus = Literal["pass", "fail", "warning"]


class ConformanceEvidence(Record, kw_only=True):
    """One exchange with the grader, trimmed to what explains a verdict."""

    sent: Annotated[str, Meta(description="The start of what was written to the grader's stdin.")] = ""
    sent_bytes: Annotated[int, Meta(ge=0, description="Size of what was written to stdin.")] = 0
    received: Annotated[str, Meta(description="The start of what the grader wrote on stdout.")] = ""
    received_bytes: Annotated[int, Meta(ge=0, description="Size of what the grader wrote on stdout.")] = 0
    exit_code: Annotated[int | None, Meta(description="Exit code; null when killed or still running.")] = None
    signal: Annotated[int | None, Meta(description="Signal that ended the grader, if one did.")] = None
    stderr_tail: Annotated[str, Meta(description="The end of the grader's stderr.")] = ""
    duration: Annotated[float, Meta(description="ms the exchange took.")] = 0.0


class ConformanceRule(Record, kw_only=True):
    """One rule of the protocol and how the grader fared against it."""

    id: Annotated[str, Meta(description="Stable rule name, e.g. valid-result.")]
    description: str
    required: Annotated[bool, Meta(description="A failed required rule makes the grader non-conforming.")]
    status: RuleStatus
    reason: Annotated[str, Meta(description="Why the rule passed, failed or warned.")]
    evidence: list[ConformanceEvidence] = []


class ConformanceReport(Record, kw_only=True):
    """The verdict on one grader: conforming when every required rule passes."""

    grader: Annotated[str, Meta(description="The grader as named on the command line.")]
    argv: Annotated[list[str], Meta(description="The command that was run.")]
    mode: Literal["one-shot", "worker"]
    conforms: bool
    rules: list[ConformanceRule] = []
