"""``terminal/*``: real processes the agent asks waza to run, owned by one prompt.

Each terminal is a process group started in the workspace (or a directory
inside it), its stdout and stderr merged into one buffer that keeps the last
``outputByteLimit`` bytes (cut at a character boundary, ``truncated`` set). When
the command exits its group goes too, and when the prompt ends every terminal
still running is killed and reaped, and so is every process still carrying
the prompt's tag in its environment (one that escaped its group with
``setsid``), so nothing an agent started outlives its prompt unless it also
cleared its environment. A command with no ``args`` is run by ``/bin/sh -c``, since agents
commonly send a whole shell line as ``command``.
"""

from __future__ import annotations

import itertools
import os
import signal
import subprocess
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeAlias

import anyio
import anyio.abc

from waza.protocol.io.process import STDOUT_LIMIT, TAG_VAR, Child, exit_parts, kill_tagged, new_tag

from .acp_fs import confine_dir
from .acp_rpc import INVALID_PARAMS, RESOURCE_NOT_FOUND, RpcError, Spawn

#: Puts a command line and its environment in the agent's sandbox (``Adapter.sandboxed``).
Prepare: TypeAlias = Callable[
    [Sequence[str], Path, Mapping[str, str], Mapping[str, str]], tuple[Sequence[str], Mapping[str, str]]
]

_ids = itertools.count(1)


class Terminal:
    """One process the agent started, with the bounded tail of its output and whether it has exited."""

    def __init__(self, argv: Sequence[str], cwd: Path, env: Mapping[str, str], limit: int) -> None:
        self.limit = limit
        self.output = bytearray()
        self.truncated = False
        self.exited = anyio.Event()
        self.watching = anyio.CancelScope()
        # stdout and stderr on one pipe, in the order the command writes them
        self.child = Child(argv, cwd=cwd, env=env, stderr_to=subprocess.STDOUT)

    def add(self, data: bytes) -> None:
        self.output.extend(data)
        if len(self.output) > self.limit:
            del self.output[: len(self.output) - self.limit]
            while self.output and (self.output[0] & 0xC0) == 0x80:  # never start mid-character
                del self.output[0]
            self.truncated = True

    def exit_status(self) -> dict[str, Any] | None:
        if not self.exited.is_set():
            return None
        code, sig = exit_parts(self.child.returncode)
        return {"exitCode": code, "signal": signal.Signals(sig).name if sig else None}

    async def watch(self) -> None:
        """Collect output until the command exits (its process group goes then too), or until released."""
        try:
            with self.watching:
                async for chunk in self.child:
                    self.add(chunk)
                await self.child.wait()
        finally:
            await self.child.aclose()
            self.exited.set()

    async def release(self) -> None:
        """Kill the command's group and reap it."""
        self.watching.cancel()
        await self.child.aclose()


class Terminals:
    """The terminals of one prompt."""

    def __init__(
        self, workspace: Path, spawn_task: Spawn, prepare: Prepare | None = None, env: Mapping[str, str] | None = None
    ) -> None:
        self.workspace = workspace
        #: The agent's own variables (its spec's ``env``), which its terminals inherit.
        self._env = env or {}
        self._spawn_task = spawn_task
        #: Wraps a command in the agent's sandbox, when it runs in one: its terminals run there too.
        self._prepare = prepare
        self._terminals: dict[str, Terminal] = {}
        #: Tags every terminal command of this prompt, so one that left its process group still dies at the end.
        self._tag = new_tag()

    def _get(self, params: dict[str, Any]) -> Terminal:
        terminal = self._terminals.get(params.get("terminalId"))  # type: ignore[arg-type]
        if terminal is None:
            raise RpcError(RESOURCE_NOT_FOUND, f"no terminal {params.get('terminalId')!r}")
        return terminal

    async def create(self, params: dict[str, Any]) -> dict[str, Any]:
        command, args = params.get("command"), params.get("args") or []
        if not isinstance(command, str) or not command:
            raise RpcError(INVALID_PARAMS, "command must be a non-empty string")
        if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
            raise RpcError(INVALID_PARAMS, "args must be a list of strings")
        cwd = confine_dir(self.workspace, params["cwd"]) if params.get("cwd") else self.workspace
        asked: dict[str, str] = {}  # the agent's variables: set inside its sandbox, never on a process on the host
        for var in params.get("env") or []:
            if not (isinstance(var, dict) and isinstance(var.get("name"), str) and isinstance(var.get("value"), str)):
                raise RpcError(INVALID_PARAMS, "env must be a list of {name, value} strings")
            if not var["name"] or "=" in var["name"] or "\0" in var["name"] + var["value"]:
                raise RpcError(INVALID_PARAMS, f"env: {var['name'][:80]!r} is not a variable name and value")
            asked[var["name"]] = var["value"]
        asked.pop(TAG_VAR, None)  # the prompt's tag is waza's: what carries it dies with the prompt
        limit = params.get("outputByteLimit")
        if limit is not None and (not isinstance(limit, int) or isinstance(limit, bool) or limit < 0):
            raise RpcError(INVALID_PARAMS, "outputByteLimit must be a non-negative integer")
        env = {**os.environ, **self._env, TAG_VAR: self._tag.value}
        argv: Sequence[str] = [command, *args] if args else ["/bin/sh", "-c", command]
        run_env: Mapping[str, str] = {**env, **asked}
        if self._prepare is not None:
            argv, run_env = self._prepare(argv, self.workspace, env, asked)
        try:
            terminal = Terminal(argv, cwd, run_env, STDOUT_LIMIT if limit is None else min(limit, STDOUT_LIMIT))
        except OSError as exc:
            raise RpcError(INVALID_PARAMS, f"cannot start {command!r}: {exc.strerror or exc}") from None
        terminal_id = f"term-{next(_ids)}"
        self._terminals[terminal_id] = terminal
        self._spawn_task(terminal.watch)
        return {"terminalId": terminal_id}

    def output(self, params: dict[str, Any]) -> dict[str, Any]:
        terminal = self._get(params)
        return {
            "output": terminal.output.decode("utf-8", "replace"),
            "truncated": terminal.truncated,
            "exitStatus": terminal.exit_status(),
        }

    async def wait_for_exit(self, params: dict[str, Any]) -> dict[str, Any]:
        terminal = self._get(params)
        await terminal.exited.wait()
        return terminal.exit_status() or {}

    def kill(self, params: dict[str, Any]) -> dict[str, Any]:
        self._get(params).child.kill()
        return {}

    async def release(self, params: dict[str, Any]) -> dict[str, Any]:
        terminal = self._get(params)
        del self._terminals[params["terminalId"]]
        await terminal.release()
        return {}

    async def close(self) -> None:
        """Kill and reap every terminal still held (the prompt is over)."""
        terminals, self._terminals = list(self._terminals.values()), {}
        for terminal in terminals:
            await terminal.release()
        kill_tagged(self._tag)  # a `setsid cmd &` left its group but not its environment
