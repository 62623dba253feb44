"""The grader protocol's rules, independent of how a grader is run.

A grader answers one JSON object. Two dialects are accepted:
``{pass, score, reasoning, outcome, details}`` (acp-harness, canonical) and
``{passed, score, message, details}`` (the waza reference). Anything else, or a
value that cannot be trusted (score outside [0, 1], NaN, pass not a boolean),
is a *grader error*, never a fail: a lying grader must not decide a verdict.
``{"error": "why"}`` is a grader saying itself that it could not grade (the
only way a worker can, since it must keep running); it too is an error grade.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Iterable
from typing import Any

import orjson

from .records import PROTOCOL_VERSION, CaptureResult, Grade, GraderRequest, GraderResult, GradeStatus, Verdict


class GraderProtocolError(ValueError):
    """The grader's answer breaks the protocol; the message says how, for the error grade."""


def parse_result_bytes(raw: bytes) -> GraderResult:
    """Parse a grader's whole stdout: exactly one JSON object, surrounding whitespace allowed."""
    text = raw.strip()
    if not text:
        raise GraderProtocolError("grader printed nothing on stdout")
    try:
        value = orjson.loads(text)
    except orjson.JSONDecodeError as exc:
        preview = text[:80].decode("utf-8", "replace")
        raise GraderProtocolError(f"grader stdout is not one JSON document ({exc}); it starts {preview!r}") from None
    return normalize_result(value)


def echo_request_id(request: Any, answer: dict[str, Any]) -> dict[str, Any]:
    """``answer`` carrying the request's ``requestId`` (protocol 2), which every worker answer must echo.

    ``request`` is the decoded request, or anything a worker could not read as
    one (then there is no id to echo and the answer goes as it is)."""
    rid = request.get("requestId") if isinstance(request, dict) else None
    if rid is not None:
        answer["requestId"] = rid
    return answer


def normalize_result(value: Any) -> GraderResult:
    """Check a decoded grader answer and bring either dialect to the canonical record."""
    if isinstance(value, GraderResult):
        value = value.to_dict()
    if not isinstance(value, dict):
        raise GraderProtocolError(f"grader result must be a JSON object, got {type(value).__name__}")
    error = value.get("error")
    if error is not None and "pass" not in value and "passed" not in value and "status" not in value:
        raise GraderProtocolError(f"grader reported an error: {error}")
    status = value.get("status")
    if status is not None and status not in ("pending", "passed", "failed"):
        raise GraderProtocolError(f"grader result status must be 'pending' when given, got {status!r}")
    if "pass" in value and "passed" in value and value["pass"] != value["passed"]:
        raise GraderProtocolError("grader result has both 'pass' and 'passed' and they disagree")
    verdict = value.get("pass", value.get("passed"))
    score = value.get("score")
    reasoning = value.get("reasoning", value.get("message"))
    outcome = value.get("outcome")
    details = value.get("details")
    if status == "pending":
        if verdict is not None or score is not None:
            raise GraderProtocolError("a pending result must not carry pass or score")
    else:
        if verdict is None:
            raise GraderProtocolError("grader result lacks 'pass' (boolean)")
        if not isinstance(verdict, bool):
            raise GraderProtocolError(f"grader result 'pass' must be a boolean, got {verdict!r}")
        if score is None:
            raise GraderProtocolError("grader result lacks 'score' (number in [0, 1])")
        if isinstance(score, bool) or not isinstance(score, (int, float)):
            raise GraderProtocolError(f"grader result 'score' must be a number, got {score!r}")
        if not math.isfinite(score) or not 0.0 <= score <= 1.0:
            raise GraderProtocolError(f"grader result 'score' must be finite and in [0, 1], got {score!r}")
        if status is not None and (status == "passed") != verdict:
            raise GraderProtocolError(f"grader result status {status!r} contradicts pass={verdict}")
    if reasoning is not None and not isinstance(reasoning, str):
        raise GraderProtocolError("grader result 'reasoning' must be a string")
    if outcome is not None and not isinstance(outcome, dict):
        raise GraderProtocolError("grader result 'outcome' must be an object")
    if details is not None and not isinstance(details, dict):
        raise GraderProtocolError("grader result 'details' must be an object")
    return GraderResult(
        passed=verdict,
        score=float(score) if score is not None else None,
        reasoning=reasoning,
        outcome=outcome,
        details=details,
        status="pending" if status == "pending" else None,
    )


def grade_from_result(name: str, result: GraderResult, *, weight: float, duration_ms: float) -> Grade:
    status: GradeStatus = "pending" if result.status == "pending" else ("passed" if result.passed else "failed")
    return Grade(
        name=name,
        status=status,
        passed=result.passed,
        score=result.score,
        reasoning=result.reasoning or "",
        outcome=result.outcome or {},
        details=result.details or {},
        weight=weight,
        duration=round(duration_ms, 3),
    )


def error_grade(name: str, reason: str, *, weight: float, duration_ms: float, details: dict[str, Any] | None = None) -> Grade:
    return Grade(
        name=name,
        status="error",
        reasoning="",
        weight=weight,
        duration=round(duration_ms, 3),
        error=reason,
        details=details or {},
    )


_ONE_REASON = {
    "error": "grader error: {}",
    "failed": "failed: {}",
    "pending": "pending review: {}",
    "passed": "all graders passed",
}


