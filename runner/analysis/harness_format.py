"""acp-harness's result and trial shapes, both ways.

waza's records carry more than acp-harness's (every grader's verdict, a status
that tells an error from a fail, user turns, permission and raw event steps),
and acp-harness's readers refuse what they do not know. So a file meant for
acp-harness is written through :func:`to_harness` (``waza export --to acp-harness``),
which keeps exactly its fields; and a file acp-harness wrote is read through
:func:`from_harness`, which fills in what waza's records need (a status derived
from the grader's ``pass``, trial counts) from what the file says, inventing nothing.
"""

from __future__ import annotations

from typing import Any

from waza.protocol.records import CaptureResult, TrajectoryStep
from waza.protocol.trial_records import TrialEntry, TrialResult

__all__ = ["from_harness", "to_harness"]

#: Step types acp-harness knows; waza's others (permission, event) have no place there.
_HARNESS_STEPS = ("message", "thought", "tool_call", "plan")


# ---------------------------------------------------------------- acp-harness -> waza


def from_harness(value: Any, kind: str) -> Any:
    """A line in acp-harness's shape as waza's record; a line in waza's own shape is returned unchanged."""
    if not isinstance(value, dict):
        return value
    if kind == "trials":
        trials = value.get("trials")
        if isinstance(trials, list) and trials and all(isinstance(t, dict) and "trialNum" in t for t in trials):
            return _trial_from_harness(value)
        return value
    if "status" in value:  # waza always writes a status; acp-harness never does
        return value
    return _capture_from_harness(value)


def _verdict(score: Any) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
    """acp-harness's ``score`` (one grader's result) as waza's aggregate verdict, and its outcome."""
    if not isinstance(score, dict) or "status" in score:
        return score, None
    passed = score.get("pass")
    status = "passed" if passed is True else "failed" if passed is False else "error"
    verdict = {"status": status, "pass": passed if isinstance(passed, bool) else None, "score": score.get("score")}
    if isinstance(score.get("reasoning"), str):
        verdict["reasoning"] = score["reasoning"]
    outcome = score.get("outcome")
    return verdict, outcome if isinstance(outcome, dict) else None


def _capture_from_harness(value: dict[str, Any]) -> dict[str, Any]:
    out = dict(value)
    verdict, outcome = _verdict(value.get("score"))
    if verdict is not None:
        out["score"] = verdict
    if outcome is not None and "outcome" not in value:
        out["outcome"] = outcome
    errors = value.get("errors")
    if isinstance(errors, list) and errors:
        out["status"] = "error"
    elif isinstance(verdict, dict) and isinstance(verdict.get("status"), str):
        out["status"] = verdict["status"]
    else:
        out["status"] = "ungraded"
    return out


def _trial_from_harness(value: dict[str, Any]) -> dict[str, Any]:
    entries = [_entry_from_harness(t) for t in value["trials"]]
    passes = sum(e["status"] == "passed" for e in entries)
    n = sum(e["status"] in ("passed", "failed") for e in entries)
    k = value.get("k")
    out: dict[str, Any] = {
        key: value[key] for key in ("id", "input", "hint", "reference", "metadata") if value.get(key) is not None
    }
    out.update(k=k, n=n, passes=passes, trials=entries, flaky=0 < passes < n)
    if isinstance(value.get("passRate"), (int, float)):
        out["passRate"] = value["passRate"]
    for theirs, ours in (("passAtK", "passAtK"), ("passExpK", "passHatK")):
        if isinstance(value.get(theirs), (int, float)) and isinstance(k, int):
            out[ours] = {str(k): value[theirs]}
    scores = [e["score"] for e in entries if e["status"] in ("passed", "failed") and e.get("score") is not None]
    if scores:
        out["meanScore"] = sum(scores) / len(scores)
    return out


def _entry_from_harness(trial: dict[str, Any]) -> dict[str, Any]:
    passed = trial.get("pass")
    status = "passed" if passed is True else "failed" if passed is False else "ungraded"
    entry: dict[str, Any] = {"trial": trial.get("trialNum"), "status": status}
    for key in ("output", "trajectory", "duration", "score"):
        if trial.get(key) is not None:
            entry[key] = trial[key]
    if isinstance(passed, bool):
        entry["pass"] = passed
        grade: dict[str, Any] = {"name": "acp-harness", "status": status, "pass": passed, "score": trial.get("score")}
        if isinstance(trial.get("reasoning"), str):
            grade["reasoning"] = trial["reasoning"]
        if isinstance(trial.get("outcome"), dict):
            grade["outcome"] = trial["outcome"]
        entry["grades"] = [grade]
    return entry


