"""The headless adapter schema file format, as typed records: one msgspec decode checks its shape.

A schema file is decoded straight into these classes (``AdapterSchema.from_json``):
types, required keys, unknown keys, enums and bounds are checked in C as the file
is parsed, and a mistake is a RecordError naming the field path. Checking the file
against a JSON Schema at run time would load a validator library on every capture.

``schemas/adapter-headless.json`` is generated from these classes and their
docstrings (``python -m waza.adapters.headless_format > schemas/adapter-headless.json``)
for editors and other tools; a test regenerates it to prove it never drifts from
the code, and that it gives the same verdict as the decode. The rules a
field's type cannot say (a prompt goes after a flag or to stdin, not both; MCP
servers go after a flag or into a file named by a variable) are checks in
``__post_init__``, written into the published schema by :func:`published`.
"""

from __future__ import annotations

import sys
from typing import Annotated, Any, Literal

import msgspec
from msgspec import UNSET, Meta, UnsetType

from waza.protocol.codec import Record

__all__ = [
    "AdapterSchema",
    "Condition",
    "EmitAs",
    "Extract",
    "HistoryTemplate",
    "IsError",
    "Output",
    "OutputEvent",
    "PassthroughTypeMap",
    "Prompt",
    "Result",
    "Resume",
    "TestedWith",
    "allowed_values",
    "published",
    "render",
]

#: A JSON scalar. int and float stay apart: a match compares values and their types (1 is not 1.0).
Scalar = str | int | float | bool | None
NonEmpty = Annotated[str, Meta(min_length=1)]
EmitAs = Literal["message", "thought", "tool_call", "plan", "usage"]
StepType = Literal["thought", "tool_call", "message", "plan"]
StopReason = Literal["end_turn", "max_tokens", "max_turn_requests", "refusal", "cancelled"]


class TestedWith(Record, kw_only=True):
    """The CLI release this schema was written and tested against; `waza adapters list` shows it. A waza addition."""

    package: Annotated[str, Meta(min_length=1, description="The npm package (or other distribution name) of the CLI.")]
    version: NonEmpty


class Prompt(Record, kw_only=True):
    """How the prompt reaches the CLI: after a flag, as a positional argument, or on stdin (not both a
    non-empty flag and stdin)."""

    flag: Annotated[str, Meta(description="Flag before the prompt text; empty string for a positional argument.")] | UnsetType = (
        UNSET
    )
    stdin: Annotated[bool, Meta(description="Write the prompt to the CLI's stdin instead of passing it as an argument.")] = False
    stdin_format: (
        Annotated[
            Literal["text", "json"],
            Meta(
                description="acp-harness's option; both write the prompt text and a newline to stdin, as acp-harness 0.12 does."
            ),
        ]
        | UnsetType
    ) = UNSET

    def __post_init__(self) -> None:
        # The published schema states this as a ``not`` clause (published() below).
        if self.stdin and self.flag:
            raise ValueError("a non-empty flag and stdin true cannot go together: the prompt goes after the flag or to stdin")


class Output(Record, kw_only=True):
    """The arguments that make the CLI print JSON lines."""

    flag: Annotated[str, Meta(description="Flag that selects JSON output; empty string for none.")]
    value: str


class Resume(Record, kw_only=True):
    """stream mode: how a later turn continues the CLI's session."""

    flag: Annotated[
        str,
        Meta(
            min_length=1,
            description="Argument placed before the session id on later turns (a flag, or a subcommand such as codex's `resume`).",
        ),
    ]
    session_id_path: Annotated[
        str, Meta(description="JSONPath of the session id in the CLI's output lines; the first value found is kept.")
    ]


class Condition(Record, kw_only=True):
    """A condition on a line: the JSONPath selects values, and one of them must equal value."""

    path: Annotated[str, Meta(description="JSONPath (RFC 9535).")]
    value: (
        Annotated[
            Scalar, Meta(description="Holds when any selected value equals this; without it, when the path selects anything.")
        ]
        | UnsetType
    ) = UNSET


#: An extract field: a JSONPath, or a literal in single quotes.
JsonPath = str


