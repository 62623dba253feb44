"""The ACP adapter: any Agent Client Protocol agent, one process per worker, one session per prompt.

The agent command is started on a worker's first prompt (and again after it
crashed, broke the protocol or had to be killed), initialized once with fs and
terminal capabilities, authenticated only when the user named a method. Each
prompt (each trial) gets a fresh ``session/new`` in its workspace; each user turn
is a ``session/prompt`` in that session. Everything the agent reports arrives as
``session/update`` and becomes trajectory events (see ``acp_updates``); what it
asks of waza is served by ``acp_session``.

Faults never end the run: a timeout sends ``session/cancel``, answers further
permission requests ``cancelled``, waits ``CANCEL_GRACE`` seconds for the
``cancelled`` stop reason and then kills the agent's process group; a crash or a
malformed message ends the prompt as an error holding what was captured; in all
three cases the next prompt starts a fresh agent. The one exception is a command
that is not an ACP agent at all: when the first agent a worker starts prints
something that is not JSON-RPC, or stays silent for ``first_handshake_timeout()``
seconds, the run stops with a hint (see NotAnAcpAgent): every prompt would fail
the same way, each after a wait.
"""

from __future__ import annotations

import math
import os
import time
from contextlib import AsyncExitStack
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any, ClassVar, get_args

import anyio
import anyio.abc

from waza.protocol.errors import ConfigError
from waza.protocol.io.logs import get_logger
from waza.protocol.io.process import TAG_VAR, Child, ProcessTag, Tail, exit_parts, kill_tagged, new_tag
from waza.protocol.records import StopReason
from waza.protocol.trajectory import RawUpdate, TrajectoryBuilder

from . import acp_rawlog
from .acp_mcp import mcp_servers
from .acp_permissions import PermissionPolicy
from .acp_rpc import (
    AUTH_REQUIRED,
    INVALID_PARAMS,
    METHOD_NOT_FOUND,
    ConnectionLost,
    Pending,
    RpcConnection,
    RpcError,
)
from .acp_session import CLIENT_METHODS, ClientSession, check_params
from .acp_updates import prompt_usage, update_events
from .base import Adapter, AgentRun, AgentTask, Confine
from .specs import AcpAgent

log = get_logger("waza.acp")

PROTOCOL_VERSION = 1
#: Seconds a timed-out agent gets to answer ``session/cancel`` before its process group is killed.
CANCEL_GRACE = 2.0
#: Seconds a crashed agent gets to exit (for its exit code) before it is killed.
EXIT_GRACE = 2.0
#: Seconds an agent has to answer ``initialize``, whatever the prompt timeout: a command that is
#: not an ACP agent at all must fail with a hint, not hang a run that has no --timeout.
HANDSHAKE_TIMEOUT = 60.0
#: The environment variable that sets how long the *first* agent of a worker has to answer
#: ``initialize`` before the run stops (default FIRST_HANDSHAKE_TIMEOUT seconds).
FIRST_HANDSHAKE_ENV = "WAZA_ACP_HANDSHAKE_TIMEOUT"
FIRST_HANDSHAKE_TIMEOUT = 10.0
STOP_REASONS = get_args(StopReason)


class AgentFault(Exception):
    """The agent cannot go on: the prompt ends as an error and the agent is restarted.

    ``exited`` marks a fault seen as the agent's stdout ending: the agent probably
    exited, so it gets ``EXIT_GRACE`` seconds to do so and its exit status is recorded.
    """

    def __init__(self, message: str, *, exited: bool = False) -> None:
        super().__init__(message)
        self.exited = exited


class NotAnAcpAgent(ConfigError):
    """The agent command does not speak ACP: the run stops (exit 2), naming the likely adapter."""

    def __init__(self, command: str, why: str) -> None:
        super().__init__(
            f"{command!r} does not look like an ACP agent: {why}. The default adapter speaks ACP "
            "(JSON-RPC on stdin/stdout); a program that reads the prompt and prints an answer needs "
            "the exec adapter (ExecAgent), an agent CLI with a JSON print mode the headless adapter (HeadlessAgent, with a schema)"
        )


def first_handshake_timeout() -> float:
    """Seconds the first agent of a worker has to answer ``initialize``: $WAZA_ACP_HANDSHAKE_TIMEOUT or 10."""
    raw = os.environ.get(FIRST_HANDSHAKE_ENV)
    if raw is None or raw == "":
        return FIRST_HANDSHAKE_TIMEOUT
    try:
        value = float(raw)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and value > 0):
        raise ConfigError(f"${FIRST_HANDSHAKE_ENV} must be a positive number of seconds, got {raw!r}")
    return value


def _client_info() -> dict[str, str]:
    try:
        return {"name": "waza", "version": version("waza")}
    except PackageNotFoundError:  # pragma: no cover - running from a bare checkout
        return {"name": "waza", "version": "0"}


