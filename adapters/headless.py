"""The headless adapter: CLI agents that print one JSON event per line, driven by an adapter schema.

Each user turn starts the CLI once (``command``, output flag, ``autoApprove``,
``cwdFlag``, the resume flag and session id on later turns in ``stream`` mode,
then the prompt as a flag, a positional argument or stdin). Lines are mapped
as they arrive, so each step's timestamp is when its line came in. The
agent's stderr is drained into the record's tail, never onto waza's stderr.
A turn ends when the CLI exits; once the result line is seen the CLI gets a
short grace to exit before its process group is killed. Whatever the CLI
started is killed with the turn, even in a session of its own (found by the
turn's process tag in its environment). With ``--raw-log``
every stdout line is appended to the file with its prompt id, turn and time,
secret values masked in it as in records (however the CLI escaped them), a key
split across two lines included: the strings at the same place of successive
lines (a text delta's ``text``) are one stream through a
:class:`~waza.protocol.io.secrets.ValueStreamMasker`, which holds a line back
while its end could still start a secret.
"""

from __future__ import annotations

import math
import os
import tempfile
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager, nullcontext
from pathlib import Path
from typing import IO, Any, ClassVar

import anyio
import msgspec
import orjson

from waza.protocol.errors import ConfigError
from waza.protocol.io.agent_command import resolve_agent_command
from waza.protocol.io.process import TAG_VAR, Child, LineReader, LineTooLong, Tail, exit_parts, kill_tagged, new_tag
from waza.protocol.io.secrets import Redactor, ValueStreamMasker, holds_waza_keys
from waza.protocol.records import Exit
from waza.protocol.trajectory import RawUpdate

from .base import Adapter, AgentRun, AgentTask, Confine
from .headless_events import LineMapper
from .headless_schema import HeadlessSchema, load_schema, shipped
from .specs import HeadlessAgent

#: Seconds a CLI may take to exit after printing its result line.
RESULT_GRACE = 3.0


def render_prompt(schema: HeadlessSchema, history: list[tuple[str, str]], text: str) -> str:
    """iterative mode: the earlier turns through the history template, then the new prompt as a
    ``User:`` line, the way acp-harness builds it (so the CLI sees the same text under both tools)."""
    if not history:
        return text
    blocks = [schema.history_system] if schema.history_system else []
    blocks += [schema.history_turn.replace("{{input}}", q).replace("{{output}}", a) for q, a in history]
    return "\n\n".join([*blocks, f"User: {text}"])


def build_argv(
    schema: HeadlessSchema,
    command: list[str],
    prompt: str,
    session_id: str | None,
    workspace: Path,
    mcp_servers: list[dict[str, Any]] | None = None,
    *,
    confined: bool = False,
) -> list[str]:
    """One turn's command line; ``command`` is the schema's command as resolved before the run; ``mcp_servers``
    (ACP's stdio form) are handed over as the schema's ``mcpConfig`` says (when it names a flag); ``confined``:
    waza's sandbox or a task's environment holds the CLI, so its own sandbox is off where the schema says how."""
    argv = list(command)
    if schema.output_flag:
        argv.append(schema.output_flag)
        if schema.output_value:
            argv.append(schema.output_value)
    argv += schema.confined_auto_approve if confined and schema.confined_auto_approve is not None else schema.auto_approve
    if schema.mcp_config is not None:
        argv += schema.mcp_config.args(mcp_servers or [])
    if schema.cwd_flag:
        argv += [schema.cwd_flag, str(workspace)]
    if session_id is not None and schema.resume_flag:
        argv += [schema.resume_flag, session_id]
    if not schema.prompt_stdin:
        argv += [schema.prompt_flag, prompt] if schema.prompt_flag else [prompt]
    return argv