class Extract(Record, kw_only=True):
    """Field -> JSONPath, or a literal in single quotes ('pending'). Which fields apply depends on emitAs."""

    content: JsonPath | UnsetType = UNSET
    message_id: JsonPath | UnsetType = UNSET
    tool_call_id: JsonPath | UnsetType = UNSET
    name: JsonPath | UnsetType = UNSET
    title: JsonPath | UnsetType = UNSET
    kind: JsonPath | UnsetType = UNSET
    status: JsonPath | UnsetType = UNSET
    input: JsonPath | UnsetType = UNSET
    output: JsonPath | UnsetType = UNSET
    entries: JsonPath | UnsetType = UNSET
    input_tokens: JsonPath | UnsetType = UNSET
    output_tokens: JsonPath | UnsetType = UNSET
    total_tokens: JsonPath | UnsetType = UNSET
    thought_tokens: JsonPath | UnsetType = UNSET
    cached_read_tokens: JsonPath | UnsetType = UNSET
    cached_write_tokens: JsonPath | UnsetType = UNSET
    cost: JsonPath | UnsetType = UNSET
    currency: JsonPath | UnsetType = UNSET
    tool_name: (
        Annotated[JsonPath, Meta(description="tool_call: the tool's name (acp-harness's key; the same as name).")] | UnsetType
    ) = UNSET
    mcp_server: (
        Annotated[JsonPath, Meta(description="tool_call: the MCP server the tool belongs to, kept in the step's extra.")]
        | UnsetType
    ) = UNSET

    def paths(self) -> dict[str, str]:
        """The fields given, by JSON name."""
        names = zip(self.__struct_fields__, self.__struct_encode_fields__, strict=True)
        return {key: value for attr, key in names if (value := getattr(self, attr)) is not UNSET}


class OutputEvent(Record, kw_only=True):
    """One mapping from the CLI's lines to trajectory steps."""

    match: Annotated[
        Condition | Annotated[list[Condition], Meta(min_length=1)],
        Meta(description="Condition(s) on the whole line; a list must all hold."),
    ]
    each: (
        Annotated[
            str,
            Meta(
                description="JSONPath selecting the parts of the line to emit one step each (e.g. content blocks); "
                "extract paths are then relative to each part ($ is the part)."
            ),
        ]
        | UnsetType
    ) = UNSET
    emit_as: EmitAs
    extract: Extract | UnsetType = UNSET
    chunks: Annotated[
        bool,
        Meta(
            description="message/thought only: the lines this mapping matches are pieces of one streamed message (such as "
            "Gemini CLI's delta events), joined until another step comes between. Without it each line (and each part "
            "with `each`) is a message of its own, as in acp-harness; lines with the same extracted messageId are one "
            "message either way. A waza addition."
        ),
    ] = False


class PassthroughTypeMap(Record, kw_only=True):
    """outputMode passthrough: which field of a line names its step type."""

    type_field: Annotated[str, Meta(min_length=1, description="The line's field holding its type (default: type).")] = "type"
    type_values: Annotated[
        dict[str, StepType],
        Meta(description="The CLI's type value -> step type; a value that already is a step type needs no entry."),
    ] = msgspec.field(default_factory=dict)


class IsError(Record, kw_only=True):
    """When the result line has this value at this path, the turn failed (the CLI reported an error while
    exiting 0): the record gets an error."""

    path: Annotated[str, Meta(description="JSONPath in the result line.")]
    value: Annotated[Scalar, Meta(description="The value meaning failure (default true).")] | UnsetType = UNSET


class Result(Record, kw_only=True):
    """The line that ends a turn. A turn whose CLI exits without printing it is an error.
    stopReasonPath/stopReasons and isError/errorMessagePath are waza additions."""

    match_path: str
    match_value: Scalar
    content_path: (
        Annotated[
            str,
            Meta(
                description="JSONPath of the final answer in the result line (required by acp-harness, optional here); "
                "when absent or selecting nothing, the output is the last agent message."
            ),
        ]
        | UnsetType
    ) = UNSET
    stop_reason_path: (
        Annotated[
            str,
            Meta(
                description="JSONPath of the turn's stop reason in the result line; it becomes exit.stopReason (of the "
                "last turn). A value that is not an ACP stop reason (end_turn, max_tokens, max_turn_requests, refusal, "
                "cancelled) after stopReasons is kept as a `stop_reason` event step instead."
            ),
        ]
        | UnsetType
    ) = UNSET
    stop_reasons: (
        Annotated[
            dict[str, StopReason],
            Meta(
                description="The CLI's stop reason values -> ACP stop reasons (e.g. Anthropic's stop_sequence -> end_turn); "
                "a value that already is one needs no entry. Only with stopReasonPath."
            ),
        ]
        | UnsetType
    ) = UNSET
    is_error: IsError | UnsetType = UNSET
    error_message_path: (
        Annotated[
            str,
            Meta(description="JSONPath of the error's text in the result line, for the record's error. Only with isError."),
        ]
        | UnsetType
    ) = UNSET


