"""The replay adapter: recorded runs instead of a live agent, for developing graders offline and in CI.

``--from FILE`` holds JSON objects, one a line or concatenated (pretty-printed
objects one after another, as Copilot writes them). The file is indexed once
(byte ranges only, so memory stays flat) and each prompt replays what was
recorded for it:

- **CaptureResult lines** (objects with ``id`` and ``trajectory``), keyed by
  ``id`` (and ``trial`` when both sides have one): the trajectory, output,
  usage, exit, errors and stderr come back as recorded. acp-harness's results
  carry no ``toolCallId`` (it writes one step per tool call, with its last
  status): such a step is a tool call of its own, except that a step with the
  same name as an id-less call still pending or in progress is that call's
  update (a recording that logged both), paired in order.
- **Event streams**: waza's event format (``exec --events``: ``message``,
  ``thought``, ``tool_call``, ``plan``, ``usage``, ``result``; ``{"type":
  "message", "role": "user"}`` starts a turn) or Copilot session events (see
  ``copilot_events``). An object with ``"promptId"`` assigns it and the objects
  after it to that prompt; a file with no ``promptId`` at all is one session,
  replayed for the prompt whose first turn is the session's first user message.
- **ACP raw logs** (``capture --raw-log``): each prompt's JSON-RPC lines, mapped
  by ``acp_replay`` through the same update mapping the live ACP adapter uses.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any, ClassVar

import msgspec
import orjson

from waza.protocol.codec import RecordError
from waza.protocol.errors import ConfigError
from waza.protocol.records import Exit, TrajectoryStep, Usage
from waza.protocol.trajectory import (
    Event,
    FinalOutput,
    MessageChunk,
    PermissionStep,
    PlanUpdate,
    RawUpdate,
    ThoughtChunk,
    ToolCallPatch,
    TrajectoryBuilder,
    UsageUpdate,
)

from .acp_replay import RawLogMapper, is_raw_log_line
from .base import Adapter, AgentRun, AgentTask, Confine
from .copilot_events import CopilotMapper, epoch_ms, is_copilot_event
from .exec import event_from_line
from .specs import ReplayAgent

_WS = b" \t\r\n"
STOP_REASONS = ("end_turn", "max_tokens", "max_turn_requests", "refusal", "cancelled")


def json_objects(stream: IO[bytes]) -> Iterator[tuple[int, int, int]]:
    """(start offset, end offset, line number) of each top-level JSON object in ``stream``.

    Tracks only braces, strings and escapes, so JSONL and concatenated
    pretty-printed objects both work and nothing is held but the current object.
    """
    depth, in_string, escaped = 0, False, False
    start, line, start_line, offset = -1, 1, 1, 0
    while chunk := stream.read(1 << 16):
        for i, byte in enumerate(chunk):
            if byte == 0x0A:
                line += 1
            if in_string:
                if escaped:
                    escaped = False
                elif byte == 0x5C:
                    escaped = True
                elif byte == 0x22:
                    in_string = False
            elif byte == 0x22:
                in_string = True
            elif byte == 0x7B:
                if depth == 0:
                    start, start_line = offset + i, line
                depth += 1
            elif byte == 0x7D and depth:
                depth -= 1
                if depth == 0:
                    yield start, offset + i + 1, start_line
            elif depth == 0 and byte not in _WS and not (offset == 0 and i < 3 and chunk.startswith(b"\xef\xbb\xbf")):
                raise ValueError(f"line {line}: expected a JSON object, found {chr(byte)!r}")
        offset += len(chunk)
    if depth:
        raise ValueError(f"line {start_line}: the last JSON object is not closed")


class Recording(msgspec.Struct):
    """Where one prompt's recorded objects are in the file."""

    ranges: list[tuple[int, int, int]] = msgspec.field(default_factory=list)
    first_user: str | None = None


class ReplayIndex(msgspec.Struct):
    """Where each prompt's recording is in a ``--from`` file, so one prompt is read at a time."""

    kind: str  # "results" or "events"
    by_key: dict[tuple[str, int | None], Recording]
    unkeyed: Recording | None = None


def _user_text(value: dict[str, Any]) -> str | None:
    if value.get("type") == "user.message" and isinstance(value.get("data"), dict):
        return str(value["data"].get("content", ""))
    if value.get("type") == "message" and value.get("role") == "user":
        return str(value.get("content", ""))
    return None


