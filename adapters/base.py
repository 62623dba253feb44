"""The one interface every agent adapter implements.

An adapter is to waza what a transport is to httpx: a plug-in that knows how to
talk to one kind of agent. The runner opens one adapter instance per worker
(``async with``), so an adapter that keeps a long-lived agent process (ACP) owns
it for that worker's lifetime, and calls :meth:`Adapter.run` once per prompt
(and trial). The adapter reports what the agent does as trajectory events on
``task.recorder`` and returns how the agent finished; it enforces ``task.timeout``
itself, because only it knows how to stop its agent politely.
"""

from __future__ import annotations

import abc
from collections.abc import Callable, Mapping, Sequence
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any, ClassVar

import msgspec

from waza.adapters.sandbox.bwrap import Sandbox, plan, relayed, sandbox_env, wrap_command
from waza.protocol.io.secrets import for_agents
from waza.protocol.records import Exit, PromptCase
from waza.protocol.trajectory import TrajectoryBuilder

#: A runner-given mapping of an agent's command line and environment to those that start it somewhere else.
Confine = Callable[[Sequence[str], Mapping[str, str]], tuple[list[str], dict[str, str]]]


class AgentTask(msgspec.Struct):
    """One prompt (one trial of it) for an adapter to run."""

    case: PromptCase
    workspace: Path
    recorder: TrajectoryBuilder
    timeout: float | None = None
    trial: int | None = None


class AgentRun(msgspec.Struct):
    """How the agent finished; the trajectory itself is in the task's recorder."""

    exit: Exit = msgspec.field(default_factory=Exit)
    errors: list[str] = msgspec.field(default_factory=list)
    stderr: str | None = None
    session_creation_ms: int | None = None


class AdapterOptions(msgspec.Struct):
    """Every adapter option the CLI and suite files can set; each adapter declares which it honours.

    An option set on the command line that the chosen adapter does not honour is
    a usage error (exit 2), never silently ignored.
    """

    # exec
    events: bool = False
    # acp
    mcp_servers: list[dict[str, Any]] = msgspec.field(default_factory=list)
    mcp_config: Path | None = None
    permission: str | None = None
    permission_rules: Path | None = None
    raw_log: Path | None = None
    auth_method: str | None = None
    # headless
    schema: Path | None = None
    # replay
    replay_from: Path | None = None
    # http
    base_url: str | None = None
    model: str | None = None
    api_key_env: str | None = None
    system_prompt: str | None = None
    temperature: float | None = None
    max_tokens: int | None = None
    stream: bool = False
    local_model: bool = False
    cache: bool = False
    # exec, headless, acp: run the agent (and all it starts) in a bubblewrap sandbox
    sandbox: Sandbox | None = None
    # exec, headless, acp: run the agent inside a benchmark task's environment (set by the runner, not a flag):
    # maps the agent's command line and environment to the ones that start it there
    confine: Confine | None = None

    def given(self) -> set[str]:
        """Names of the options set to something other than their default."""
        defaults = AdapterOptions()
        return {name for name in self.__struct_fields__ if getattr(self, name) != getattr(defaults, name)}


class Adapter(abc.ABC):
    """Base class of agent adapters.

    Subclasses set ``name``, ``options`` (the AdapterOptions fields they honour),
    ``needs_command`` (whether an agent command line is required) and ``confinable``.
    """

    name: ClassVar[str]
    options: ClassVar[frozenset[str]] = frozenset()
    needs_command: ClassVar[bool] = True
    #: Whether the agent can run inside a benchmark task's environment (the runner's ``confine`` hook).
    confinable: ClassVar[bool] = False

    def __init__(self, command: list[str], opts: AdapterOptions) -> None:
        self.command = command
        if opts.sandbox is not None and not opts.sandbox.planned:  # the runner plans it once per run; the API may not have
            opts = msgspec.structs.replace(opts, sandbox=plan(opts.sandbox, self.agent_command(command, opts)))
        self.opts = opts
        self._sandbox_stack = AsyncExitStack()
        self._relay: Path | None = None

    @classmethod  # noqa: B027 - a hook, not abstract: an adapter with nothing to check inherits this no-op
    def check(cls, command: list[str], opts: AdapterOptions) -> None:
        """Raise ConfigError for options this adapter cannot honour; runs once, before any prompt."""

    @classmethod
    def agent_command(cls, command: list[str], opts: AdapterOptions) -> list[str]:
        """The command line the agent is started with: what its sandbox's view is planned from."""
        return command

    async def __aenter__(self) -> Adapter:
        if self.opts.sandbox is not None:
            self._relay = await self._sandbox_stack.enter_async_context(relayed(self.opts.sandbox))
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self._sandbox_stack.aclose()

    @property
    def confined(self) -> bool:
        """Whether the agent starts somewhere else than the host as it is (a sandbox or a task's environment)."""
        return self.opts.sandbox is not None or self.opts.confine is not None

    def sandboxed(
        self, argv: Sequence[str], workspace: Path, env: Mapping[str, str], setenv: Mapping[str, str] | None = None
    ) -> tuple[Sequence[str], Mapping[str, str]]:
        """The command line and environment that start ``argv`` for ``workspace``, never with waza's own keys
        (:func:`~waza.protocol.io.secrets.for_agents`): as they are (``setenv``
        added to ``env``), inside the sandbox the options ask for, its view planned once from the
        agent's command line, with ``env`` less secret-like variables and ``setenv`` (what the agent
        asked for) set inside only, never on the ``bwrap`` process that runs on the host; or inside the
        benchmark environment the runner confines the agent to."""
        policy = self.opts.sandbox
        env = for_agents(env, () if policy is None else policy.keep_env)  # the judge's key is not the agent's
        if self.opts.confine is not None:
            return self.opts.confine(argv, {**env, **(setenv or {})})
        if policy is None:
            return argv, {**env, **(setenv or {})}
        return wrap_command(argv, policy, workspace, self._relay, setenv), sandbox_env(policy, env)

    @abc.abstractmethod
    async def run(self, task: AgentTask) -> AgentRun:
        """Run one prompt to completion (or timeout), emitting events on ``task.recorder``."""