class HistoryTemplate(Record, kw_only=True):
    """A history template with a system block written once before the turns."""

    system: str | UnsetType = UNSET
    turn_format: str


class McpConfig(Record, kw_only=True):
    """How the CLI is handed MCP servers (a suite's ``mcp_mocks``): on its command line after ``flag``, or in a
    file whose path goes in the variable ``env`` (one of the two)."""

    flag: Annotated[str, Meta(min_length=1, description="The flag before each value, e.g. --mcp-config or -c.")] | UnsetType = (
        UNSET
    )
    env: (
        Annotated[
            str,
            Meta(
                min_length=1,
                description="A variable given the path of a file holding the value, for a CLI that reads MCP servers "
                "only from a config file, e.g. GEMINI_CLI_SYSTEM_DEFAULTS_PATH or OPENCODE_CONFIG.",
            ),
        ]
        | UnsetType
    ) = UNSET
    style: Annotated[
        Literal["json", "toml", "opencode"],
        Meta(
            description='json: one value, {"mcpServers": {NAME: {"command", "args", "env"}}} as JSON (Claude Code, '
            "Gemini CLI). toml: one value per server after flag, mcp_servers.NAME={command, args, env} as a TOML "
            'inline table (Codex\'s -c). opencode: one value, {"mcp": {NAME: {"type": "local", "command": [...], '
            '"environment"}}} as JSON (OpenCode).'
        ),
    ]
    server_fields: Annotated[
        dict[str, Any],
        Meta(
            description="Fields added as they are to every server's entry, e.g. Codex's "
            '{"required": true} (a server that fails to start fails the run instead of being dropped).'
        ),
    ] = msgspec.field(default_factory=dict)

    def __post_init__(self) -> None:
        if (self.flag is UNSET) == (self.env is UNSET):
            raise ValueError("mcpConfig takes flag or env, one of the two")
        if self.style == "toml" and self.flag is UNSET:
            raise ValueError("mcpConfig style toml is one value per server after flag; it takes flag, not env")