def aggregate(grades: Iterable[Grade]) -> Verdict | None:
    """Combine grades: any error -> error; else any fail -> failed; else any pending -> pending.

    The score is the weighted mean of the grades that have one (errors and
    pending grades have none); with all weights zero it is the plain mean.
    """
    grades = list(grades)
    if not grades:
        return None
    if len(grades) == 1:  # one grader, the usual case: the same arithmetic without the bookkeeping
        (g,) = grades
        score = g.score
        if score is not None and g.weight > 0:
            score = score * g.weight / g.weight  # bit-for-bit what the weighted mean gives
        return Verdict(
            status=g.status,
            passed={"passed": True, "failed": False}.get(g.status),
            score=None if g.status == "error" else score,
            reasoning=_ONE_REASON[g.status].format(g.name),
        )
    errors = [g for g in grades if g.status == "error"]
    failed = [g for g in grades if g.status == "failed"]
    pending = [g for g in grades if g.status == "pending"]
    scored = [g for g in grades if g.score is not None]
    total_weight = sum(g.weight for g in scored)
    if not scored:
        score = None
    elif total_weight > 0:
        score = sum(g.score * g.weight for g in scored if g.score is not None) / total_weight
    else:
        score = sum(g.score for g in scored) / len(scored)  # type: ignore[misc]
    if errors:
        names = ", ".join(g.name for g in errors)
        return Verdict(status="error", passed=None, score=None, reasoning=f"grader error: {names}")
    if failed:
        names = ", ".join(g.name for g in failed)
        return Verdict(status="failed", passed=False, score=score, reasoning=f"failed: {names}")
    if pending:
        names = ", ".join(g.name for g in pending)
        return Verdict(status="pending", passed=None, score=score, reasoning=f"pending review: {names}")
    return Verdict(status="passed", passed=True, score=score, reasoning="all graders passed")


def merged_outcome(grades: Iterable[Grade]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for g in grades:
        out.update(g.outcome)
    return out


def settle(result: CaptureResult, grades: list[Grade]) -> CaptureResult:
    """Attach grades to a result and derive score, outcome and status (agent errors win)."""
    result.grades = grades
    result.score = aggregate(grades)
    result.outcome = merged_outcome(grades)
    if result.errors:
        result.status = "error"
    elif result.score is None:
        result.status = "ungraded"
    else:
        result.status = result.score.status
    return result


def json_copy(value: Any) -> Any:
    """A deep copy made through JSON (what a grader process would read): in C, ten times faster
    than ``copy.deepcopy``. A value JSON cannot carry (from a Python API caller's metadata)
    falls back to deepcopy."""
    if not value:  # an empty dict or list, the usual metadata, config and errors
        return type(value)()
    try:
        return orjson.loads(orjson.dumps(value))
    except TypeError:
        return copy.deepcopy(value)


def request_json(result: CaptureResult, config: dict[str, Any]) -> dict[str, Any]:
    """``request_for(result, config).to_dict()`` built straight from the result: the JSON a grader
    process reads, for a Python function that takes it as a dict. It shares no list or dict with
    ``result`` or ``config`` (a record's ``to_dict`` makes new ones), so the function may change it
    freely; unlike a JSON copy of the whole request, the long strings (output, messages) are not
    copied, as they cannot change."""
    timing, usage, exit_ = result.timing, result.usage, result.exit
    return {
        "protocol": PROTOCOL_VERSION,
        "id": result.id,
        "input": result.input if type(result.input) is str else json_copy(result.input),
        "output": result.output,
        "hint": result.hint,
        "expected": result.hint,
        "reference": result.reference,
        "trajectory": [s.to_dict() for s in result.trajectory],
        "metadata": json_copy(result.metadata),
        "cwd": result.cwd,
        "config": json_copy(config),
        "timing": None if timing is None else timing.to_dict(),
        "usage": None if usage is None else usage.to_dict(),
        "exit": None if exit_ is None else exit_.to_dict(),
        "errors": json_copy(result.errors),
        "toolErrors": result.tool_errors,
        "trial": result.trial,
        "requestId": None,
        **({"outcome": json_copy(result.outcome)} if result.outcome else {}),
    }


#: A result's records of its mocks' calls (a suite's command_mocks and mcp_mocks), passed on to graders.
MOCK_CALL_KEYS = ("command_invocations", "mcp_mock_calls")


def request_for(result: CaptureResult, config: dict[str, Any]) -> GraderRequest:
    """The request a grader sees for a captured result; ``expected`` mirrors ``hint`` for older graders."""
    return GraderRequest(
        id=result.id,
        input=result.input,
        output=result.output,
        hint=result.hint,
        expected=result.hint,
        reference=result.reference,
        trajectory=[s.to_dict() for s in result.trajectory],
        metadata=result.metadata,
        cwd=result.cwd,
        config=config,
        timing=result.timing.to_dict() if result.timing else None,
        usage=result.usage.to_dict() if result.usage else None,
        exit=result.exit.to_dict() if result.exit else None,
        errors=result.errors,
        tool_errors=result.tool_errors,
        trial=result.trial,
        unknown={
            **({"outcome": result.outcome} if result.outcome else {}),
            **{k: result.unknown[k] for k in MOCK_CALL_KEYS if k in result.unknown},
        },
    )
