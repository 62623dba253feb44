"""What each adapter takes: one frozen spec per adapter, the same record from the API and the CLI to a Ray node.

A spec is plain data (strings, numbers, paths, tuples), so it can be compared,
printed, pickled and sent to another process or machine. Its fields are exactly
the options its adapter honours, so an option an adapter would ignore cannot be
written; the adapter reads them from ``self.spec``. The specs live here, beside
the adapters, because adapters may import nothing of the runner; the Python API
re-exports them (``waza.ExecAgent``, ...).

Adding an adapter option is three places: the field here, the adapter's use of
it, and the CLI flag (``runner/cli/options.py``).
"""

from __future__ import annotations

import math
import shlex
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar, TypeAlias

import msgspec
from msgspec.structs import force_setattr

from waza.adapters.sandbox.bwrap import Sandbox
from waza.protocol.errors import ConfigError


def command_argv(value: object, name: str) -> tuple[str, ...]:
    """A command as a tuple of arguments: a string is split as a POSIX shell would (``"python x.py"``)."""
    if isinstance(value, str):
        return tuple(shlex.split(value))
    if not isinstance(value, (list, tuple)):
        raise ConfigError(f"{name} takes a command line (a string) or a sequence of arguments, got {value!r}")
    return tuple(str(c) for c in value)


class AgentBase(msgspec.Struct, frozen=True, kw_only=True):
    """Base of agent specs: ``adapter`` names the adapter; the other fields are its options."""

    adapter: ClassVar[str]
    #: Fields holding a file (a string given for one is made a Path).
    paths: ClassVar[frozenset[str]] = frozenset()
    #: The agent's command line: a sequence of arguments, or a string split as a POSIX shell would.
    command: str | Sequence[str] = ()

    def __post_init__(self) -> None:
        force_setattr(self, "command", command_argv(self.command, f"{type(self).__name__}.command"))
        for name in self.paths:
            value = getattr(self, name)
            if isinstance(value, str):
                force_setattr(self, name, Path(value))


class ProcessAgent(AgentBase, frozen=True, kw_only=True):
    """An agent that is a program waza starts: it can run in a sandbox and be given variables.

    ``env``: variables set for the agent (and what it starts) on top of waza's own environment, as if they
    were waza's: ``--serve-model`` points the agent at its server this way, leaving ``os.environ`` alone.
    ``sandbox``: run the agent (and all it starts) in a bubblewrap sandbox.
    """

    command: str | Sequence[str]
    env: Mapping[str, str] = msgspec.field(default_factory=dict)
    sandbox: Sandbox | None = None

    def __post_init__(self) -> None:
        super().__post_init__()
        if not isinstance(self.env, Mapping) or not all(isinstance(k, str) and isinstance(v, str) for k, v in self.env.items()):
            raise ConfigError(f"{type(self).__name__}.env takes a mapping of names to strings, got {self.env!r}")


class ExecAgent(ProcessAgent, frozen=True, kw_only=True):
    """A command run once per turn: the prompt on stdin, the answer on stdout (``events``: JSONL events)."""

    adapter: ClassVar[str] = "exec"
    events: bool = False


class AcpAgent(ProcessAgent, frozen=True, kw_only=True):
    """An agent speaking the Agent Client Protocol over stdio."""

    adapter: ClassVar[str] = "acp"
    paths: ClassVar[frozenset[str]] = frozenset({"mcp_config", "permission_rules", "raw_log"})
    mcp_servers: tuple[Mapping[str, Any], ...] = ()
    mcp_config: Path | None = None
    permission: str | None = None
    permission_rules: Path | None = None
    raw_log: Path | None = None
    auth_method: str | None = None

    def __post_init__(self) -> None:
        super().__post_init__()
        force_setattr(self, "mcp_servers", tuple(self.mcp_servers))


class HeadlessAgent(ProcessAgent, frozen=True, kw_only=True):
    """A CLI agent's headless mode, read through an adapter schema (a file or a bundled name)."""

    adapter: ClassVar[str] = "headless"
    paths: ClassVar[frozenset[str]] = frozenset({"schema", "raw_log"})
    command: str | Sequence[str] = ()
    schema: Path | None = None
    raw_log: Path | None = None


class HttpAgent(AgentBase, frozen=True, kw_only=True):
    """An OpenAI-compatible chat endpoint (``local_model``: a local model server started for the run)."""

    adapter: ClassVar[str] = "http"
    base_url: str | None = None
    model: str | None = None
    api_key_env: str | None = None
    system_prompt: str | None = None
    temperature: float | None = None
    max_tokens: int | None = None
    stream: bool = False
    local_model: bool = False
    #: Keep replies in the model cache and reuse them (keyed by the trial number in trials).
    cache: bool = False

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.temperature is not None and (not math.isfinite(self.temperature) or self.temperature < 0):
            raise ConfigError(f"HttpAgent.temperature must be a number of at least 0, got {self.temperature!r}")
        if self.max_tokens is not None and (isinstance(self.max_tokens, bool) or self.max_tokens < 1):
            raise ConfigError(f"HttpAgent.max_tokens must be at least 1, got {self.max_tokens!r}")


class ReplayAgent(AgentBase, frozen=True, kw_only=True):
    """Results recorded earlier, replayed as the agent's answers (to re-grade without the agent)."""

    adapter: ClassVar[str] = "replay"
    paths: ClassVar[frozenset[str]] = frozenset({"replay_from"})
    replay_from: Path | None = None


class MockAgent(AgentBase, frozen=True, kw_only=True):
    """The scripted offline agent (a prompt's ``mock`` key scripts it)."""

    adapter: ClassVar[str] = "mock"


def sandbox_of(agent: AgentBase) -> Sandbox | None:
    """The sandbox an agent spec asks for (only an agent that is a program waza starts can have one)."""
    return agent.sandbox if isinstance(agent, ProcessAgent) else None


AgentSpec: TypeAlias = ExecAgent | AcpAgent | HeadlessAgent | HttpAgent | ReplayAgent | MockAgent
#: The spec of each adapter, by its name.
AGENTS: dict[str, type[AgentSpec]] = {
    cls.adapter: cls for cls in (ExecAgent, AcpAgent, HeadlessAgent, HttpAgent, ReplayAgent, MockAgent)
}

__all__ = [
    "AGENTS",
    "AcpAgent",
    "AgentBase",
    "AgentSpec",
    "ExecAgent",
    "HeadlessAgent",
    "HttpAgent",
    "MockAgent",
    "ProcessAgent",
    "ReplayAgent",
    "command_argv",
    "sandbox_of",
]
