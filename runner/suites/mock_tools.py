"""An eval suite's mocks made real for each trial: MCP mock servers to hand the agent and shims first on its PATH.

One folder per run (:class:`MockFolder`, in ``mocks`` of waza's cache folder,
not the system's temporary folder: Gemini CLI reads a settings file only where
no folder above it is writable by others, as /tmp is) holds the two mock
programs (``mcp_server.py``, ``command_shim.py``), one sub-folder per trial and a ``logs`` folder; a sandboxed agent sees the run's
folder read-only and ``logs`` writable, so its mock servers and shims run and
record their calls there too. Per trial (:class:`TrialMocks`): ``bin/NAME`` for
each mocked command (the shim behind a ``#!PYTHON -I`` line), ``commands.json``,
one ``mcp-N.json`` per MCP mock, and the calls log. When the agent is done the
log is read back (bounded): each command call becomes a ``tool_call`` step of
the trajectory and an entry of ``command_invocations``, each MCP mock call an
entry of ``mcp_mock_calls`` (the agent's own tool-call events are its steps); a
command called a different number of times than its ``expect_calls`` is the
record's error. The log is written by programs the agent runs, so a hostile
agent could forge it: mocks make a run hermetic, they are not a sandbox.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import stat
import sys
import tempfile
from pathlib import Path
from typing import Any

import orjson

from waza.protocol.errors import ConfigError
from waza.protocol.io.model_cache import cache_dir
from waza.protocol.records import CaptureResult, TrajectoryStep

__all__ = ["LOG_LIMIT", "MockFolder", "TrialMocks"]

#: Most bytes of a trial's calls log read back; the rest is dropped with an error on the record.
LOG_LIMIT = 4 * 1024 * 1024


def _program(name: str) -> Path:
    """The file of a mock program in ``waza.adapters.mocks``, found without importing it: the MCP server
    imports the mcp SDK, which a suite without MCP mocks (most of them) should not pay for at start-up."""
    spec = importlib.util.find_spec(f"waza.adapters.mocks.{name}")
    if spec is None or spec.origin is None:  # pragma: no cover - the package ships both programs
        raise FileNotFoundError(f"waza.adapters.mocks.{name}")
    return Path(spec.origin)


_PROGRAMS = (_program("mcp_server"), _program("command_shim"))


class MockFolder:
    """The run's folder of mock programs and trial folders; :meth:`remove` when the run is over."""

    def __init__(self, mcp: list[dict[str, Any]]) -> None:
        self.mcp = mcp
        runs = cache_dir() / "mocks"
        try:
            runs.mkdir(parents=True, exist_ok=True, mode=0o700)
            self.root = Path(tempfile.mkdtemp(prefix="run-", dir=runs)).resolve()
        except OSError as exc:
            raise ConfigError(
                f"cannot make the run's mocks folder in {runs}: {exc.strerror or exc}; set WAZA_CACHE_DIR to a writable folder"
            ) from None
        self.logs = self.root / "logs"
        self.logs.mkdir()
        for program in _PROGRAMS:
            shutil.copyfile(program, self.root / program.name)
        #: The shims' interpreter (standard library only, run with -I); the MCP server runs on waza's own
        #: (a virtual environment's, with the mcp SDK).
        self.python = os.path.realpath(sys.executable)

    def remove(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)

    def server_entries(self, folder: Path, log: Path) -> list[dict[str, Any]]:
        """The MCP mocks as ACP stdio servers (``{name, command, args, env}``), each config written to ``folder``."""
        entries = []
        for i, mock in enumerate(self.mcp):
            config = folder / f"mcp-{i}.json"
            config.write_bytes(orjson.dumps(mock))
            script = str(self.root / "mcp_server.py")
            entries.append({"name": mock["name"], "command": sys.executable, "args": [script, str(config), str(log)], "env": []})
        return entries

    def trial(self, commands: list[dict[str, Any]], workspace: Path) -> TrialMocks:
        """A fresh folder for one trial's mocks (``commands``: the task's command mocks)."""
        folder = Path(tempfile.mkdtemp(prefix="t", dir=self.root))
        log = self.logs / f"{folder.name}.jsonl"
        log.touch(mode=0o666)
        path: list[str] = []
        if commands:
            bin_dir = folder / "bin"
            bin_dir.mkdir()
            shim = _program("command_shim").read_text(encoding="utf-8")
            for mock in commands:
                target = bin_dir / mock["name"]
                target.write_text(f"#!{self.python} -I\n{shim}", encoding="utf-8")
                target.chmod(0o555)
            config = {"log": str(log), "workspace": str(workspace), "commands": {m["name"]: m["responses"] for m in commands}}
            (folder / "commands.json").write_bytes(orjson.dumps(config))
            path.append(str(bin_dir))
        return TrialMocks(folder, log, self.server_entries(folder, log), path, commands)


