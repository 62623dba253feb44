"""The records waza reads and writes, one dataclass per published schema.

JSON field names are camelCase and keep the names and meanings of the
acp-harness records (``toolErrors``, ``timing.firstResponse``, ``score.pass``)
so existing ``jq`` pipelines keep working; waza only adds to them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal

from .codec import Record, doc

#: Grader protocol version. "2" added ``requestId``: worker answers must echo it (README, Worker mode).
PROTOCOL_VERSION = "2"

StepType = Literal["message", "thought", "tool_call", "plan", "permission", "event"]
ToolStatus = Literal["pending", "in_progress", "completed", "failed"]
StopReason = Literal["end_turn", "max_tokens", "max_turn_requests", "refusal", "cancelled"]
GradeStatus = Literal["passed", "failed", "error", "pending"]
ResultStatus = Literal["passed", "failed", "error", "pending", "ungraded"]


@dataclass(slots=True, kw_only=True)
class PromptCase(Record):
    """One line of a prompts file: what to ask the agent and what graders may compare against."""

    _passthrough: ClassVar[str | None] = "unknown"
    _aliases: ClassVar[dict[str, str]] = {"expected": "hint"}

    id: str = field(metadata=doc("Unique within the file; results are keyed by it.", minLength=1))
    input: str | list[str] = field(metadata=doc("The prompt, or a list of user turns of one conversation."))
    hint: str | None = field(default=None, metadata=doc("Context for graders (older name: expected)."))
    reference: str | None = field(default=None, metadata=doc("A reference solution, for validate-refs and judges."))
    metadata: dict[str, Any] = field(default_factory=dict, metadata=doc("Free-form; copied to the result."))
    timeout: float | None = field(
        default=None, metadata=doc("Per-prompt limit in seconds, overriding --timeout.", exclusiveMinimum=0)
    )
    unknown: dict[str, Any] = field(default_factory=dict)

    @property
    def turns(self) -> list[str]:
        return [self.input] if isinstance(self.input, str) else list(self.input)


@dataclass(slots=True, kw_only=True)
class TrajectoryStep(Record):
    """One step of what the agent did; fields that do not apply to a step's type are left out."""

    _omit_none: ClassVar[bool] = True

    type: StepType = field(metadata=doc("message, thought, tool_call, plan, permission, or event (anything else)."))
    step_id: str | None = field(
        default=None, metadata=doc("Stable id of the step within its result (waza writes one; other tools may not).")
    )
    timestamp: int = field(metadata=doc("Milliseconds since the prompt started, taken when the event arrived."))
    turn: int | None = field(default=None, metadata=doc("Index of the user turn this step belongs to."))
    role: Literal["agent", "user"] | None = field(default=None, metadata=doc("Who spoke, on message steps."))
    content: str | None = field(default=None, metadata=doc("Text of a message or thought."))
    message_id: str | None = field(default=None, metadata=doc("The agent's message id, when it sends one."))
    tool_call_id: str | None = field(default=None, metadata=doc("Id pairing a tool call's updates."))
    name: str | None = field(default=None, metadata=doc("Tool name (for ACP agents, the title)."))
    title: str | None = field(default=None, metadata=doc("Human-readable tool call title."))
    kind: str | None = field(default=None, metadata=doc("Tool kind: read, edit, execute, search, fetch, think, other..."))
    status: str | None = field(
        default=None, metadata=doc("Tool call status: waza writes pending, in_progress, completed or failed; read as any string.")
    )
    input: Any = field(default=None, metadata=doc("Tool call input (raw arguments)."))
    output: Any = field(default=None, metadata=doc("Tool call output (raw result)."))
    tool_content: list[Any] | None = field(default=None, metadata=doc("Tool content blocks: text, diffs, terminals."))
    locations: list[Any] | None = field(default=None, metadata=doc("Files and lines a tool call touched."))
    start: int | None = field(default=None, metadata=doc("Tool call start, ms since the prompt started."))
    end: int | None = field(default=None, metadata=doc("Tool call end, ms since the prompt started."))
    duration: int | None = field(default=None, metadata=doc("Tool call duration in ms (end - start)."))
    entries: list[Any] | None = field(default=None, metadata=doc("Plan entries (content, priority, status)."))
    extra: dict[str, Any] | None = field(
        default=None, metadata=doc("Adapter-specific detail: raw update, permission request and decision.")
    )


