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
import os
from collections.abc import Callable, Mapping, Sequence
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any, ClassVar, Generic, Protocol, TypeVar

import msgspec

from waza.adapters.sandbox.bwrap import plan, relayed, sandbox_env, wrap_command
from waza.adapters.specs import AgentBase, ProcessAgent, sandbox_of
from waza.protocol.io.secrets import for_agents
from waza.protocol.records import Exit, PromptCase
from waza.protocol.trajectory import TrajectoryBuilder

#: A runner-given mapping of an agent's command line and environment to those that start it somewhere else.
Confine = Callable[[Sequence[str], Mapping[str, str]], tuple[list[str], dict[str, str]]]

#: The spec an adapter takes.
A = TypeVar("A", bound=AgentBase)


class Conversation(Protocol):
    """Who decides the next user turn once a turn has ended (a suite task's follow-ups, responder, checkpoints)."""

    async def next_turn(self, finished: int, recorder: TrajectoryBuilder) -> str | None:
        """The text of the user turn after turn ``finished`` (from 0), or None to end the conversation."""
        ...


class AgentTask(msgspec.Struct):
    """One prompt (one trial of it) for an adapter to run."""

    case: PromptCase
    workspace: Path
    recorder: TrajectoryBuilder
    timeout: float | None = None
    trial: int | None = None
    #: MCP servers (ACP's stdio form) handed to the agent for this task besides its own: a suite's ``mcp_mocks``.
    mcp_servers: list[dict[str, Any]] = msgspec.field(default_factory=list)
    #: Folders put first on the agent's ``PATH`` for this task: a suite's ``command_mocks``.
    path: list[str] = msgspec.field(default_factory=list)
    #: Where an adapter writes files its agent reads for this task (a CLI's MCP config file): the trial's
    #: mocks folder, which a sandbox shows; None: a temporary folder of the adapter's.
    files: Path | None = None
    #: Decides each turn after the first; without one, the turns are the case's own, in order.
    conversation: Conversation | None = None
    #: Where in the workspace the agent starts (a suite task's ``inputs.workdir``); None: its root.
    workdir: str | None = None

    @property
    def cwd(self) -> Path:
        """The folder the agent starts in: the workspace, or its ``workdir`` (the runner made sure it is one)."""
        return self.workspace / self.workdir if self.workdir else self.workspace

    async def next_turn(self, finished: int) -> str | None:
        """The user turn that follows turn ``finished`` (from 0), asked for only once that turn has ended,
        so what comes next may depend on what the agent did; None when the conversation is over."""
        if self.conversation is not None:
            return await self.conversation.next_turn(finished, self.recorder)
        turns = self.case.turns
        return turns[finished + 1] if finished + 1 < len(turns) else None


class AgentRun(msgspec.Struct):
    """How the agent finished; the trajectory itself is in the task's recorder."""

    exit: Exit = msgspec.field(default_factory=Exit)
    errors: list[str] = msgspec.field(default_factory=list)
    stderr: str | None = None
    session_creation_ms: int | None = None


class Adapter(abc.ABC, Generic[A]):
    """Base class of agent adapters: one takes its spec (``A``, from :mod:`.specs`) and reads its options there.

    Subclasses set ``name``, ``needs_command`` (whether an agent command line is required)
    and ``confinable``. ``confine`` (set by the runner, never by a user) maps the agent's
    command line and environment to the ones that start it inside a benchmark task's environment.
    """

    name: ClassVar[str]
    needs_command: ClassVar[bool] = True
    #: Whether the agent can run inside a benchmark task's environment (the runner's ``confine`` hook).
    confinable: ClassVar[bool] = False
    #: Whether the adapter hands a task's ``mcp_servers`` to its agent (see :meth:`accepts_mcp_servers`).
    takes_mcp_servers: ClassVar[bool] = False
    #: Whether the adapter starts its agent per task, so a task's ``path`` can be put first on its PATH.
    takes_path: ClassVar[bool] = False

    def __init__(self, spec: A, *, confine: Confine | None = None) -> None:
        sandbox = sandbox_of(spec)
        if sandbox is not None and not sandbox.planned:  # the runner plans it once per run; the API may not have
            sandbox = plan(sandbox, self.agent_command(spec))
            spec = msgspec.structs.replace(spec, sandbox=sandbox)
        self.spec = spec
        self.command = list(spec.command)
        self.sandbox = sandbox
        self.confine = confine
        self._sandbox_stack = AsyncExitStack()
        self._relay: Path | None = None

    @classmethod
    def check(cls, spec: A) -> None:
        """Raise ConfigError for options this adapter cannot honour; runs once, before any prompt."""

    @classmethod
    def accepts_mcp_servers(cls, spec: A) -> bool:
        """Whether this adapter, with this spec, hands a task's ``mcp_servers`` to its agent."""
        return cls.takes_mcp_servers

    @classmethod
    def agent_command(cls, spec: A) -> list[str]:
        """The command line the agent is started with: what its sandbox's view is planned from."""
        return list(spec.command)

    @classmethod
    def state_dir_env(cls, spec: A) -> str | None:
        """The variable naming the folder the agent writes its state to and reads its config from (Codex's
        ``CODEX_HOME``), for a runner that must give it a writable one; None when the agent has none."""
        return None

    def environ(self, **extra: str) -> dict[str, str]:
        """The environment the agent starts with: waza's, then the spec's ``env``, then ``extra``."""
        env = self.spec.env if isinstance(self.spec, ProcessAgent) else {}
        return {**os.environ, **env, **extra}

    async def __aenter__(self) -> Adapter[A]:
        if self.sandbox is not None:
            self._relay = await self._sandbox_stack.enter_async_context(relayed(self.sandbox))
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self._sandbox_stack.aclose()

    @property
    def confined(self) -> bool:
        """Whether the agent starts somewhere else than the host as it is (a sandbox or a task's environment)."""
        return self.sandbox is not None or self.confine is not None

    def sandboxed(
        self, argv: Sequence[str], workspace: Path, env: Mapping[str, str], setenv: Mapping[str, str] | None = None
    ) -> tuple[Sequence[str], Mapping[str, str]]:
        """The command line and environment that start ``argv`` for ``workspace``, never with waza's own keys
        (:func:`~waza.protocol.io.secrets.for_agents`): as they are (``setenv``
        added to ``env``), inside the sandbox the options ask for, its view planned once from the
        agent's command line, with ``env`` less secret-like variables and ``setenv`` (what the agent
        asked for) set inside only, never on the ``bwrap`` process that runs on the host; or inside the
        benchmark environment the runner confines the agent to."""
        policy = self.sandbox
        env = for_agents(env, () if policy is None else policy.keep_env)  # the judge's key is not the agent's
        if self.confine is not None:
            return self.confine(argv, {**env, **(setenv or {})})
        if policy is None:
            return argv, {**env, **(setenv or {})}
        return wrap_command(argv, policy, workspace, self._relay, setenv), sandbox_env(policy, env)

    @staticmethod
    def with_path(env: Mapping[str, str], task: AgentTask) -> dict[str, str]:
        """``env`` with the task's ``path`` folders first on ``PATH``."""
        out = dict(env)
        if task.path:
            out["PATH"] = os.pathsep.join([*task.path, *([env["PATH"]] if env.get("PATH") else [])])
        return out

    @abc.abstractmethod
    async def run(self, task: AgentTask) -> AgentRun:
        """Run one prompt to completion (or timeout), emitting events on ``task.recorder``."""
