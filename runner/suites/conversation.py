"""A suite task's conversation: its follow-up turns, its responder and its checkpoints.

The adapter asks for each turn after the first once the previous one has ended
(``AgentTask.next_turn``); the task's :class:`TaskDialogue` then grades the
checkpoints set after that turn (on a copy of the conversation and the live
workspace), and answers with the next follow-up prompt, or, past them, with
what the responder says the user replies. The trial's ``timeout_seconds``
bounds the whole conversation, the responder's and checkpoints' time included.

How the conversation went is written into the result beside its own fields:
``conversation`` (``turns``, ``outcome``: ``completed``, ``abstained``,
``cap_exhausted`` or ``stopped``, ``followups`` the responder sent) and
``checkpoints`` (one entry per checkpoint: ``after_turn``, ``status``, its
grades; ``not_run`` when the conversation ended before that turn). Checkpoints
never change the final verdict: only ``on_failure: stop`` ends the
conversation early, and the final graders then judge what there is. A responder
that abstains fails the trial with a grade named ``responder``, whose outcome
``conversation: abstained`` sets it apart from a grader's failure.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import msgspec

from waza.protocol.records import CaptureResult, Grade, PromptCase
from waza.protocol.trajectory import TrajectoryBuilder
from waza.runner.engine.pipeline import grade_result
from waza.runner.grading.grader_runners import GraderRunner
from waza.runner.suites.models import Checkpoint, Task
from waza.runner.suites.responder import ResponderError, decide

__all__ = ["TaskDialogue", "needs_dialogue"]

#: The result's keys this module writes (beside CaptureResult's own, like any unknown key).
CONVERSATION_KEY = "conversation"
CHECKPOINTS_KEY = "checkpoints"


def needs_dialogue(task: Task) -> bool:
    """Whether the task's turns depend on more than its prompts (a responder, or checkpoints between turns)."""
    return task.responder is not None or bool(task.checkpoints)


class TaskDialogue:
    """One trial's conversation of a task; ``checkpoints`` pairs each checkpoint with its graders' runners."""

    def __init__(
        self, task: Task, case: PromptCase, workspace: Path, checkpoints: list[tuple[Checkpoint, list[GraderRunner]]]
    ) -> None:
        self.task = task
        self.case = case
        self.workspace = workspace
        self.checkpoints = checkpoints
        self.turns = case.turns
        self.sent = 1
        self.followups = 0
        self.outcome = "completed"
        self.reason = ""
        self.errors: list[str] = []
        self.records: dict[int, dict[str, Any]] = {}

    async def next_turn(self, finished: int, recorder: TrajectoryBuilder) -> str | None:
        number = finished + 1  # the checkpoints count turns from 1
        for index, (point, runners) in enumerate(self.checkpoints):
            if point.after_turn == number:
                passed = await self._checkpoint(index, point, runners, recorder)
                if not passed and point.stop:
                    self.outcome, self.reason = "stopped", f"checkpoint after turn {number} failed (on_failure: stop)"
                    return None
        text = self.turns[number] if number < len(self.turns) else await self._responder(recorder)
        if text is not None:
            self.sent += 1
        return text

    async def _checkpoint(self, index: int, point: Checkpoint, runners: list[GraderRunner], recorder: TrajectoryBuilder) -> bool:
        reduced = recorder.finish()
        snapshot = CaptureResult(
            id=self.case.id,
            input=self.case.input,
            output=reduced.output,
            hint=self.case.hint,
            reference=self.case.reference,
            trajectory=[msgspec.structs.replace(step) for step in reduced.steps],
            metadata=self.case.metadata,
            usage=reduced.usage,
            tool_errors=reduced.tool_errors,
            cwd=str(self.workspace),
            unknown=dict(self.case.unknown),
        )
        graded = await grade_result(snapshot, runners)
        self.records[index] = {
            "after_turn": point.after_turn,
            "on_failure": "stop" if point.stop else "continue",
            "status": graded.status,
            "passed": graded.status == "passed",
            "score": graded.score.score if graded.score is not None else None,
            "grades": [g.to_dict() for g in graded.grades],
        }
        return graded.status == "passed"

    async def _responder(self, recorder: TrajectoryBuilder) -> str | None:
        responder = self.task.responder
        if responder is None:
            return None
        try:
            decision = await decide(responder, recorder.finish().steps)
        except ResponderError as exc:
            self.errors.append(str(exc))
            self.outcome = "error"
            return None
        if decision.action == "stop":
            return None
        if decision.action == "abstain":
            self.outcome, self.reason = "abstained", decision.reason
            return None
        if self.followups >= responder.max_followups:
            self.outcome = "cap_exhausted"
            self.reason = f"the agent still asked after {responder.max_followups} responder replies (max_followups)"
            return None
        self.followups += 1
        return decision.message

    def finish(self, result: CaptureResult) -> list[Grade]:
        entry: dict[str, Any] = {"turns": self.sent, "outcome": self.outcome}
        if self.task.responder is not None:
            entry["followups"] = self.followups
        if self.reason:
            entry["reason"] = self.reason
        result.unknown[CONVERSATION_KEY] = entry
        if self.checkpoints:
            result.unknown[CHECKPOINTS_KEY] = [
                self.records.get(i, {"after_turn": p.after_turn, "status": "not_run"})
                for i, (p, _) in enumerate(self.checkpoints)
            ]
        result.errors.extend(self.errors)
        if self.outcome != "abstained":
            return []
        why = f"the responder abstained: {self.reason}" if self.reason else "the responder abstained"
        return [
            Grade(
                name="responder", status="failed", passed=False, score=0.0, reasoning=why, outcome={CONVERSATION_KEY: "abstained"}
            )
        ]