class AdapterSchema(Record, kw_only=True):
    """How to drive a CLI agent that prints one JSON event per line, and how to map its lines to trajectory
    steps. The acp-harness format (version 1 and 2) is accepted unchanged; `each`, a list of conditions in
    `match`, emitAs `usage`, and the extract keys beyond content/title/status/input/output are waza additions."""

    schema: str | UnsetType = msgspec.field(default=UNSET, name="$schema")
    version: Annotated[Literal[1, 2], Meta(description="Schema format version (acp-harness 1 or 2; both read the same here).")]
    name: NonEmpty
    description: str | UnsetType = UNSET
    tested_with: TestedWith | UnsetType = UNSET
    command: Annotated[list[str], Meta(min_length=1, description='The CLI and any subcommands, e.g. ["codex", "exec"].')]
    session_mode: Annotated[
        Literal["stream", "iterative"],
        Meta(
            description="stream: the CLI keeps the conversation; later turns pass resume.flag with the captured session "
            "id. iterative: every turn is a fresh process given the earlier turns through historyTemplate."
        ),
    ]
    timeout: (
        Annotated[
            float,
            Meta(
                gt=0,
                description="Default per-prompt limit in milliseconds, used when neither the prompt nor --timeout sets one.",
            ),
        ]
        | UnsetType
    ) = UNSET
    prompt: Prompt
    output: Output
    auto_approve: Annotated[list[str], Meta(description="Arguments that make the CLI run without asking for permission.")] = (
        msgspec.field(default_factory=list)
    )
    confined_auto_approve: (
        Annotated[
            list[str],
            Meta(
                description="Arguments used instead of autoApprove when waza confines the CLI (--sandbox, a benchmark "
                "task's environment): a CLI's own sandbox cannot nest in waza's, so these turn it off, waza's being "
                "the one that holds."
            ),
        ]
        | UnsetType
    ) = UNSET
    cwd_flag: (
        Annotated[
            str,
            Meta(
                min_length=1,
                description="Flag that passes the workspace directory, for CLIs that do not use their working directory.",
            ),
        ]
        | UnsetType
    ) = UNSET
    resume: Resume | UnsetType = UNSET
    mcp_config: McpConfig | UnsetType = UNSET
    state_dir_env: (
        Annotated[
            str,
            Meta(
                pattern=r"^[A-Za-z_][A-Za-z0-9_]*$",
                description="The environment variable naming the folder the CLI reads its config from and writes its "
                "state to (sessions, logs), e.g. CODEX_HOME. Inside a benchmark task's environment waza points it at a "
                "writable folder of the trial, seeded with the files of the folder it named.",
            ),
        ]
        | UnsetType
    ) = UNSET
    output_events: Annotated[list[OutputEvent], Meta(description="Required unless outputMode is passthrough.")] = msgspec.field(
        default_factory=list
    )
    output_mode: Annotated[
        Literal["jsonpath", "passthrough"],
        Meta(
            description="jsonpath (default): outputEvents map the lines. passthrough: each line's type field names its "
            "step type, through passthroughTypeMap."
        ),
    ] = "jsonpath"
    passthrough_type_map: PassthroughTypeMap | UnsetType = UNSET
    result: Result
    history_template: (
        Annotated[
            str | HistoryTemplate,
            Meta(
                description="iterative mode: how earlier turns are written into the next prompt; {{input}} and "
                "{{output}} are replaced."
            ),
        ]
        | UnsetType
    ) = UNSET


def allowed_values(path: str) -> list[Any]:
    """The values the enum at ``path`` (``outputEvents.1.emitAs``; a map's name for its values) allows, for an
    error message; empty when there is no enum there."""
    from msgspec import inspect  # on the error path only

    def members(info: inspect.Type) -> list[inspect.Type]:
        if isinstance(info, inspect.Metadata):
            return members(info.type)
        if isinstance(info, inspect.UnionType):
            return [m for t in info.types for m in members(t)]
        return [info]

    found = members(inspect.type_info(AdapterSchema))
    for part in path.split("."):
        inner: list[inspect.Type] = []
        for info in found:
            if isinstance(info, inspect.StructType):
                inner += [m for f in info.fields if f.encode_name == part for m in members(f.type)]
            elif isinstance(info, inspect.ListType) and part.isdigit():
                inner += members(info.item_type)
        found = inner
    found = [m for info in found for m in (members(info.value_type) if isinstance(info, inspect.DictType) else [info])]
    return sorted((v for info in found if isinstance(info, inspect.LiteralType) for v in info.values), key=str)


def published() -> dict[str, Any]:
    """``schemas/adapter-headless.json``: msgspec's schema of AdapterSchema, plus the rule a type cannot say."""
    from waza.protocol.schemas import schema_for  # only the maintainer's command and the tests generate it

    schema = schema_for(AdapterSchema, name="adapter-headless")
    schema["title"] = "headless adapter schema"
    # Prompt.__post_init__'s rule: not both a non-empty flag and stdin true.
    schema["$defs"]["Prompt"]["not"] = {
        "required": ["flag", "stdin"],
        "properties": {"flag": {"minLength": 1}, "stdin": {"const": True}},
    }
    # McpConfig.__post_init__'s rules: flag or env, one of the two; style toml takes flag.
    schema["$defs"]["McpConfig"]["oneOf"] = [{"required": ["flag"]}, {"required": ["env"]}]
    schema["$defs"]["McpConfig"]["if"] = {"properties": {"style": {"const": "toml"}}}
    schema["$defs"]["McpConfig"]["then"] = {"required": ["flag"]}
    return schema


def render() -> bytes:
    """The published schema file's bytes."""
    import orjson

    return orjson.dumps(published(), option=orjson.OPT_INDENT_2) + b"\n"


if __name__ == "__main__":
    sys.stdout.buffer.write(render())