class _AgentStdin(anyio.abc.ByteSendStream):
    """The agent's stdin as the connection writes it: what the pipe does not take at once is written
    while the connection reads the agent's stdout."""

    def __init__(self, child: Child) -> None:
        self.child = child

    async def send(self, item: bytes) -> None:
        self.child.send(item)

    async def aclose(self) -> None:
        self.child.close_stdin()


class _Agent:
    """One running agent process and its connection, served (its stdout read) by a task of the adapter."""

    def __init__(self, child: Child, rpc: RpcConnection, workspace: Path, tag: ProcessTag) -> None:
        self.workspace = workspace
        self.child = child
        self.tag = tag
        self.rpc = rpc
        self.auth_methods: list[str] = []
        self.serving = anyio.CancelScope()
        self.served = anyio.Event()

    @property
    def alive(self) -> bool:
        return self.rpc.lost is None and self.child.returncode is None

    async def serve(self) -> None:
        """Read the agent's messages until its stdout ends (its group is killed once it exits) or it is stopped."""
        try:
            with self.serving:
                await self.rpc.serve(self.child)
        finally:
            self.served.set()


class _PromptStderr(Tail):
    """The agent's stderr, drained for as long as it lives, kept per prompt (the agent outlives prompts)."""

    def __init__(self) -> None:
        super().__init__()
        self.tail = Tail()

    def add(self, data: bytes) -> None:
        self.tail.add(data)


