"""The records waza reads and writes, one msgspec Struct per published schema (see codec.py).

JSON field names are camelCase and keep the names and meanings of the
acp-harness records (``toolErrors``, ``timing.firstResponse``, ``score.pass``)
so existing ``jq`` pipelines keep working; waza only adds to them.
"""

from __future__ import annotations

from typing import Annotated, Any, ClassVar, Literal

from msgspec import Meta, field

from .codec import Record, always

#: Grader protocol version. "2" added ``requestId``: worker answers must echo it (README, Worker mode).
PROTOCOL_VERSION = "2"

StepType = Literal["message", "thought", "tool_call", "plan", "permission", "event"]
ToolStatus = Literal["pending", "in_progress", "completed", "failed"]
StopReason = Literal["end_turn", "max_tokens", "max_turn_requests", "refusal", "cancelled"]
GradeStatus = Literal["passed", "failed", "error", "pending"]
ResultStatus = Literal["passed", "failed", "error", "pending", "ungraded"]
#: A number in [0, 1]: scores, rates, shares.
Unit = Annotated[float, Meta(ge=0, le=1)]


class PromptCase(Record, kw_only=True):
    """One line of a prompts file: what to ask the agent and what graders may compare against."""

    aliases: ClassVar[dict[str, str]] = {"expected": "hint"}

    id: Annotated[str, Meta(min_length=1, description="Unique within the file; results are keyed by it.")]
    input: Annotated[str | list[str], Meta(description="The prompt, or a list of user turns of one conversation.")]
    hint: Annotated[str | None, Meta(description="Context for graders (older name: expected).")] = None
    reference: Annotated[str | None, Meta(description="A reference solution, for validate-refs and judges.")] = None
    metadata: Annotated[dict[str, Any], Meta(description="Free-form; copied to the result.")] = {}
    timeout: Annotated[
        Annotated[float, Meta(gt=0)] | None, Meta(description="Per-prompt limit in seconds, overriding --timeout.")
    ] = None
    unknown: dict[str, Any] = {}

    @property
    def turns(self) -> list[str]:
        return [self.input] if isinstance(self.input, str) else list(self.input)


class TrajectoryStep(Record, kw_only=True, omit_defaults=True):
    """One step of what the agent did; fields that do not apply to a step's type are left out."""

    type: Annotated[StepType, Meta(description="message, thought, tool_call, plan, permission, or event (anything else).")]
    step_id: Annotated[
        str | None, Meta(description="Stable id of the step within its result (waza writes one; other tools may not).")
    ] = None
    timestamp: Annotated[int, Meta(description="Milliseconds since the prompt started, taken when the event arrived.")]
    turn: Annotated[int | None, Meta(description="Index of the user turn this step belongs to.")] = None
    role: Annotated[Literal["agent", "user"] | None, Meta(description="Who spoke, on message steps.")] = None
    content: Annotated[str | None, Meta(description="Text of a message or thought.")] = None
    message_id: Annotated[str | None, Meta(description="The agent's message id, when it sends one.")] = None
    tool_call_id: Annotated[str | None, Meta(description="Id pairing a tool call's updates.")] = None
    name: Annotated[str | None, Meta(description="Tool name (for ACP agents, the title).")] = None
    title: Annotated[str | None, Meta(description="Human-readable tool call title.")] = None
    kind: Annotated[str | None, Meta(description="Tool kind: read, edit, execute, search, fetch, think, other...")] = None
    status: Annotated[
        str | None,
        Meta(description="Tool call status: waza writes pending, in_progress, completed or failed; read as any string."),
    ] = None
    input: Annotated[Any, Meta(description="Tool call input (raw arguments).")] = None
    output: Annotated[Any, Meta(description="Tool call output (raw result).")] = None
    tool_content: Annotated[list[Any] | None, Meta(description="Tool content blocks: text, diffs, terminals.")] = None
    locations: Annotated[list[Any] | None, Meta(description="Files and lines a tool call touched.")] = None
    start: Annotated[int | None, Meta(description="Tool call start, ms since the prompt started.")] = None
    end: Annotated[int | None, Meta(description="Tool call end, ms since the prompt started.")] = None
    duration: Annotated[int | None, Meta(description="Tool call duration in ms (end - start).")] = None
    entries: Annotated[list[Any] | None, Meta(description="Plan entries (content, priority, status).")] = None
    extra: Annotated[
        dict[str, Any] | None, Meta(description="Adapter-specific detail: raw update, permission request and decision.")
    ] = None


class Timing(Record, kw_only=True, omit_defaults=True):
    """When things happened: epoch milliseconds for start/end, durations in ms."""

    start: Annotated[int, Meta(description="Epoch ms when the prompt started.")]
    end: Annotated[int, Meta(description="Epoch ms when the agent finished.")]
    total: Annotated[int, Meta(description="end - start, in ms.")]
    first_response: Annotated[int | None, Meta(description="ms from start to the first agent event.")] = None
    session_creation: Annotated[int | None, Meta(description="ms spent creating the agent session (ACP).")] = None
    input_tokens: Annotated[int | None, Meta(description="Copy of usage.inputTokens (acp-harness place).")] = None
    output_tokens: Annotated[int | None, Meta(description="Copy of usage.outputTokens (acp-harness place).")] = None


