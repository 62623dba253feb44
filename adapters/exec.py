"""The plain command adapter: one process per user turn.

How the prompt reaches the agent: if an argument contains ``{prompt}`` it is
replaced by the turn's text and stdin is empty; otherwise the text is written
to stdin. Either way the environment carries ``WAZA_PROMPT`` (the turn's text),
``WAZA_PROMPT_ID``, ``WAZA_TURN`` (from 0), ``WAZA_HISTORY`` (JSON list of the
earlier turns as ``{"role": "user"|"agent", "content": ...}``) and
``WAZA_WORKSPACE``, and for ``waza trials`` ``WAZA_TRIAL`` (the trial number,
from 1). WAZA_PROMPT and WAZA_HISTORY are left out when over 100 kB (the
kernel caps one variable at 128 kB); stdin always has the text. Stdout is the agent's answer, or with ``--events`` one JSON
trajectory event per line (see README, "exec adapter").
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

import anyio
import orjson

from waza.protocol.codec import RecordError
from waza.protocol.errors import ConfigError
from waza.protocol.io.process import (
    LINE_LIMIT,
    TAG_VAR,
    Child,
    LineReader,
    LineTooLong,
    Tail,
    exit_parts,
    kill_tagged,
    new_tag,
    run_once,
)
from waza.protocol.records import Exit, Usage
from waza.protocol.trajectory import (
    Event,
    FinalOutput,
    MessageChunk,
    PlanUpdate,
    RawUpdate,
    ThoughtChunk,
    ToolCallPatch,
    UsageUpdate,
)

from .base import Adapter, AgentRun, AgentTask
from .specs import ExecAgent

#: Linux refuses a single environment string over 128 kB (E2BIG); larger prompts travel on stdin only.
ENV_VALUE_LIMIT = 100_000

#: Fields a ``usage`` event may carry (the Usage record's JSON names).
_USAGE_KEYS = ("inputTokens", "outputTokens", "totalTokens", "cost", "currency")


def event_from_line(value: Any, number: int) -> Event:
    """Map one ``--events`` line (our trajectory format) to an event; ValueError when it is not one."""
    if not isinstance(value, dict) or not isinstance(value.get("type"), str):
        raise ValueError("an event must be an object with a string 'type'")
    kind = value["type"]
    if kind in ("message", "thought"):
        content = value.get("content")
        if not isinstance(content, str):
            raise ValueError(f"a {kind} event needs string 'content'")
        mid = value.get("messageId")
        return MessageChunk(content, mid) if kind == "message" else ThoughtChunk(content, mid)
    if kind == "tool_call":
        status = value.get("status")
        if status not in (None, "pending", "in_progress", "completed", "failed"):
            raise ValueError(f"tool_call status {status!r} is not pending, in_progress, completed or failed")
        return ToolCallPatch(
            tool_call_id=str(value.get("toolCallId") or f"line-{number}"),
            name=value.get("name"),
            title=value.get("title"),
            kind=value.get("kind"),
            status=status,
            input=value.get("input"),
            output=value.get("output"),
        )
    if kind == "plan":
        entries = value.get("entries")
        if not isinstance(entries, list):
            raise ValueError("a plan event needs a list 'entries'")
        return PlanUpdate(entries)
    if kind == "usage":
        try:
            usage = Usage.from_dict({k: value[k] for k in _USAGE_KEYS if k in value})
        except RecordError as exc:
            raise ValueError(f"a usage event's {exc}") from None
        return UsageUpdate(usage)
    if kind in ("result", "output"):
        content = value.get("content")
        if not isinstance(content, str):
            raise ValueError(f"a {kind} event needs string 'content'")
        return FinalOutput(content)
    return RawUpdate(kind, value)


class ExecAdapter(Adapter[ExecAgent]):
    name: ClassVar[str] = "exec"
    confinable: ClassVar[bool] = True
    takes_path: ClassVar[bool] = True

    @classmethod
    def check(cls, spec: ExecAgent) -> None:
        if not spec.command:
            raise ConfigError("the exec adapter needs an agent command (after the prompts file or after --)")

    async def run(self, task: AgentTask) -> AgentRun:
        deadline = math.inf if task.timeout is None else time.monotonic() + task.timeout
        history: list[dict[str, str]] = []
        run = AgentRun()
        stderr = Tail()
        turn = 0
        text: str | None = task.case.turns[0]
        while text is not None:
            task.recorder.start_turn(text, turn)
            remaining = deadline - time.monotonic()
            answer, ok = await self._turn(task, text, turn, history, remaining, run, stderr)
            history += [{"role": "user", "content": text}, {"role": "agent", "content": answer}]
            if not ok:
                break
            turn, text = turn + 1, await task.next_turn(turn)
        run.stderr = stderr.text() or None
        return run

    async def _turn(
        self,
        task: AgentTask,
        text: str,
        turn: int,
        history: list[dict[str, str]],
        remaining: float,
        run: AgentRun,
        stderr: Tail,
    ) -> tuple[str, bool]:
        substitute = any("{prompt}" in a for a in self.command)
        argv = [a.replace("{prompt}", text) for a in self.command] if substitute else list(self.command)
        env = self.with_path(
            self.environ(WAZA_PROMPT_ID=task.case.id, WAZA_TURN=str(turn), WAZA_WORKSPACE=str(task.workspace)), task
        )
        if task.trial is not None:
            env["WAZA_TRIAL"] = str(task.trial)
        for name, value in (("WAZA_PROMPT", text), ("WAZA_HISTORY", orjson.dumps(history).decode())):
            if len(value.encode()) <= ENV_VALUE_LIMIT:
                env[name] = value
        if remaining <= 0:
            run.exit = Exit(timed_out=True)
            run.errors.append(f"timed out before turn {turn}")
            return "", False
        data = b"" if substitute else text.encode()
        tag = new_tag()
        env[TAG_VAR] = tag.value
        program = argv[0]
        run_argv, run_env = self.sandboxed(argv, task.workspace, env)
        try:
            if self.spec.events:
                returncode, timed_out, problems = await self._streamed(run_argv, run_env, data, remaining, task, stderr)
                answer = task.recorder.finish().output
            else:
                # The answer is only read at the end: the lean one-shot path is enough.
                out = await run_once(run_argv, stdin=data, cwd=task.cwd, env=run_env, timeout=remaining, stdout_limit=LINE_LIMIT)
                stderr.add(out.stderr_tail.encode())
                returncode, timed_out = out.returncode, out.timed_out
                problems = [f"agent wrote more than {LINE_LIMIT} bytes to stdout"] if out.stdout_overflow else []
                answer = out.stdout.decode("utf-8", "replace").rstrip("\n")
                if answer:
                    task.recorder.emit(MessageChunk(answer))
        except OSError as exc:
            run.errors.append(f"cannot start agent {program!r}: {exc.strerror or exc}")
            run.exit = Exit(code=None)
            return "", False
        finally:
            kill_tagged(tag)  # what the agent left running, even in a session of its own
        code, sig = exit_parts(returncode)
        run.exit = Exit(code=None if timed_out else code, signal=None if timed_out else sig, timed_out=timed_out)
        run.errors.extend(problems)
        if timed_out:
            run.errors.append(f"agent timed out after {task.timeout:g}s" if task.timeout else "agent timed out")
            return answer, False
        if sig is not None:
            run.errors.append(f"agent killed by signal {sig}")
            return answer, False
        if code != 0:
            run.errors.append(f"agent exited with code {code}")
            return answer, False
        return answer, True

    async def _streamed(
        self, argv: Sequence[str], env: Mapping[str, str], data: bytes, remaining: float, task: AgentTask, stderr: Tail
    ) -> tuple[int | None, bool, list[str]]:
        """--events: each stdout line is an event, timestamped as it arrives."""
        child = await Child.start(argv, stdin=data, cwd=task.cwd, env=env, stderr=stderr)
        recorder = task.recorder
        problems: list[str] = []
        reader = LineReader(child)
        number = 0
        try:
            with anyio.move_on_after(remaining) as scope:
                while True:
                    try:
                        line = await reader.readline()
                    except LineTooLong as exc:
                        problems.append(f"agent stdout: {exc}")
                        child.kill()
                        break
                    if line is None:
                        break
                    number += 1
                    if not line.strip():
                        continue
                    try:
                        recorder.emit(event_from_line(orjson.loads(line), number))
                    except (orjson.JSONDecodeError, ValueError) as exc:
                        problems.append(f"agent stdout line {number} is not a trajectory event: {exc}")
                        recorder.emit(RawUpdate("unparsed", line.decode("utf-8", "replace")))
                await child.wait()
        finally:
            await child.aclose()
        return child.returncode, scope.cancelled_caught, problems