class AcpAdapter(Adapter[AcpAgent]):
    name: ClassVar[str] = "acp"
    confinable: ClassVar[bool] = True
    takes_mcp_servers: ClassVar[bool] = True

    @classmethod
    def check(cls, spec: AcpAgent) -> None:
        if not spec.command:
            raise ConfigError("the acp adapter needs an agent command (after the prompts file or after --)")
        mcp_servers(spec.mcp_servers, spec.mcp_config)
        PermissionPolicy.load(spec.permission, spec.permission_rules)
        first_handshake_timeout()
        if spec.raw_log is not None:
            acp_rawlog.reset(spec.raw_log)

    def __init__(self, spec: AcpAgent, *, confine: Confine | None = None) -> None:
        super().__init__(spec, confine=confine)
        self._servers = mcp_servers(spec.mcp_servers, spec.mcp_config)
        self._policy = PermissionPolicy.load(spec.permission, spec.permission_rules)
        self._raw: acp_rawlog.RawLog | None = None
        self._stack = AsyncExitStack()
        self._tg: anyio.abc.TaskGroup | None = None
        self._agent: _Agent | None = None
        self._session: ClientSession | None = None
        self._stderr = _PromptStderr()
        #: Whether an agent of this worker has answered ``initialize`` (until then, not speaking ACP stops the run).
        self._answered = False

    async def __aenter__(self) -> AcpAdapter:
        await super().__aenter__()
        await self._stack.__aenter__()
        if self.spec.raw_log is not None:
            self._raw = acp_rawlog.RawLog(self.spec.raw_log)
            self._stack.callback(self._raw.close)
        self._tg = await self._stack.enter_async_context(anyio.create_task_group())
        return self

    async def __aexit__(self, *exc: Any) -> None:
        try:
            await self._stop_agent()
            if self._tg is not None:
                self._tg.cancel_scope.cancel()
        finally:
            try:
                await self._stack.__aexit__(*exc)
            finally:
                await super().__aexit__(*exc)

    # -- the agent process ---------------------------------------------------------------

    async def _ready_agent(self, workspace: Path) -> _Agent:
        """The worker's agent, started when there is none alive. A sandboxed agent sees only the workspace
        it was started for: a prompt in another workspace gets an agent started for that one."""
        agent = self._agent
        if agent is not None and agent.alive and (not self.confined or agent.workspace == workspace):
            return agent
        await self._stop_agent()
        assert self._tg is not None, "use the adapter as an async context manager"
        # Tagged as every agent is: what it starts in a session of its own is found when it is stopped,
        # and what it leaves running when its worker dies under it (a Ray worker).
        tag = new_tag()
        argv, env = self.sandboxed(self.command, workspace, self.environ(**{TAG_VAR: tag.value}))
        try:
            child = await Child.start(
                argv, env=env, cwd=workspace if self.confined else None, stderr=self._stderr, keep_stdin=True
            )
        except OSError as exc:
            raise AgentFault(f"cannot start agent {self.command[0]!r}: {exc.strerror or exc}") from None
        pid = child.pid
        tap = (lambda d, data, ok: self._raw.write(d, data, ok, pid)) if self._raw else None  # type: ignore[union-attr]
        rpc = RpcConnection(
            _AgentStdin(child),
            on_request=self._on_request,
            on_notification=self._on_notification,
            spawn=self._tg.start_soon,
            tap=tap,
        )
        self._agent = agent = _Agent(child, rpc, workspace, tag)
        self._tg.start_soon(agent.serve)
        log.debug("agent started", pid=pid, command=self.command)
        limit = HANDSHAKE_TIMEOUT if self._answered else first_handshake_timeout()
        with anyio.move_on_after(limit) as handshake:
            try:
                reply = await self._request(
                    agent,
                    "initialize",
                    {
                        "protocolVersion": PROTOCOL_VERSION,
                        "clientCapabilities": {"fs": {"readTextFile": True, "writeTextFile": True}, "terminal": True},
                        "clientInfo": _client_info(),
                    },
                )
            except AgentFault:
                if not self._answered and agent.rpc.faulted:
                    await self._stop_agent()
                    raise NotAnAcpAgent(self.command[0], f"it answered initialize with {agent.rpc.lost}") from None
                raise
        if handshake.cancelled_caught:
            if not self._answered:
                await self._stop_agent()
                raise NotAnAcpAgent(self.command[0], f"it did not answer initialize within {limit:g}s (${FIRST_HANDSHAKE_ENV})")
            raise AgentFault(
                f"the agent did not answer initialize within {limit:g}s; is {self.command[0]!r} an ACP agent? "
                "(a plain command needs the exec adapter)"
            )
        self._answered = True
        if not isinstance(reply, dict) or reply.get("protocolVersion") != PROTOCOL_VERSION:
            got = reply.get("protocolVersion") if isinstance(reply, dict) else reply
            raise AgentFault(f"the agent answered initialize with protocol version {got!r}; waza speaks {PROTOCOL_VERSION}")
        methods = found if isinstance(found := reply.get("authMethods"), list) else []
        agent.auth_methods = [m["id"] for m in methods if isinstance(m, dict) and isinstance(m.get("id"), str)]
        method = self.spec.auth_method
        if method is not None:
            if method not in agent.auth_methods:
                offered = ", ".join(agent.auth_methods) or "none"
                raise AgentFault(f"AcpAgent.auth_method {method!r} is not offered by the agent (offered: {offered})")
            await self._request(agent, "authenticate", {"methodId": method})
        return agent

    async def _stop_agent(self, exiting: bool = False) -> int | None:
        """Kill the agent's process group and what it started in sessions of its own (its tag); with
        ``exiting``, first give it a moment to exit on its own.

        Returns its return code when it ended by itself (None when waza had to kill it).
        """
        agent, self._agent = self._agent, None
        if agent is None:
            return None
        child = agent.child
        try:
            if exiting:
                with anyio.move_on_after(EXIT_GRACE):
                    await agent.served.wait()  # its stdout ended: now the exit (only this task reads it now)
                    await child.wait()
            returncode = child.returncode
        finally:
            agent.serving.cancel()  # the reader stops where it waits (it touches the child no more)
            try:
                await child.aclose()
            finally:
                kill_tagged(agent.tag)  # whatever the close raised
        log.debug("agent stopped", pid=child.pid, returncode=child.returncode)
        return returncode

    async def _request(self, agent: _Agent, method: str, params: dict[str, Any]) -> Any:
        """A request whose failure ends the prompt: a lost connection or an error reply is an AgentFault."""
        try:
            return await agent.rpc.request(method, params)
        except ConnectionLost as exc:
            raise self._lost(agent, exc) from None
        except RpcError as exc:
            if exc.code == AUTH_REQUIRED and method == "session/new":
                offered = ", ".join(agent.auth_methods) or "none advertised"
                raise AgentFault(
                    f"the agent requires authentication ({exc.message}); set AcpAgent.auth_method (offered: {offered})"
                ) from None
            raise AgentFault(f"the agent answered {method} with an error: {exc}") from None

    @staticmethod
    def _lost(agent: _Agent, exc: ConnectionLost) -> AgentFault:
        if agent.rpc.faulted:
            return AgentFault(f"{exc}; agent restarted")
        return AgentFault(f"the agent stopped answering ({exc})", exited=True)

    # -- messages from the agent ---------------------------------------------------------

    def _on_notification(self, method: str, params: Any) -> None:
        session = self._session
        if session is None:
            return  # between prompts: only in the raw log
        session_id = params.get("sessionId") if isinstance(params, dict) else None
        if method == "session/update" and isinstance(params, dict):
            session.deliver(session_id, update_events(params.get("update")))
        else:
            session.deliver(session_id, [RawUpdate(method, params)])

    async def _on_request(self, method: str, params: Any) -> Any:
        session = self._session
        if session is not None:
            await session.ready.wait()
        if method not in CLIENT_METHODS:
            if session is not None:
                session.record_unknown(method, params)
            raise RpcError(METHOD_NOT_FOUND, f"waza does not implement {method}")
        params = check_params(params)
        if session is None or session.session_id is None or params.get("sessionId") != session.session_id:
            raise RpcError(INVALID_PARAMS, f"unknown session {params.get('sessionId')!r}")
        return await session.handle(method, params)

    # -- one prompt ------------------------------------------------------------------------

    async def run(self, task: AgentTask) -> AgentRun:
        run = AgentRun()
        self._stderr.tail = Tail()
        if self._raw is not None:
            self._raw.prompt_id = task.case.id
        assert self._tg is not None, "use the adapter as an async context manager"
        session = ClientSession(
            None, task.workspace, task.recorder, self._policy, self._tg.start_soon, self.sandboxed, self.spec.env
        )
        self._session = session
        deadline = math.inf if task.timeout is None else anyio.current_time() + task.timeout
        try:
            with anyio.move_on_at(deadline) as scope:
                agent = await self._ready_agent(task.workspace)
                await self._converse(agent, session, task, run)
            if scope.cancelled_caught:
                await self._cancel(session, run, task)
        except AgentFault as exc:
            returncode = await self._stop_agent(exiting=exc.exited)
            if returncode is None:
                run.errors.append(str(exc))
            else:
                run.exit.code, run.exit.signal = exit_parts(returncode)
                how = f"signal {run.exit.signal}" if run.exit.signal else f"exit code {run.exit.code}"
                run.errors.append(f"the agent exited during the prompt ({how}); agent restarted")
        finally:
            self._session = None
            session.ready.set()
            await session.close()
            run.stderr = self._stderr.tail.text() or None
        return run

    async def _converse(self, agent: _Agent, session: ClientSession, task: AgentTask, run: AgentRun) -> None:
        started = time.perf_counter()
        reply: Any = None
        try:
            reply = await self._request(
                agent, "session/new", {"cwd": str(task.cwd), "mcpServers": [*self._servers, *task.mcp_servers]}
            )
        finally:
            session_id = reply.get("sessionId") if isinstance(reply, dict) else None
            session.start(session_id if isinstance(session_id, str) else None)
        if session.session_id is None:
            raise AgentFault("the agent answered session/new without a sessionId")
        run.session_creation_ms = int((time.perf_counter() - started) * 1000)
        number = 0
        text: str | None = task.case.turns[0]
        while text is not None:  # every turn a session/prompt of the same session
            task.recorder.start_turn(text, number)
            session.turn = await self._call(
                agent, "session/prompt", {"sessionId": session.session_id, "prompt": [{"type": "text", "text": text}]}
            )
            reply = await self._wait(agent, session.turn)
            session.turn = None
            self._end_turn(reply, task.recorder, run)
            number, text = number + 1, await task.next_turn(number)

    async def _call(self, agent: _Agent, method: str, params: dict[str, Any]) -> Pending:
        try:
            return await agent.rpc.call(method, params)
        except ConnectionLost as exc:
            raise self._lost(agent, exc) from None

    async def _wait(self, agent: _Agent, pending: Pending) -> Any:
        try:
            return await pending.wait()
        except ConnectionLost as exc:
            raise self._lost(agent, exc) from None
        except RpcError as exc:
            raise AgentFault(f"the agent answered {pending.method} with an error: {exc}") from None

    @staticmethod
    def _end_turn(reply: Any, recorder: TrajectoryBuilder, run: AgentRun) -> None:
        if not isinstance(reply, dict) or "stopReason" not in reply:
            raise AgentFault("malformed JSON-RPC from the agent: session/prompt result has no stopReason; agent restarted")
        usage = prompt_usage(reply.get("usage"))
        if usage is not None:
            recorder.emit(usage)
        reason = reply["stopReason"]
        if reason in STOP_REASONS:
            run.exit.stop_reason = reason
        else:
            run.exit.stop_reason = None
            recorder.emit(RawUpdate("stop_reason", reason))

    async def _cancel(self, session: ClientSession, run: AgentRun, task: AgentTask) -> None:
        """The prompt ran out of time: ask the agent to stop, give it a moment, then kill it."""
        run.exit.timed_out = True
        run.errors.append(f"agent timed out after {task.timeout:g}s" if task.timeout is not None else "agent timed out")
        agent = self._agent
        if agent is not None and agent.alive and session.session_id is not None:
            session.cancelling = True
            with anyio.move_on_after(CANCEL_GRACE):
                try:
                    await agent.rpc.notify("session/cancel", {"sessionId": session.session_id})
                    if session.turn is not None:
                        reply = await session.turn.wait()
                        self._end_turn(reply, task.recorder, run)
                except (ConnectionLost, RpcError, AgentFault):
                    pass  # it is about to be killed anyway
        await self._stop_agent()
