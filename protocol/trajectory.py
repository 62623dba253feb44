"""Trajectory events and the one reducer that turns them into steps.

Every adapter (ACP, exec, headless CLI, HTTP, replay) reports what the agent
does as the small events below; the reducer merges them into TrajectoryStep
records keyed by id (message id, tool call id), so that a later protocol
version that patches a step by id fits without a new code path. Timestamps are
taken when an event reaches the reducer, unless the adapter supplies the
arrival time it measured itself.
"""

from __future__ import annotations

import time
from typing import Any, Literal

import msgspec
import orjson

from .records import TrajectoryStep, Usage


class MessageChunk(msgspec.Struct):
    """Agent (or user) text; chunks are joined exactly, without inserted separators.

    ``new`` starts a new message step even right after one: a separate message
    event (a headless CLI's line), not the next chunk of a streamed one."""

    text: str
    message_id: str | None = None
    role: Literal["agent", "user"] = "agent"
    new: bool = False


class ThoughtChunk(msgspec.Struct):
    """A piece of the agent's reasoning; chunks in a row are joined exactly into one thought step, as messages
    are (unless ``new``, as for MessageChunk)."""

    text: str
    message_id: str | None = None
    new: bool = False


class ToolCallPatch(msgspec.Struct):
    """Create or update a tool call; ``None`` fields leave the current value unchanged."""

    tool_call_id: str
    name: str | None = None
    title: str | None = None
    kind: str | None = None
    #: pending, in_progress, completed or failed from a live agent; any string a replayed file holds
    #: (a trajectory step's status is read as any string).
    status: str | None = None
    input: Any = None
    output: Any = None
    content: list[Any] | None = None
    locations: list[Any] | None = None
    extra: dict[str, Any] | None = None
    #: An announcement of a call (ACP ``tool_call``), not an update: when its id names a call that
    #: has finished or belongs to an earlier turn, it is a new call (agents reuse ids across turns).
    announces: bool = False


class PlanUpdate(msgspec.Struct):
    """A whole plan; each update replaces the previous one and is kept as its own step."""

    entries: list[Any]


class UsageUpdate(msgspec.Struct):
    """``add`` sums per-turn token counts; ``set`` overwrites cumulative figures (cost, context)."""

    usage: Usage
    mode: Literal["add", "set"] = "add"


class PermissionStep(msgspec.Struct):
    """The agent asked for permission; what it asked and what waza answered."""

    request: dict[str, Any]
    decision: dict[str, Any]
    tool_call_id: str | None = None


class RawUpdate(msgspec.Struct):
    """Anything the reducer has no step type for; kept as an ``event`` step, never dropped."""

    kind: str
    data: Any = None


class FinalOutput(msgspec.Struct):
    """The agent's final answer when it reports one apart from its messages (a CLI result line)."""

    text: str


Event = MessageChunk | ThoughtChunk | ToolCallPatch | PlanUpdate | UsageUpdate | PermissionStep | RawUpdate | FinalOutput

#: What one prompt's trajectory keeps by default: steps, and megabytes of their text and data.
DEFAULT_MAX_STEPS = 20_000
DEFAULT_MAX_TRAJECTORY_MB = 64


class _Full(Exception):
    """Raised inside the reducer when an event would take the trajectory past a bound."""


def _json_size(value: Any) -> int:
    """The size of ``value`` written as JSON: what a kept event costs (its data as the record will hold it)."""
    if value is None:
        return 0
    if isinstance(value, str):
        return len(value)
    return len(orjson.dumps(value, default=str))


def _size(event: Event) -> int:
    if isinstance(event, (MessageChunk, ThoughtChunk)):
        return len(event.text)
    if isinstance(event, ToolCallPatch):
        return sum(
            map(_json_size, (event.name, event.title, event.input, event.output, event.content, event.locations, event.extra))
        )
    if isinstance(event, PlanUpdate):
        return _json_size(event.entries)
    if isinstance(event, PermissionStep):
        return _json_size(event.request) + _json_size(event.decision)
    if isinstance(event, RawUpdate):
        return len(event.kind) + _json_size(event.data)
    return 0


_USAGE_FIELDS = (
    "input_tokens",
    "output_tokens",
    "total_tokens",
    "thought_tokens",
    "cached_read_tokens",
    "cached_write_tokens",
)


class Reduced(msgspec.Struct):
    """What the reducer made of a prompt's events."""

    steps: list[TrajectoryStep]
    output: str
    tool_errors: bool
    usage: Usage | None
    first_response: int | None
    #: Events not kept because the trajectory had reached ``max_steps`` or ``max_bytes``.
    dropped: int = 0