def build_index(path: Path) -> ReplayIndex:
    source = str(path)
    try:
        stream = path.open("rb")
    except OSError as exc:
        raise ConfigError(f"cannot be read: {exc.strerror or exc}", source=source, field="ReplayAgent.replay_from") from None
    kind: str | None = None
    by_key: dict[tuple[str, int | None], Recording] = {}
    unkeyed: Recording | None = None
    current: Recording | None = None
    with stream:
        try:
            for start, end, line in json_objects(stream):
                here = stream.tell()
                stream.seek(start)
                raw = stream.read(end - start)
                stream.seek(here)
                try:
                    value = orjson.loads(raw)
                except orjson.JSONDecodeError as exc:
                    raise ConfigError(f"invalid JSON ({exc.msg})", source=source, line=line) from None
                this = "results" if "trajectory" in value and "id" in value else "events"
                if kind is None:
                    kind = this
                elif kind != this:
                    raise ConfigError(f"mixes CaptureResult lines with event objects (this is {this})", source=source, line=line)
                if kind == "results":
                    if not isinstance(value["id"], str):
                        raise ConfigError("must be a string", source=source, line=line, field="id")
                    trial = value.get("trial") if isinstance(value.get("trial"), int) else None
                    by_key.setdefault((value["id"], trial), Recording()).ranges.append((start, end, line))
                    continue
                prompt_id = value.get("promptId")
                if prompt_id is None and is_raw_log_line(value):
                    continue  # initialize, authenticate: the agent's, not a prompt's
                if prompt_id is not None:
                    if not isinstance(prompt_id, str):
                        raise ConfigError("must be a string", source=source, line=line, field="promptId")
                    current = by_key.setdefault((prompt_id, None), Recording())
                elif current is None:
                    unkeyed = current = Recording()
                current.ranges.append((start, end, line))
                if current.first_user is None:
                    current.first_user = _user_text(value)
        except ValueError as exc:
            raise ConfigError(str(exc), source=source) from None
    if kind is None:
        raise ConfigError("holds no JSON objects", source=source, field="ReplayAgent.replay_from")
    if unkeyed is not None and by_key:
        raise ConfigError("some objects have a promptId and the first ones do not; key them all", source=source)
    return ReplayIndex(kind, by_key, unkeyed)


class ToolCallIds:
    """The id each recorded tool call replays under: its own, or one given to an id-less call (acp-harness)."""

    def __init__(self) -> None:
        self._open: dict[str | None, str] = {}  # an id-less call not finished yet, by its name

    def of(self, step: TrajectoryStep, number: int) -> str:
        if step.tool_call_id is not None:
            return step.tool_call_id
        given = self._open.pop(step.name, None) or f"replayed-{number}"
        if step.status not in ("completed", "failed"):
            self._open[step.name] = given
        return given


def step_events(step: TrajectoryStep, number: int, ids: ToolCallIds) -> list[tuple[Event, int]]:
    """The ``number``-th recorded step as the events that rebuild it, each with its time."""
    at = step.timestamp
    if step.type in ("message", "thought"):
        cls = ThoughtChunk if step.type == "thought" else MessageChunk
        event = cls(step.content or "", step.message_id)
        if step.role == "user":
            event = MessageChunk(step.content or "", step.message_id, role="user")
        return [(event, at)]
    if step.type == "tool_call":
        call_id = ids.of(step, number)
        opened = ToolCallPatch(
            tool_call_id=call_id,
            name=step.name,
            title=step.title,
            kind=step.kind,
            input=step.input,
            content=step.tool_content,
            locations=step.locations,
            extra=step.extra,
        )
        start = step.start if step.start is not None else at
        if step.status in ("completed", "failed"):
            closed = ToolCallPatch(tool_call_id=call_id, status=step.status, output=step.output)
            return [(opened, start), (closed, step.end if step.end is not None else start)]
        opened.status, opened.output = step.status, step.output
        return [(opened, start)]
    if step.type == "plan":
        return [(PlanUpdate(step.entries or []), at)]
    extra = step.extra or {}
    if step.type == "permission":
        return [(PermissionStep(extra.get("request", {}), extra.get("decision", {}), step.tool_call_id), at)]
    return [(RawUpdate(str(extra.get("kind", step.name or "event")), extra.get("data")), at)]


def _keep_text_extras(recorded: list[TrajectoryStep], built: list[TrajectoryStep]) -> None:
    """Give the rebuilt message and thought steps the ``extra`` they were recorded with (a Copilot message's
    delta count: text events carry none), matched by type, turn and message id."""
    kept: dict[tuple[str, int, str | None], dict[str, Any]] = {
        (s.type, s.turn or 0, s.message_id): s.extra for s in recorded if s.extra and s.message_id is not None
    }
    for step in built:
        extra = kept.get((step.type, step.turn or 0, step.message_id)) if step.type in ("message", "thought") else None
        if extra:
            step.extra = {**(step.extra or {}), **extra}


