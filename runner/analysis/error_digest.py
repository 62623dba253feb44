"""Why prompts ended as errors, said once at the end of a run on stderr.

A run whose every record is an error ("agent command not found", "not JSON")
should not need the JSONL opened to learn why. The digest keeps the distinct
reasons with their counts (bounded: a run of a million different errors keeps
memory flat) and the first agent stderr tail seen, and prints a few lines.
"""

from __future__ import annotations

import sys
from collections import Counter
from typing import TextIO

from waza.protocol.inert import inert
from waza.protocol.io.secrets import Redactor
from waza.protocol.records import CaptureResult
from waza.runner.wording import count

__all__ = ["ErrorDigest", "error_reasons"]

#: Distinct reasons kept (later new ones are counted as "other") and shown.
MAX_REASONS = 50
SHOWN = 5
#: Characters of one reason, and lines of the stderr tail, shown.
REASON_WIDTH = 300
STDERR_LINES = 10


def error_reasons(result: CaptureResult) -> list[str]:
    """Why an errored result is an error: its agent errors, then its graders' errors."""
    reasons = list(result.errors)
    reasons += [f"grader {g.name}: {g.error}" for g in result.grades if g.status == "error"]
    return reasons or ["error"]


class ErrorDigest:
    """Counts the reasons of errored results; ``print`` writes them to stderr."""

    def __init__(self) -> None:
        self.reasons: Counter[str] = Counter()
        self.other = 0
        self.errored = 0
        self.stderr: tuple[str, str] | None = None  # (prompt id, tail)

    def add(self, result: CaptureResult) -> None:
        if result.status != "error":
            return
        self.errored += 1
        for reason in error_reasons(result):
            reason = " ".join(reason.split())[:REASON_WIDTH]
            if reason in self.reasons or len(self.reasons) < MAX_REASONS:
                self.reasons[reason] += 1
            else:
                self.other += 1
        if self.stderr is None and result.stderr:
            self.stderr = (result.id + (f" trial {result.trial}" if result.trial else ""), result.stderr)

    def lines(self) -> list[str]:
        if not self.errored:
            return []
        out = [f"{count(self.errored, 'result')} ended as errors:"]
        for reason, times in self.reasons.most_common(SHOWN):
            out.append(f"  {times} x {reason}")
        hidden = sum(self.reasons.values()) - sum(c for _, c in self.reasons.most_common(SHOWN)) + self.other
        if hidden:
            out.append(f"  ... {hidden} more (see the error fields of the output)")
        if self.stderr is not None:
            where, tail = self.stderr
            out.append(f"agent stderr of {where} (last lines):")
            out += [f"  | {line}" for line in tail.rstrip("\n").splitlines()[-STDERR_LINES:]]
        return out

    def print(self, stream: TextIO | None = None) -> None:
        """The lines on stderr, with secrets from the environment masked as in the output and escape
        sequences made inert (agent text goes to the user's terminal)."""
        redact = Redactor()
        for line in self.lines():
            print(f"waza: {inert(redact.text(line))}", file=stream or sys.stderr)
