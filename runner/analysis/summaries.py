"""Compact views of results: the numbers and the step list a person scans first.

A CaptureResult carries everything (raw tool outputs, whole messages); a
ResultSummary keeps what answers "what did the agent do, how long did it take,
what did the graders say" in a line of JSON or a few lines of Markdown. A
TrialResult becomes one summary per trial (see :mod:`.attempts`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import orjson

from waza.protocol.analysis_records import GradeView, ResultSummary, StepView
from waza.protocol.records import CaptureResult, Grade, TrajectoryStep, Usage
from waza.protocol.trial_records import TrialResult
from waza.runner.analysis.attempts import Attempt, from_capture, from_trials
from waza.runner.analysis.markdown import cell, num, shorten


def compact_json(value: Any) -> str:
    if isinstance(value, str):
        return value
    return orjson.dumps(value, default=str).decode()


def step_text(step: TrajectoryStep) -> str | None:
    """The one line that says what a step was."""
    if step.type in ("message", "thought"):
        return step.content or ""
    if step.type == "tool_call":
        return None if step.input is None else compact_json(step.input)
    if step.type == "plan":
        return "; ".join(_plan_entry(e) for e in step.entries or [])
    if step.type == "permission":
        return compact_json((step.extra or {}).get("decision"))
    return step.name


def _plan_entry(entry: Any) -> str:
    if isinstance(entry, dict):
        status = entry.get("status")
        return f"{entry.get('content', '')}" + (f" [{status}]" if status else "")
    return compact_json(entry)


def step_view(step: TrajectoryStep, width: int) -> StepView:
    kind = step.type
    if kind == "message" or kind == "thought":  # most steps: only the fields these carry
        role = step.role if kind == "message" else None
        return StepView(type=kind, at=step.timestamp, turn=step.turn, role=role, text=shorten(step.content or "", width))
    text = step_text(step)
    tool = kind == "tool_call"
    return StepView(
        type=kind,
        at=step.timestamp,
        turn=step.turn,
        name=step.name if tool else None,
        status=step.status if tool else None,
        duration=step.duration if tool else None,
        text=None if text is None else shorten(text, width),
    )


def grade_view(grade: Grade, width: int) -> GradeView:
    why = grade.error if grade.status == "error" else grade.reasoning
    return GradeView(
        name=grade.name,
        status=grade.status,
        passed=grade.passed,
        score=grade.score,
        reasoning=shorten(why, width) if why else None,
    )


def summarize(a: Attempt, width: int) -> ResultSummary:
    return summary(
        a.id, a.trial, a.status, a.passed, a.score, a.output, a.duration, a.first_response,
        a.input, a.trajectory, a.grades, a.errors, a.usage, width,
    )  # fmt: skip


def summary(
    id: str,
    trial: int | None,
    status: str,
    passed: bool | None,
    score: float | None,
    output: str,
    duration: int | None,
    first_response: int | None,
    input: str | list[str],
    trajectory: Sequence[TrajectoryStep],
    grades: Sequence[Grade],
    errors: list[str],
    usage: Usage | None,
    width: int,
) -> ResultSummary:
    """The summary of one attempt, from its parts: an :class:`Attempt`'s, or those of a capture line
    decoded for its summary alone (:mod:`.summary_lines`), which skips building the Attempt."""
    tools: dict[str, int] = {}  # calls per tool name, in the order first called
    failed = tool_time = 0
    steps = []
    for s in trajectory:
        if s.type == "tool_call":
            name = s.name or "(unnamed)"
            tools[name] = tools.get(name, 0) + 1
            failed += s.status == "failed"
            tool_time += s.duration or 0
        steps.append(step_view(s, width))
    made = ResultSummary(
        id=id,
        status=status,  # type: ignore[arg-type]
        passed=passed,
        score=score,
        output=shorten(output, width),
        duration=duration,
        turns=1 if isinstance(input, str) else len(input),
        tool_calls=sum(tools.values()),
        failed_tool_calls=failed,
        tools=tools,
        input_tokens=usage.input_tokens if usage else None,
        output_tokens=usage.output_tokens if usage else None,
        steps=steps,
        grades=[grade_view(g, width) for g in grades],
        errors=errors,
    )
    # Set apart: a Struct made with more than 15 keywords took twice as long (msgspec 0.22, CPython 3.11).
    made.trial, made.first_response, made.tool_time = trial, first_response, tool_time
    return made


def summaries(result: CaptureResult | TrialResult, width: int) -> list[ResultSummary]:
    """One summary per capture result, one per trial of a trials result."""
    if isinstance(result, TrialResult):
        return [summarize(a, width) for a in from_trials(result)]
    return [summarize(from_capture(result), width)]


def _ms(value: int | None) -> str:
    return "n/a" if value is None else f"{value / 1000:.2f} s"


def step_line(number: int, step: StepView, clean: Callable[[object, int], str] = cell) -> str:
    """``3. +0.06s tool `bash` (failed, 12 ms): {"cmd":"ls"}``; ``clean`` makes texts safe for the target format."""
    at = f"+{step.at / 1000:.2f}s"
    if step.type == "tool_call":
        took = f", {step.duration} ms" if step.duration is not None else ""
        what = f"tool `{clean(step.name or '(unnamed)', 60)}` ({step.status}{took})"
    else:
        what = f"{step.role} {step.type}" if step.role else step.type
    text = f": {clean(step.text, 10_000)}" if step.text else ""
    return f"{number}. {at} {what}{text}"


def summary_markdown(s: ResultSummary) -> str:
    """A few Markdown lines for one summary: heading, figures, grades, numbered steps."""
    trial = f" (trial {s.trial})" if s.trial is not None else ""
    lines = [f"## `{cell(s.id, 200).replace('`', chr(39))}`{trial}: {s.status}, score {num(s.score)}", ""]
    tools = ", ".join(f"{cell(k, 60)} x{v}" for k, v in sorted(s.tools.items()))
    figures = [
        f"{_ms(s.duration)}",
        f"{s.turns} turn(s)",
        f"{s.tool_calls} tool call(s)" + (f" ({s.failed_tool_calls} failed)" if s.failed_tool_calls else ""),
    ]
    if s.input_tokens is not None or s.output_tokens is not None:
        figures.append(
            f"tokens {s.input_tokens if s.input_tokens is not None else '?'} in / {s.output_tokens if s.output_tokens is not None else '?'} out"
        )
    lines.append(" · ".join(figures) + (f" · tools: {tools}" if tools else ""))
    lines.append("")
    lines.append(f"**Output:** {cell(s.output, 10_000)}")
    for error in s.errors:
        lines.append(f"\n**Error:** {cell(error, 10_000)}")
    if s.grades:
        lines.append("")
        for g in s.grades:
            why = f": {cell(g.reasoning, 10_000)}" if g.reasoning else ""
            lines.append(f"- grader `{cell(g.name, 80)}` {g.status}, score {num(g.score)}{why}")
    if s.steps:
        lines.append("")
        lines.extend(step_line(i, step) for i, step in enumerate(s.steps, start=1))
    return "\n".join(lines) + "\n\n"