class HeadlessAdapter(Adapter[HeadlessAgent]):
    name: ClassVar[str] = "headless"
    confinable: ClassVar[bool] = True
    needs_command: ClassVar[bool] = False
    takes_path: ClassVar[bool] = True

    @classmethod
    def accepts_mcp_servers(cls, spec: HeadlessAgent) -> bool:
        return load_schema(spec.schema).mcp_config is not None if spec.schema is not None else False

    def __init__(self, spec: HeadlessAgent, *, confine: Confine | None = None) -> None:
        super().__init__(spec, confine=confine)
        assert spec.schema is not None
        self.schema = load_schema(spec.schema)
        self.program = resolve_agent_command(list(self.schema.command))
        self._raw: IO[bytes] | None = None
        self._redact = Redactor()

    @classmethod
    def agent_command(cls, spec: HeadlessAgent) -> list[str]:
        assert spec.schema is not None, "check() runs first"
        return resolve_agent_command(list(load_schema(spec.schema).command))

    @classmethod
    def state_dir_env(cls, spec: HeadlessAgent) -> str | None:
        assert spec.schema is not None, "check() runs first"
        return load_schema(spec.schema).state_dir_env

    @classmethod
    def check(cls, spec: HeadlessAgent) -> None:
        if spec.schema is None:
            names = ", ".join(shipped())
            raise ConfigError(f"the headless adapter needs HeadlessAgent.schema: a file or a shipped schema name ({names})")
        schema = load_schema(spec.schema)
        try:
            resolve_agent_command(list(schema.command))
        except ConfigError as exc:  # not installed: one line before the run, as for exec and ACP agents
            raise ConfigError(exc.message, source=schema.source, field="command") from None
        if spec.raw_log is not None:
            try:
                spec.raw_log.write_bytes(b"")  # one run, one log: workers append to it
            except OSError as exc:
                raise ConfigError(
                    f"cannot write: {exc.strerror or exc}", source=str(spec.raw_log), field="HeadlessAgent.raw_log"
                ) from None

    async def __aenter__(self) -> HeadlessAdapter:
        await super().__aenter__()
        if self.spec.raw_log is not None:
            self._raw = open(self.spec.raw_log, "ab")  # noqa: SIM115 - closed in __aexit__
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._raw is not None:
            self._raw.close()
        await super().__aexit__(*exc)

    async def run(self, task: AgentTask) -> AgentRun:
        schema = self.schema
        limit = task.timeout if task.timeout is not None else (schema.timeout_ms / 1000 if schema.timeout_ms else None)
        deadline = math.inf if limit is None else time.monotonic() + limit
        run = AgentRun()
        stderr = Tail()
        mapper = LineMapper(schema)
        history: list[tuple[str, str]] = []
        session_id: str | None = None
        turn = 0
        text: str | None = task.case.turns[0]
        with self._mcp_file(task) as mcp_env:
            while text is not None:
                task.recorder.start_turn(text, turn)
                if turn and schema.session_mode == "stream" and session_id is None:
                    why = (
                        "the schema has no resume"
                        if schema.resume_flag is None
                        else "no session id was found at resume.sessionIdPath"
                    )
                    run.errors.append(f"cannot send turn {turn} in the same session: {why}")
                    break
                prompt = render_prompt(schema, history, text) if schema.session_mode == "iterative" else text
                argv = build_argv(
                    schema,
                    self.program,
                    prompt,
                    session_id if turn else None,
                    task.cwd,
                    task.mcp_servers,
                    confined=self.confined,
                )
                outcome = await self._turn(task, argv, prompt, turn, deadline - time.monotonic(), mapper, stderr, limit, mcp_env)
                session_id = session_id or outcome.session_id
                run.exit = outcome.exit
                run.errors.extend(outcome.errors)
                if outcome.errors:
                    break
                history.append((text, task.recorder.finish().output))
                turn, text = turn + 1, await task.next_turn(turn)
        run.stderr = stderr.text() or None
        return run

    @contextmanager
    def _mcp_file(self, task: AgentTask) -> Iterator[dict[str, str]]:
        """The variable that names the file handing the task's MCP servers over (a schema whose ``mcpConfig``
        has ``env``), the file written into ``task.files`` (or a temporary folder, removed after the run);
        none when the servers go on the command line."""
        hand = self.schema.mcp_config
        if hand is None or hand.env is None or not task.mcp_servers:
            yield {}
            return
        with tempfile.TemporaryDirectory(prefix="waza-mcp-") if task.files is None else nullcontext(task.files) as folder:
            path = Path(folder) / f"{self.schema.name}-mcp.json"
            path.write_bytes(hand.value(task.mcp_servers))
            yield {hand.env: str(path)}

    async def _turn(
        self,
        task: AgentTask,
        argv: list[str],
        prompt: str,
        turn: int,
        remaining: float,
        mapper: LineMapper,
        stderr: Tail,
        limit: float | None,
        mcp_env: dict[str, str],
    ) -> _TurnOutcome:
        out = _TurnOutcome()
        if remaining <= 0:
            out.exit = Exit(timed_out=True)
            out.errors.append(f"timed out before turn {turn}")
            return out
        tag = new_tag()  # finds what the CLI started in a session of its own (Gemini CLI's shell commands)
        run_argv: Sequence[str] = argv
        env: Mapping[str, str] | Mapping[bytes, bytes]
        if self.confined or self.spec.env or task.path or mcp_env or holds_waza_keys(os.environ):
            run_argv, env = self.sandboxed(
                argv, task.workspace, self.with_path(self.environ(**{TAG_VAR: tag.value, **mcp_env}), task)
            )
        else:  # as bytes: not decoded here and encoded again by the spawn, variable by variable
            env = {**os.environb, TAG_VAR.encode(): tag.value.encode()}
        try:
            child = await Child.start(
                run_argv, stdin=prompt.encode() if self.schema.prompt_stdin else None, cwd=task.cwd, env=env, stderr=stderr
            )
        except OSError as exc:
            out.errors.append(f"cannot start agent {argv[0]!r}: {exc.strerror or exc}")
            return out
        recorder = task.recorder
        reader = LineReader(child)
        logged = ValueStreamMasker(self._redact)  # the raw log's lines: a secret split across two is masked too
        grace = anyio.CancelScope()  # given a deadline when the result line is seen

        def take(line: bytes) -> None:
            at = recorder.now_ms()
            if not line.strip():
                return
            try:
                value: Any = orjson.loads(line)
            except orjson.JSONDecodeError:
                recorder.emit(RawUpdate("unparsed", line.decode("utf-8", "replace")), at)
                self._log(logged, task, turn, at, line.decode("utf-8", "replace"), False)
                return
            reading = mapper.read(value)
            for event in reading.events:
                recorder.emit(event, at)
            out.session_id = out.session_id or reading.session_id
            out.stop_reason = reading.stop_reason or out.stop_reason
            if reading.error is not None:
                out.errors.append(f"agent reported an error: {reading.error}")
            self._log(logged, task, turn, at, value, True)
            if reading.result and not out.result:
                out.result = True
                grace.deadline = anyio.current_time() + RESULT_GRACE

        async def read_to_exit() -> None:
            while True:
                try:
                    line = await reader.readline()
                except LineTooLong as exc:
                    out.errors.append(f"agent stdout: {exc}")
                    child.kill()
                    break
                if line is None:
                    break
                take(line)
            await child.wait()

        try:
            with anyio.move_on_after(remaining) as scope:
                with grace:
                    await read_to_exit()
                if grace.cancelled_caught:
                    child.kill()  # no exit within RESULT_GRACE of the result line: its group goes
                    await read_to_exit()
            timed_out = scope.cancelled_caught
        finally:
            await child.aclose()
            kill_tagged(tag)  # what the CLI left running, even in a session of its own
            self._write(logged.drain())
        code, sig = exit_parts(child.returncode)
        if timed_out:
            out.exit = Exit(timed_out=True)
            out.errors.append(f"agent timed out after {limit:g}s" if limit else "agent timed out")
        elif out.result and sig is not None:
            # stopped by us after its result: the turn is complete
            out.exit = Exit(code=None, signal=sig, stop_reason=out.stop_reason)  # type: ignore[arg-type]
        else:
            out.exit = Exit(code=code, signal=sig, stop_reason=out.stop_reason)  # type: ignore[arg-type]
            if sig is not None:
                out.errors.append(f"agent killed by signal {sig}")
            elif code != 0:
                out.errors.append(f"agent exited with code {code}")
            elif not out.result:
                out.errors.append(
                    f"agent exited without a result line ({self.schema.source}: result.matchPath "
                    f"{self.schema.result.path.text} == {self.schema.result.value!r})"
                )
        return out

    def _log(self, logged: ValueStreamMasker, task: AgentTask, turn: int, at: int, line: Any, parsed: bool) -> None:
        if self._raw is None:
            return
        entry = {"time": int(time.time() * 1000), "ms": at, "id": task.case.id, "turn": turn, "trial": task.trial}
        entry["line" if parsed else "text"] = line
        self._write(logged.push(entry) if self._redact.longest else [entry])

    def _write(self, entries: list[Any]) -> None:
        """Entries whose strings are masked across lines already; masked once more line by line, for a
        secret the CLI escaped (``\\u`` forms) in one line."""
        if self._raw is None:
            return
        for entry in entries:
            self._raw.write(self._redact(orjson.dumps(entry), decode=True) + b"\n")
        self._raw.flush()


class _TurnOutcome(msgspec.Struct):
    """How one CLI invocation (one turn) went."""

    exit: Exit = msgspec.field(default_factory=Exit)
    errors: list[str] = msgspec.field(default_factory=list)
    result: bool = False
    session_id: str | None = None
    stop_reason: str | None = None
