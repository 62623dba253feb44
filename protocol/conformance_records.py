"""What ``waza graders check`` reports: a verdict per protocol rule, with the evidence behind it.

The report is for grader authors working in any language, so every verdict
carries what was sent and what came back (bytes, exit code, stderr tail, time)
and a reason in words; ``--json`` prints this record.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from .codec import Record, doc

RuleStatus = Literal["pass", "fail", "warning"]


@dataclass(slots=True, kw_only=True)
class ConformanceEvidence(Record):
    """One exchange with the grader, trimmed to what explains a verdict."""

    sent: str = field(default="", metadata=doc("The start of what was written to the grader's stdin."))
    sent_bytes: int = field(default=0, metadata=doc("Size of what was written to stdin.", minimum=0))
    received: str = field(default="", metadata=doc("The start of what the grader wrote on stdout."))
    received_bytes: int = field(default=0, metadata=doc("Size of what the grader wrote on stdout.", minimum=0))
    exit_code: int | None = field(default=None, metadata=doc("Exit code; null when killed or still running."))
    signal: int | None = field(default=None, metadata=doc("Signal that ended the grader, if one did."))
    stderr_tail: str = field(default="", metadata=doc("The end of the grader's stderr."))
    duration: float = field(default=0.0, metadata=doc("ms the exchange took."))


@dataclass(slots=True, kw_only=True)
class ConformanceRule(Record):
    """One rule of the protocol and how the grader fared against it."""

    id: str = field(metadata=doc("Stable rule name, e.g. valid-result."))
    description: str
    required: bool = field(metadata=doc("A failed required rule makes the grader non-conforming."))
    status: RuleStatus
    reason: str = field(metadata=doc("Why the rule passed, failed or warned."))
    evidence: list[ConformanceEvidence] = field(default_factory=list)


@dataclass(slots=True, kw_only=True)
class ConformanceReport(Record):
    """The verdict on one grader: conforming when every required rule passes."""

    grader: str = field(metadata=doc("The grader as named on the command line."))
    argv: list[str] = field(metadata=doc("The command that was run."))
    mode: Literal["one-shot", "worker"]
    conforms: bool
    rules: list[ConformanceRule] = field(default_factory=list)
