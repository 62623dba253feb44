"""waza's trajectories in Harbor's Agent Trajectory Interchange Format (ATIF), for ``waza export --to atif``.

Harbor's viewer and the training pipelines built on it read one ATIF document
per trial. waza records a trial as a flat list of steps (messages, thoughts,
tool calls with their results, plans, permissions, events); ATIF groups them
into turns: a user step per user turn, and an agent step per model response,
holding its reasoning, its text, the tool calls it made and their results
(``observation``). So the steps are regrouped, in order: an agent step ends
when the agent speaks or thinks again after calling tools, or a user turn
begins. What ATIF has no field for (plans, permissions, raw events, a tool
call's status and kind) goes into the step's ``extra.waza``, so nothing is
dropped; the trial's verdict goes into the document's ``extra.waza``.

Usage is recorded per prompt, not per model call, so it becomes the document's
``final_metrics`` and no step carries ``metrics``. Timestamps are absolute only
where the record has its start time (a CaptureResult's ``timing.start``); a
TrialResult's trials have none and their steps carry no timestamp.

The version written is ATIF-v1.8, the newest Harbor 0.26 reads (and writes).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import msgspec
import orjson

from waza.protocol.records import CaptureResult, TrajectoryStep, Usage
from waza.protocol.trial_records import TrialResult

__all__ = ["ATIF_VERSION", "to_atif"]

ATIF_VERSION = "ATIF-v1.8"

#: ``agent.version`` is required, but a waza record does not know the agent's version.
_UNKNOWN = "unknown"


def to_atif(record: CaptureResult | TrialResult) -> list[dict[str, Any]]:
    """One ATIF document per trial of the record (one for a CaptureResult), absent rather than null."""
    if isinstance(record, CaptureResult):
        start = record.timing.start if record.timing is not None else None
        verdict = {"status": record.status, "score": record.score.score if record.score else None}
        return [
            _document(
                record.id,
                record.trial,
                record.input,
                record.trajectory,
                record.usage,
                start,
                record.adapter,
                verdict,
            )
        ]
    return [
        _document(
            record.id,
            entry.trial,
            record.input,
            entry.trajectory,
            entry.usage,
            None,
            None,
            {"status": entry.status, "score": entry.score, "error": entry.error},
        )
        for entry in record.trials
    ]


def _document(
    case_id: str,
    trial: int | None,
    prompt: str | list[str],
    trajectory: list[TrajectoryStep],
    usage: Usage | None,
    start: int | None,
    adapter: str | None,
    verdict: dict[str, Any],
) -> dict[str, Any]:
    steps = _Steps(start)
    turns = [prompt] if isinstance(prompt, str) else list(prompt)
    recorded_user = any(s.type == "message" and s.role == "user" for s in trajectory)
    said = 0  # user turns of the prompt already written
    for step in trajectory:
        if step.type == "message" and step.role == "user":
            steps.user(step.content or "", step.timestamp)
            continue
        if not recorded_user:
            while said < len(turns) and said <= (step.turn or 0):
                steps.user(turns[said], None)
                said += 1
        steps.agent_step(step)
    if not recorded_user:
        for text in turns[said:]:
            steps.user(text, None)
    out: list[dict[str, Any]] = steps.finish()
    if not out:  # ATIF needs a step; an empty prompt list is the only way here
        out = [{"step_id": 1, "source": "user", "message": ""}]
    doc: dict[str, Any] = {
        "schema_version": ATIF_VERSION,
        "session_id": case_id if trial is None else f"{case_id}#{trial}",
        "agent": {"name": adapter or _UNKNOWN, "version": _UNKNOWN},
        "steps": out,
        "notes": "Exported by waza: usage is per prompt (final_metrics), not per step; "
        "what ATIF has no field for is kept in extra.waza.",
        "extra": {"waza": {"id": case_id, "trial": trial, **{k: v for k, v in verdict.items() if v is not None}}},
    }
    metrics = _final_metrics(usage, len(out))
    doc["final_metrics"] = metrics
    return doc


def _final_metrics(usage: Usage | None, steps: int) -> dict[str, Any]:
    out: dict[str, Any] = {"total_steps": steps}
    if usage is None:
        return out
    for theirs, ours in (
        ("total_prompt_tokens", usage.input_tokens),
        ("total_completion_tokens", usage.output_tokens),
        ("total_cached_tokens", usage.cached_read_tokens),
    ):
        if ours is not None:
            out[theirs] = ours
    if usage.cost is not None and (usage.currency or "USD").upper() == "USD":
        out["total_cost_usd"] = usage.cost
    extra: dict[str, Any] = {
        key: val
        for key, val in (
            ("thought_tokens", usage.thought_tokens),
            ("cached_write_tokens", usage.cached_write_tokens),
            ("total_tokens", usage.total_tokens),
            ("context_used", usage.context_used),
            ("context_size", usage.context_size),
        )
        if val is not None
    }
    if usage.cost is not None and "total_cost_usd" not in out:
        extra.update(cost=usage.cost, currency=usage.currency)
    if extra:
        out["extra"] = extra
    return out


class _Steps:
    """The ATIF steps being built: the open agent step collects until the next turn or response."""

    def __init__(self, start: int | None) -> None:
        self._start = start
        self._done: list[dict[str, Any]] = []
        self._open: dict[str, Any] | None = None
        self._calls: dict[str, dict[str, Any]] = {}  # the open step's tool calls by id

    def _when(self, offset: int | None) -> dict[str, str]:
        if self._start is None or offset is None:
            return {}
        moment = datetime.fromtimestamp((self._start + offset) / 1000, UTC)
        return {"timestamp": moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")}

    def _close(self) -> None:
        if self._open is not None:
            self._done.append(self._open)
        self._open, self._calls = None, {}

    def user(self, text: str, offset: int | None) -> None:
        self._close()
        self._done.append({"source": "user", "message": text, **self._when(offset)})

    def _step(self, offset: int) -> dict[str, Any]:
        if self._open is None:
            self._open = {"source": "agent", "message": "", **self._when(offset)}
        return self._open

    def agent_step(self, step: TrajectoryStep) -> None:
        if step.type in ("message", "thought"):
            if self._open is not None and self._open.get("tool_calls"):
                self._close()  # the model speaks again after its tools: its next response
            current = self._step(step.timestamp)
            key = "message" if step.type == "message" else "reasoning_content"
            current[key] = (current.get(key) or "") + (step.content or "")
        elif step.type == "tool_call":
            self._tool_call(self._step(step.timestamp), step)
        else:
            raw = msgspec.to_builtins(step)
            self._step(step.timestamp).setdefault("extra", {}).setdefault("waza", []).append(raw)

    def _tool_call(self, current: dict[str, Any], step: TrajectoryStep) -> None:
        call_id = step.tool_call_id or f"call-{len(self._done) + 1}-{len(self._calls) + 1}"
        while call_id in self._calls:  # an id reused in one response still names two calls
            call_id += "'"
        args = step.input if isinstance(step.input, dict) else {} if step.input is None else {"input": step.input}
        call: dict[str, Any] = {
            "tool_call_id": call_id,
            "function_name": step.name or step.title or step.kind or "tool",
            "arguments": args,
        }
        extra = {
            key: val
            for key, val in (
                ("status", step.status),
                ("kind", step.kind),
                ("title", step.title),
                ("duration_ms", step.duration),
                ("locations", step.locations),
            )
            if val is not None
        }
        if extra:
            call["extra"] = extra
        self._calls[call_id] = call
        current.setdefault("tool_calls", []).append(call)
        content = _result_text(step)
        if content is not None:
            result = {"source_call_id": call_id, "content": content}
            current.setdefault("observation", {"results": []})["results"].append(result)

    def finish(self) -> list[dict[str, Any]]:
        self._close()
        for number, step in enumerate(self._done, 1):
            step["step_id"] = number
        return [{"step_id": s.pop("step_id"), **s} for s in self._done]


def _result_text(step: TrajectoryStep) -> str | None:
    """A tool call's result as text: its raw output, else the text of its content blocks."""
    if isinstance(step.output, str):
        return step.output
    if step.output is not None:
        return orjson.dumps(step.output, default=str).decode()
    texts = [_block_text(block) for block in step.tool_content or []]
    joined = "\n".join(t for t in texts if t)
    return joined or None


def _block_text(block: Any) -> str:
    if not isinstance(block, dict):
        return ""
    inner = block.get("content")
    if isinstance(inner, dict) and isinstance(inner.get("text"), str):
        return str(inner["text"])
    return str(block["text"]) if isinstance(block.get("text"), str) else ""