@dataclass(slots=True, kw_only=True)
class Timing(Record):
    """When things happened: epoch milliseconds for start/end, durations in ms."""

    _omit_none: ClassVar[bool] = True  # an unknown figure is left out (acp-harness refuses null here)

    start: int = field(metadata=doc("Epoch ms when the prompt started."))
    end: int = field(metadata=doc("Epoch ms when the agent finished."))
    total: int = field(metadata=doc("end - start, in ms."))
    first_response: int | None = field(default=None, metadata=doc("ms from start to the first agent event."))
    session_creation: int | None = field(default=None, metadata=doc("ms spent creating the agent session (ACP)."))
    input_tokens: int | None = field(default=None, metadata=doc("Copy of usage.inputTokens (acp-harness place)."))
    output_tokens: int | None = field(default=None, metadata=doc("Copy of usage.outputTokens (acp-harness place)."))


@dataclass(slots=True, kw_only=True)
class Usage(Record):
    """Token and cost accounting, when the agent reports it; an absent field means unknown, not zero."""

    _omit_none: ClassVar[bool] = True

    input_tokens: int | None = None
    output_tokens: int | None = None
    total_tokens: int | None = None
    thought_tokens: int | None = None
    cached_read_tokens: int | None = None
    cached_write_tokens: int | None = None
    cost: float | None = field(default=None, metadata=doc("Cost of the prompt, in `currency`."))
    currency: str | None = None
    context_used: int | None = field(default=None, metadata=doc("Tokens in the context window (ACP usage_update)."))
    context_size: int | None = field(default=None, metadata=doc("Size of the context window."))


@dataclass(slots=True, kw_only=True)
class Exit(Record):
    """How the agent finished."""

    code: int | None = field(default=None, metadata=doc("Process exit code, when a process ended."))
    signal: int | None = field(default=None, metadata=doc("Signal that ended the process."))
    timed_out: bool = field(default=False, metadata=doc("The per-prompt timeout fired."))
    stop_reason: StopReason | None = field(default=None, metadata=doc("ACP stop reason of the last turn."))


@dataclass(slots=True, kw_only=True)
class Grade(Record):
    """One grader's verdict on one result. An error is not a fail: pass and score are null."""

    name: str
    status: GradeStatus = field(metadata=doc("passed, failed, error (the grader broke), or pending (human review)."))
    passed: bool | None = field(default=None, metadata=doc("The verdict; null on error or pending.", json="pass"))
    score: float | None = field(default=None, metadata=doc("In [0, 1]; null on error or pending.", minimum=0, maximum=1))
    reasoning: str = ""
    outcome: dict[str, Any] = field(default_factory=dict, metadata=doc("Merged onto the result's outcome."))
    details: dict[str, Any] = field(default_factory=dict, metadata=doc("Grader-specific detail."))
    weight: float = field(default=1.0, metadata=doc("Weight in the result's aggregate score.", minimum=0))
    duration: float = field(default=0.0, metadata=doc("ms the grader took."))
    error: str | None = field(default=None, metadata=doc("Why the grader failed to give a verdict."))


@dataclass(slots=True, kw_only=True)
class Verdict(Record):
    """The aggregate over all grades of a result (acp-harness: the result's `score`)."""

    status: GradeStatus
    passed: bool | None = field(default=None, metadata=doc("All graders passed; null on error or pending.", json="pass"))
    score: float | None = field(default=None, metadata=doc("Weighted mean of non-pending scores.", minimum=0, maximum=1))
    reasoning: str = ""