# ---------------------------------------------------------------- waza -> acp-harness


def to_harness(record: CaptureResult | TrialResult) -> dict[str, Any]:
    """The record in exactly acp-harness's shape: its fields only, absent rather than null."""
    if isinstance(record, TrialResult):
        return _trial_to_harness(record)
    return _capture_to_harness(record)


def _steps(steps: list[TrajectoryStep]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for step in steps:
        if step.type not in _HARNESS_STEPS or (step.type == "message" and step.role == "user"):
            continue  # acp-harness records the agent's side only
        item: dict[str, Any] = {"type": step.type, "timestamp": step.timestamp}
        if step.step_id is not None:
            item["stepId"] = step.step_id
        if step.type in ("message", "thought"):
            item["content"] = step.content or ""
        elif step.type == "plan":
            item["entries"] = step.entries or []
        else:
            item["name"] = step.name or step.title or step.tool_call_id or "tool"
            item["status"] = step.status or "pending"
            for key, val in (("input", step.input), ("output", step.output), ("duration", step.duration)):
                if val is not None:
                    item[key] = val
        out.append(item)
    return out


def _capture_to_harness(result: CaptureResult) -> dict[str, Any]:
    out: dict[str, Any] = {"id": result.id, "input": result.input, "output": result.output}
    if result.hint is not None:
        out["hint"] = result.hint
    out["trajectory"] = _steps(result.trajectory)
    out["metadata"] = result.metadata
    t = result.timing
    timing: dict[str, Any] = {"start": 0, "end": 0, "sessionCreation": 0, "total": 0}
    if t is not None:
        timing = {"start": t.start, "end": t.end, "sessionCreation": t.session_creation or 0, "total": t.total}
        for key, val in (("firstResponse", t.first_response), ("inputTokens", t.input_tokens), ("outputTokens", t.output_tokens)):
            if val is not None:
                timing[key] = val
    out["timing"] = timing
    out["toolErrors"] = result.tool_errors
    if result.errors:
        out["errors"] = result.errors
    verdict = result.score
    # acp-harness's score is one verdict with a boolean pass and a number, and it has no error
    # status: an errored result is written as a fail scoring 0 with the reason (never as the pass a
    # grader may have given a broken run); a pending or ungraded one has no score.
    if result.status == "error":
        reasons = result.errors + [f"grader {g.name}: {g.error}" for g in result.grades if g.status == "error"]
        out["score"] = {"pass": False, "score": 0.0, "reasoning": "error: " + ("; ".join(reasons) or "error")}
    elif verdict is not None and isinstance(verdict.passed, bool) and verdict.score is not None:
        out["score"] = {"pass": verdict.passed, "score": verdict.score}
        if verdict.reasoning:
            out["score"]["reasoning"] = verdict.reasoning
    if result.outcome:
        out["outcome"] = result.outcome
    return out


def _reasoning(entry: TrialEntry) -> str:
    return "; ".join(f"{g.name}: {g.reasoning}" for g in entry.grades if g.reasoning)


def _trial_to_harness(result: TrialResult) -> dict[str, Any]:
    out: dict[str, Any] = {"id": result.id, "input": result.input}
    if result.hint is not None:
        out["hint"] = result.hint
    out["k"] = result.k
    if result.pass_rate is not None:
        out["passRate"] = result.pass_rate
    key = str(result.k)
    # acp-harness keeps the estimates for the run's k only, as numbers; k > n has none (left out).
    if result.pass_at_k.get(key) is not None:
        out["passAtK"] = result.pass_at_k[key]
    if result.pass_hat_k.get(key) is not None:
        out["passExpK"] = result.pass_hat_k[key]
    trials = []
    for entry in result.trials:
        item: dict[str, Any] = {
            "trialNum": entry.trial,
            "output": entry.output,
            "trajectory": _steps(entry.trajectory),
            "duration": entry.duration or 0,
        }
        if isinstance(entry.passed, bool):
            item["pass"] = entry.passed
        if entry.score is not None:
            item["score"] = entry.score
        if reasoning := _reasoning(entry):
            item["reasoning"] = reasoning
        outcome = {k: v for g in entry.grades for k, v in g.outcome.items()}
        if outcome:
            item["outcome"] = outcome
        trials.append(item)
    out["trials"] = trials
    if result.metadata:
        out["metadata"] = result.metadata
    return out