class ReplayAdapter(Adapter[ReplayAgent]):
    name: ClassVar[str] = "replay"
    needs_command: ClassVar[bool] = False

    def __init__(self, spec: ReplayAgent, *, confine: Confine | None = None) -> None:
        super().__init__(spec, confine=confine)
        if spec.replay_from is None:
            raise ConfigError("the replay adapter needs replay_from (a CaptureResult JSONL or a recorded event stream)")
        self.path = spec.replay_from
        self.index = build_index(self.path)

    @classmethod
    def check(cls, spec: ReplayAgent) -> None:
        if spec.replay_from is None:
            raise ConfigError(
                "the replay adapter needs ReplayAgent.replay_from: a file of CaptureResult JSONL or a recorded event stream"
            )
        build_index(spec.replay_from)

    def _recording(self, task: AgentTask) -> Recording | None:
        case = task.case
        found = self.index.by_key.get((case.id, task.trial)) or self.index.by_key.get((case.id, None))
        if found is None and self.index.kind == "results":
            found = next((r for (i, _), r in self.index.by_key.items() if i == case.id), None)
        if found is None and self.index.unkeyed is not None and self.index.unkeyed.first_user == case.turns[0]:
            found = self.index.unkeyed
        return found

    def _objects(self, recording: Recording) -> Iterator[tuple[int, Any]]:
        with self.path.open("rb") as f:
            for start, end, line in recording.ranges:
                f.seek(start)
                yield line, orjson.loads(f.read(end - start))

    async def run(self, task: AgentTask) -> AgentRun:
        recording = self._recording(task)
        if recording is None:
            return AgentRun(errors=[f"{self.path}: nothing recorded for prompt {task.case.id!r}"])
        if self.index.kind == "results":
            line, value = next(self._objects(recording))
            return self._replay_result(task.recorder, value, line)
        return self._replay_events(task.recorder, recording)

    def _replay_result(self, recorder: TrajectoryBuilder, value: dict[str, Any], line: int) -> AgentRun:
        try:
            steps = [TrajectoryStep.from_dict(s) for s in value.get("trajectory") or []]
            usage = Usage.from_dict(value["usage"]) if isinstance(value.get("usage"), dict) else None
            exit_ = Exit.from_dict(value["exit"]) if isinstance(value.get("exit"), dict) else Exit()
        except RecordError as exc:
            return AgentRun(errors=[f"{self.path}:{line}: field {exc.path!r}: {exc.message}"])
        ids = ToolCallIds()
        for number, step in enumerate(steps):
            recorder.turn = step.turn or 0
            for event, at in step_events(step, number, ids):
                recorder.emit(event, at)
        _keep_text_extras(steps, recorder.steps)
        if isinstance(value.get("output"), str):
            recorder.emit(FinalOutput(value["output"]))
        if usage is not None:
            recorder.emit(UsageUpdate(usage, mode="set"))
        errors = [e for e in value.get("errors") or [] if isinstance(e, str)]
        stderr = value.get("stderr") if isinstance(value.get("stderr"), str) else None
        return AgentRun(exit=exit_, errors=errors, stderr=stderr)

    def _replay_events(self, recorder: TrajectoryBuilder, recording: Recording) -> AgentRun:
        copilot = CopilotMapper()
        acp = RawLogMapper()
        first_time: int | None = None
        turn = -1
        run = AgentRun()
        for line, value in self._objects(recording):
            stamp = epoch_ms(value.get("timestamp"))
            if stamp is not None and first_time is None:
                first_time = stamp
            at = stamp - first_time if stamp is not None and first_time is not None else None
            if isinstance(value.get("timestamp"), int):
                at = value["timestamp"]
            if is_raw_log_line(value):
                ts = value.get("ts")
                if isinstance(ts, (int, float)) and not isinstance(ts, bool):
                    first_time = int(ts) if first_time is None else first_time
                    at = int(ts) - first_time
                events = acp.events(value)
            elif is_copilot_event(value):
                events = copilot.events(value)
            elif _user_text(value) is not None:
                events = [MessageChunk(_user_text(value) or "", role="user")]
            else:
                try:
                    events = [event_from_line({k: v for k, v in value.items() if k != "promptId"}, line)]
                except ValueError as exc:
                    run.errors.append(f"{self.path}:{line}: {exc}")
                    continue
            for event in events:
                if isinstance(event, MessageChunk) and event.role == "user":
                    turn += 1
                    recorder.turn = turn
                recorder.emit(event, at)
        copilot.note_deltas(recorder.steps)
        if acp.stop_reason in STOP_REASONS:
            run.exit = Exit(stop_reason=acp.stop_reason)  # type: ignore[arg-type]
        return run