def _well_formed(entry: dict[str, Any]) -> bool:
    """Whether a log line has the shape a mock writes (the agent can write to the log too)."""
    if not isinstance(entry.get("time"), int | float) or not isinstance(entry.get("response"), int | None):
        return False
    if entry.get("kind") == "command":
        args = entry.get("args")
        return (
            isinstance(entry.get("command"), str)
            and isinstance(entry.get("exit_code"), int)
            and isinstance(args, list)
            and all(isinstance(a, str) for a in args)
        )
    return (
        entry.get("kind") == "mcp"
        and isinstance(entry.get("mock"), str)
        and isinstance(entry.get("tool"), str)
        and isinstance(entry.get("arguments"), dict)
        and isinstance(entry.get("error"), bool)
    )


class TrialMocks:
    """One trial's mocks: what the agent is handed, and :meth:`finish` to record their calls."""

    def __init__(
        self, folder: Path, log: Path, mcp_servers: list[dict[str, Any]], path: list[str], commands: list[dict[str, Any]]
    ) -> None:
        self.folder = folder
        self.log = log
        self.mcp_servers = mcp_servers
        self.path = path
        self.commands = commands

    def _calls(self, result: CaptureResult) -> list[dict[str, Any]]:
        """The log's well-formed entries, read without following a symlink (a regular file only, bounded)."""
        try:
            fd = os.open(self.log, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
            with os.fdopen(fd, "rb") as fh:
                if not stat.S_ISREG(os.fstat(fh.fileno()).st_mode):
                    raise OSError("not a regular file")
                data = fh.read(LOG_LIMIT + 1)
        except OSError as exc:
            result.errors.append(f"cannot read the mocks' calls log: {exc}")
            return []
        if len(data) > LOG_LIMIT:
            result.errors.append(f"the mocks' calls log is larger than {LOG_LIMIT:,} bytes; calls after that are not recorded")
            data = data[:LOG_LIMIT]
        calls = []
        for line in data.splitlines():
            try:
                entry = orjson.loads(line)
            except orjson.JSONDecodeError:
                continue  # a line cut by the limit, or not written by a mock
            if isinstance(entry, dict) and _well_formed(entry):
                calls.append(entry)
        return calls

    def finish(self, result: CaptureResult) -> None:
        """Record the trial's mock calls in ``result`` and check ``expect_calls``; the trial's folder is removed."""
        try:
            calls = self._calls(result)
        finally:
            shutil.rmtree(self.folder, ignore_errors=True)
            self.log.unlink(missing_ok=True)
        commands = [c for c in calls if c["kind"] == "command"]
        mcp = [c for c in calls if c["kind"] == "mcp"]
        if commands:
            result.unknown["command_invocations"] = [
                {k: c.get(k) for k in ("command", "args", "exit_code", "response")} for c in commands
            ]
            start = result.timing.start if result.timing else 0
            first = len(result.trajectory)
            for n, call in enumerate(commands):
                args = call["args"]
                result.trajectory.append(
                    TrajectoryStep(
                        type="tool_call",
                        step_id=f"command-mock-{n + 1}",
                        timestamp=max(0, int(call["time"] * 1000) - start) if start else 0,
                        tool_call_id=f"command-mock-{first + n}",
                        name=call["command"],
                        title=" ".join([call["command"], *args]),
                        kind="execute",
                        status="completed" if call["exit_code"] == 0 else "failed",
                        input={"command": call["command"], "args": args},
                        output={"exit_code": call["exit_code"]},
                        extra={"mock": "command_mocks", "response": call["response"]},
                    )
                )
        if mcp:
            result.unknown["mcp_mock_calls"] = [
                {k: c.get(k) for k in ("mock", "tool", "arguments", "response", "error")} for c in mcp
            ]
        for mock in self.commands:
            expected = mock.get("expect_calls")
            made = sum(1 for c in commands if c["command"] == mock["name"])
            if expected is not None and made != expected:
                result.errors.append(f"command mock {mock['name']!r} was called {made} times; expect_calls is {expected}")