class TrajectoryBuilder(msgspec.Struct):
    """Collects one prompt's events; ``turn`` is advanced by the adapter as user turns start.

    What it keeps is bounded, whatever an agent reports: at most ``max_steps``
    steps and ``max_bytes`` of the agent's text and data (measured as JSON). Once an
    event would pass either bound, it and every later event that would add to
    the trajectory are counted in ``dropped`` instead (usage and a final answer
    are still taken: they replace, they do not grow).
    """

    max_steps: int = DEFAULT_MAX_STEPS
    max_bytes: int = DEFAULT_MAX_TRAJECTORY_MB << 20
    started: float = msgspec.field(default_factory=time.perf_counter)
    turn: int = 0
    steps: list[TrajectoryStep] = msgspec.field(default_factory=list)
    _open_text: TrajectoryStep | None = None
    _by_message: dict[tuple[str, str], TrajectoryStep] = msgspec.field(default_factory=dict)
    _tools: dict[str, TrajectoryStep] = msgspec.field(default_factory=dict)
    _usage: Usage | None = None
    _final: str | None = None
    _first_response: int | None = None
    _kept_bytes: int = 0
    _dropped: int = 0

    def now_ms(self) -> int:
        return int((time.perf_counter() - self.started) * 1000)

    def start_turn(self, text: str, turn: int) -> None:
        """Record the user's turn as a message step and move to it."""
        self.turn = turn
        self._open_text = None
        try:  # not counted in the bytes: the prompt is the user's, bounded as its file's lines are
            self._new_step("message", self.now_ms(), role="user", content=text)
        except _Full:
            self._dropped += 1

    def emit(self, event: Event, at_ms: int | None = None) -> None:
        if isinstance(event, (UsageUpdate, FinalOutput)):
            self._reduce(event, self.now_ms() if at_ms is None else at_ms)
            return
        try:
            self._take(_size(event))
            self._reduce(event, self.now_ms() if at_ms is None else at_ms)
        except _Full:
            self._dropped += 1

    def _take(self, size: int) -> None:
        """Count ``size`` bytes as kept, or raise _Full (and keep nothing more) past a bound."""
        if self._dropped or self._kept_bytes + size > self.max_bytes:
            raise _Full
        self._kept_bytes += size

    def _reduce(self, event: Event, at: int) -> None:
        if isinstance(event, (MessageChunk, ThoughtChunk)):
            self._text(event, at)
        elif isinstance(event, ToolCallPatch):
            self._tool(event, at)
        elif isinstance(event, PlanUpdate):
            self._agent_event(at)
            self._open_text = None
            self._new_step("plan", at, entries=list(event.entries))
        elif isinstance(event, UsageUpdate):
            self._merge_usage(event)
        elif isinstance(event, PermissionStep):
            self._open_text = None
            self._new_step(
                "permission",
                at,
                tool_call_id=event.tool_call_id,
                extra={"request": event.request, "decision": event.decision},
            )
        elif isinstance(event, FinalOutput):
            self._agent_event(at)
            self._final = event.text
        elif isinstance(event, RawUpdate):
            self._new_step("event", at, name=event.kind, extra={"kind": event.kind, "data": event.data})
        else:  # pragma: no cover - the union above is closed
            raise TypeError(f"not a trajectory event: {event!r}")

    def _agent_event(self, at: int) -> None:
        if self._first_response is None:
            self._first_response = at

    def _new_step(self, type_: str, at: int, **fields: Any) -> TrajectoryStep:
        if len(self.steps) >= self.max_steps:
            raise _Full
        step = TrajectoryStep(type=type_, step_id=f"s{len(self.steps) + 1}", timestamp=at, turn=self.turn, **fields)  # type: ignore[arg-type]
        self.steps.append(step)
        return step

    def _text(self, event: MessageChunk | ThoughtChunk, at: int) -> None:
        kind = "thought" if isinstance(event, ThoughtChunk) else "message"
        role = None if kind == "thought" else event.role  # type: ignore[union-attr]
        if role != "user":
            self._agent_event(at)
        if event.message_id is not None:
            key = (kind, event.message_id)
            step = self._by_message.get(key)
            if step is None or step.turn != self.turn:  # an id reused in a later turn is a new message
                step = self._new_step(kind, at, role=role, content="", message_id=event.message_id)
                self._by_message[key] = step
            step.content = (step.content or "") + event.text
            self._open_text = step
            return
        step = self._open_text
        if (
            event.new
            or step is None
            or step.type != kind
            or step.message_id is not None
            or step.role != role
            or step.turn != self.turn
        ):
            step = self._new_step(kind, at, role=role, content="")
            self._open_text = step
        step.content = (step.content or "") + event.text

    def _tool(self, patch: ToolCallPatch, at: int) -> None:
        self._agent_event(at)
        self._open_text = None
        step = self._tools.get(patch.tool_call_id)
        if step is not None and patch.announces and (step.end is not None or step.turn != self.turn):
            step = None  # the id is reused for a new call, which belongs to this turn
        if step is None:
            step = self._new_step("tool_call", at, tool_call_id=patch.tool_call_id, status=patch.status or "pending", start=at)
            self._tools[patch.tool_call_id] = step
        for attr, value in (
            ("name", patch.name),
            ("title", patch.title),
            ("kind", patch.kind),
            ("status", patch.status),
            ("input", patch.input),
            ("output", patch.output),
            ("tool_content", patch.content),
            ("locations", patch.locations),
        ):
            if value is not None:
                setattr(step, attr, value)
        if step.name is None and step.title is not None:
            step.name = step.title
        if patch.extra:
            step.extra = {**(step.extra or {}), **patch.extra}
        if step.status in ("completed", "failed") and step.end is None:
            step.end = at
            step.duration = at - (step.start if step.start is not None else at)

    def _merge_usage(self, event: UsageUpdate) -> None:
        current = self._usage or Usage()
        new = event.usage
        for name in Usage.__struct_fields__:
            value = getattr(new, name)
            if value is None:
                continue
            if event.mode == "add" and name in _USAGE_FIELDS and getattr(current, name) is not None:
                value = getattr(current, name) + value
            setattr(current, name, value)
        self._usage = current

    def finish(self) -> Reduced:
        """Output rule: an explicit final answer if the adapter got one, else the text of the
        last agent message of the last turn (empty when the agent said nothing)."""
        output = self._final
        if output is None:
            output = ""
            for step in reversed(self.steps):
                if step.type == "message" and step.role == "user":
                    break
                if step.type == "message" and step.role != "user":
                    output = step.content or ""
                    break
        tool_errors = any(s.type == "tool_call" and s.status == "failed" for s in self.steps)
        return Reduced(
            steps=self.steps,
            output=output,
            tool_errors=tool_errors,
            usage=self._usage,
            first_response=self._first_response,
            dropped=self._dropped,
        )