class Usage(Record, kw_only=True, omit_defaults=True):
    """Token and cost accounting, when the agent reports it; an absent field means unknown, not zero."""

    input_tokens: int | None = None
    output_tokens: int | None = None
    total_tokens: int | None = None
    thought_tokens: int | None = None
    cached_read_tokens: int | None = None
    cached_write_tokens: int | None = None
    cost: Annotated[float | None, Meta(description="Cost of the prompt, in `currency`.")] = None
    currency: str | None = None
    context_used: Annotated[int | None, Meta(description="Tokens in the context window (ACP usage_update).")] = None
    context_size: Annotated[int | None, Meta(description="Size of the context window.")] = None


class Exit(Record, kw_only=True):
    """How the agent finished."""

    code: Annotated[int | None, Meta(description="Process exit code, when a process ended.")] = None
    signal: Annotated[int | None, Meta(description="Signal that ended the process.")] = None
    timed_out: Annotated[bool, Meta(description="The per-prompt timeout fired.")] = False
    stop_reason: Annotated[StopReason | None, Meta(description="ACP stop reason of the last turn.")] = None


class Grade(Record, kw_only=True):
    """One grader's verdict on one result. An error is not a fail: pass and score are null."""

    name: str
    status: Annotated[GradeStatus, Meta(description="passed, failed, error (the grader broke), or pending (human review).")]
    passed: Annotated[bool | None, Meta(description="The verdict; null on error or pending.")] = field(default=None, name="pass")
    score: Annotated[Unit | None, Meta(description="In [0, 1]; null on error or pending.")] = None
    reasoning: str = ""
    outcome: Annotated[dict[str, Any], Meta(description="Merged onto the result's outcome.")] = {}
    details: Annotated[dict[str, Any], Meta(description="Grader-specific detail.")] = {}
    weight: Annotated[float, Meta(ge=0, description="Weight in the result's aggregate score.")] = 1.0
    duration: Annotated[float, Meta(description="ms the grader took.")] = 0.0
    error: Annotated[str | None, Meta(description="Why the grader failed to give a verdict.")] = None


class Verdict(Record, kw_only=True):
    """The aggregate over all grades of a result (acp-harness: the result's `score`)."""

    status: GradeStatus
    passed: Annotated[bool | None, Meta(description="All graders passed; null on error or pending.")] = field(
        default=None, name="pass"
    )
    score: Annotated[Unit | None, Meta(description="Weighted mean of non-pending scores.")] = None
    reasoning: str = ""


class CaptureResult(Record, kw_only=True, omit_defaults=True):
    """One prompt's run: what the agent did, how it ended, and what the graders said."""

    id: str
    input: str | list[str]
    output: Annotated[str, Meta(description="Final agent message text of the last turn.")]
    hint: str | None = None
    reference: str | None = None
    trajectory: list[TrajectoryStep] = always([])
    metadata: dict[str, Any] = always({})
    timing: Timing | None = None
    usage: Usage | None = None
    exit: Exit | None = None
    tool_errors: Annotated[bool, Meta(description="Any tool call failed.")] = always(False)
    errors: Annotated[list[str], Meta(description="Agent-side errors; non-empty means status error.")] = always([])
    grades: list[Grade] = always([])
    score: Annotated[Verdict | None, Meta(description="Aggregate verdict; absent when ungraded.")] = None
    outcome: Annotated[dict[str, Any], Meta(description="Graders' outcome objects, merged.")] = always({})
    status: ResultStatus = always("ungraded")
    trial: Annotated[int | None, Meta(description="Trial number (trials command), from 1.")] = None
    adapter: Annotated[str | None, Meta(description="Adapter that produced the result.")] = None
    cwd: Annotated[str | None, Meta(description="Absolute workspace the agent ran in.")] = None
    stderr: Annotated[str | None, Meta(description="Tail of the agent's stderr.")] = None
    unknown: dict[str, Any] = {}


class GraderRequest(Record, kw_only=True):
    """What a grader reads on stdin: a superset of both reference protocols' inputs."""

    protocol: str = PROTOCOL_VERSION
    id: str = ""
    input: str | list[str] = ""
    output: str = ""
    hint: str | None = None
    expected: Annotated[str | None, Meta(description="Same as hint, for graders written for acp-harness.")] = None
    reference: str | None = None
    trajectory: Annotated[list[Any], Meta(description="TrajectoryStep objects.")] = []
    metadata: dict[str, Any] = {}
    cwd: Annotated[str | None, Meta(description="Absolute workspace directory, when there is one.")] = None
    config: Annotated[dict[str, Any], Meta(description="This grader's own configuration.")] = {}
    timing: dict[str, Any] | None = None
    usage: dict[str, Any] | None = None
    exit: dict[str, Any] | None = None
    errors: list[str] = []
    tool_errors: bool = False
    trial: int | None = None
    request_id: Annotated[
        str | None,
        Meta(
            description="Worker mode: this exchange's id, unique per worker grader; the answer must echo it. Null in one-shot mode."
        ),
    ] = None
    unknown: dict[str, Any] = {}


class GraderResult(Record, kw_only=True, omit_defaults=True):
    """What a grader writes on stdout. See protocol.grader_protocol for the accepted dialects."""

    passed: Annotated[bool | None, Meta(description="Required unless status is pending.")] = field(default=None, name="pass")
    score: Annotated[Unit | None, Meta(description="Finite, in [0, 1].")] = None
    reasoning: str | None = None
    outcome: dict[str, Any] | None = None
    details: dict[str, Any] | None = None
    status: Annotated[Literal["pending"] | None, Meta(description="'pending': awaiting human review.")] = None
    request_id: Annotated[
        str | None, Meta(description="Worker mode: the requestId of the request answered (required there).")
    ] = None