@dataclass(slots=True, kw_only=True)
class CaptureResult(Record):
    """One prompt's run: what the agent did, how it ended, and what the graders said."""

    _passthrough: ClassVar[str | None] = "unknown"
    _omit_none: ClassVar[bool] = True  # an absent optional field is left out, never null (as acp-harness reads it)

    id: str
    input: str | list[str]
    output: str = field(metadata=doc("Final agent message text of the last turn."))
    hint: str | None = None
    reference: str | None = None
    trajectory: list[TrajectoryStep] = field(default_factory=list)
    metadata: dict[str, Any] = field(default_factory=dict)
    timing: Timing | None = None
    usage: Usage | None = None
    exit: Exit | None = None
    tool_errors: bool = field(default=False, metadata=doc("Any tool call failed."))
    errors: list[str] = field(default_factory=list, metadata=doc("Agent-side errors; non-empty means status error."))
    grades: list[Grade] = field(default_factory=list)
    score: Verdict | None = field(default=None, metadata=doc("Aggregate verdict; absent when ungraded."))
    outcome: dict[str, Any] = field(default_factory=dict, metadata=doc("Graders' outcome objects, merged."))
    status: ResultStatus = "ungraded"
    trial: int | None = field(default=None, metadata=doc("Trial number (trials command), from 1."))
    adapter: str | None = field(default=None, metadata=doc("Adapter that produced the result."))
    cwd: str | None = field(default=None, metadata=doc("Absolute workspace the agent ran in."))
    stderr: str | None = field(default=None, metadata=doc("Tail of the agent's stderr."))
    unknown: dict[str, Any] = field(default_factory=dict)


@dataclass(slots=True, kw_only=True)
class GraderRequest(Record):
    """What a grader reads on stdin: a superset of both reference protocols' inputs."""

    _passthrough: ClassVar[str | None] = "unknown"

    protocol: str = PROTOCOL_VERSION
    id: str = ""
    input: str | list[str] = ""
    output: str = ""
    hint: str | None = None
    expected: str | None = field(default=None, metadata=doc("Same as hint, for graders written for acp-harness."))
    reference: str | None = None
    trajectory: list[Any] = field(default_factory=list, metadata=doc("TrajectoryStep objects."))
    metadata: dict[str, Any] = field(default_factory=dict)
    cwd: str | None = field(default=None, metadata=doc("Absolute workspace directory, when there is one."))
    config: dict[str, Any] = field(default_factory=dict, metadata=doc("This grader's own configuration."))
    timing: dict[str, Any] | None = None
    usage: dict[str, Any] | None = None
    exit: dict[str, Any] | None = None
    errors: list[str] = field(default_factory=list)
    tool_errors: bool = False
    trial: int | None = None
    request_id: str | None = field(
        default=None,
        metadata=doc(
            "Worker mode: this exchange's id, unique per worker grader; the answer must echo it. Null in one-shot mode."
        ),
    )
    unknown: dict[str, Any] = field(default_factory=dict)


@dataclass(slots=True, kw_only=True)
class GraderResult(Record):
    """What a grader writes on stdout. See protocol.grading for the accepted dialects."""

    _omit_none: ClassVar[bool] = True

    passed: bool | None = field(default=None, metadata=doc("Required unless status is pending.", json="pass"))
    score: float | None = field(default=None, metadata=doc("Finite, in [0, 1].", minimum=0, maximum=1))
    reasoning: str | None = None
    outcome: dict[str, Any] | None = None
    details: dict[str, Any] | None = None
    status: Literal["pending"] | None = field(default=None, metadata=doc("'pending': awaiting human review."))
    request_id: str | None = field(
        default=None, metadata=doc("Worker mode: the requestId of the request answered (required there).")
    )
