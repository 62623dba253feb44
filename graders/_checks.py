"""Graders made of independent checks: score = passed checks / all checks.

Most built-ins (regex, text, file, diff, tool_calls, behavior, tool_constraint,
code, git) are a list of yes/no checks; keeping the arithmetic and the wording
in one place means every one of them reports the same way: the verdict is
"all checks passed", the reasoning names each failed check and why, and the
details carry every check so a user can see what passed too.
"""

from __future__ import annotations

from typing import Any

import msgspec

from waza.protocol.records import GraderResult

from ._patterns import lenient


class Check(msgspec.Struct):
    """One yes/no check; ``why`` says what was seen, reported only when the check failed."""

    name: str
    passed: bool
    why: str = ""

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"check": self.name, "pass": self.passed}
        if self.why and not self.passed:
            out["why"] = self.why
        return out


def from_checks(
    checks: list[Check],
    *,
    outcome: dict[str, Any] | None = None,
    details: dict[str, Any] | None = None,
) -> GraderResult:
    """The result of a list of checks; no checks at all is a pass with nothing to report."""
    failed = [c for c in checks if not c.passed]
    total = len(checks)
    score = (total - len(failed)) / total if total else 1.0
    if not total:
        reasoning = "nothing to check"
    elif failed:
        shown = "; ".join(f"{c.name}: {c.why}" if c.why else c.name for c in failed[:10])
        more = f" (+{len(failed) - 10} more)" if len(failed) > 10 else ""
        reasoning = f"{total - len(failed)}/{total} checks passed; failed: {shown}{more}"
    else:
        reasoning = f"{total}/{total} checks passed"
    return GraderResult(
        passed=not failed,
        score=score,
        reasoning=reasoning,
        outcome=outcome,
        details={"checks": [c.to_dict() for c in checks], **(details or {})},
    )


def no_workspace(grader: str) -> GraderResult:
    """The original's verdict when a workspace grader gets a result without a workspace: failed, score 0."""
    return GraderResult(passed=False, score=0.0, reasoning=f"no workspace directory available for {grader} grading")


def pattern_checks(label: str, patterns: list[str], text: str | None, *, wanted: bool, flags: int = 0) -> list[Check]:
    """One check per regex: found (``wanted``) or not found in ``text``.

    A missing text (None) fails them all; an invalid pattern fails its own
    check (the original waza's verdict), whatever the text.
    """
    checks = []
    for source in patterns:
        name = f"{label} {source!r}"
        compiled = lenient(source, flags)
        if isinstance(compiled, str):
            checks.append(Check(name, False, compiled))
            continue
        if text is None:
            checks.append(Check(name, False, "file missing"))
            continue
        found = compiled.search(text)
        if wanted:
            checks.append(Check(name, found is not None, "no match"))
        else:
            checks.append(Check(name, found is None, f"found {found.group(0)[:80]!r}" if found else ""))
    return checks
