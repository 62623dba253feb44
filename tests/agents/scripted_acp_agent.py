#!/usr/bin/env python3
"""A scripted ACP agent: a real program speaking ACP (JSON-RPC 2.0, protocol 1) on stdio.

No model: each line of a prompt is a directive, and the agent does exactly that,
so tests (and users trying waza) can drive every part of the protocol:

  say TEXT            message in three chunks without messageId
  say@ID TEXT         message in two chunks with messageId ID
  trickle TEXT        message one character a chunk
  think TEXT          thought chunk
  tool ID [fail]      tool_call pending -> in_progress -> completed (or failed)
  plan                two plan updates (full replacements)
  usage               usage_update, and usage in the prompt response
  extras              available_commands_update, current_mode_update, an unknown kind
  permission KIND T   session/request_permission for a tool of KIND titled T
  read PATH           fs/read_text_file          write PATH TEXT   fs/write_text_file
  run CMD             terminal create, wait, output, release
  runin DIR CMD       ... with cwd DIR           runlimit N CMD    ... with outputByteLimit N
  runenv NAME=VALUE CMD   ... with env NAME=VALUE (how an agent asks for LD_PRELOAD)
  spawn CMD           a terminal left running
  flood KB            write KB kilobytes to stderr
  crash               exit 3 mid-prompt          malformed          print a non-JSON line
  killparent [FILE]   append "killed PPID" to FILE, then SIGKILL its parent (the process running waza's adapter: a Ray worker)
  orphan FILE         start `sleep 300` in a session of its own, append "AGENTPID@START SLEEPERPID@START" to FILE
  hang                wait for session/cancel    hang-hard          never answer again
  stop REASON         answer with that stopReason
  symlink NAME TARGET create a symlink in the session cwd (the agent's own doing, not via ACP)
  mkfifo NAME         make a FIFO in the session cwd     sparse NAME MB   make a sparse file of MB megabytes
  readpart PATH LINE LIMIT   fs/read_text_file of a slice; says its size and first line
  flip NAME TARGET N  a child swaps NAME between a file and a symlink to TARGET while N reads ask for NAME
  barrier DIR N       wait (up to 30 s) until N agents have reached DIR, then say whether they did
  cwd | mcp | history | name   say the session cwd, MCP server names, earlier turns, --name

Flags: --name NAME, --require-auth (advertise an auth method and refuse sessions without it),
--startup SECONDS (sleep that long before reading anything: a slow start-up), --starts FILE (append
the agent's pid to FILE when it starts: how many agents ran).
A prompt with no directive is echoed back.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import time
import uuid

ARGS = sys.argv[1:]
NAME = ARGS[ARGS.index("--name") + 1] if "--name" in ARGS else "scripted"
REQUIRE_AUTH = "--require-auth" in ARGS
STARTUP = float(ARGS[ARGS.index("--startup") + 1]) if "--startup" in ARGS else 0.0
STARTS = ARGS[ARGS.index("--starts") + 1] if "--starts" in ARGS else None


def start_time(pid: int) -> str:
    """A process's start time (/proc/PID/stat), written beside its id: whoever kills it later checks
    the id still names this process, not one the kernel gave the id to since."""
    with open(f"/proc/{pid}/stat") as f:
        return f.read().rpartition(")")[2].split()[19]


class Stop(Exception):
    def __init__(self, reason: str) -> None:
        self.reason = reason


class Agent:
    def __init__(self) -> None:
        self.next_id = 0
        self.sessions: dict[str, dict] = {}
        self.authenticated = False
        self.cancelled: set[str] = set()

    # -- wire -------------------------------------------------------------------
    def send(self, message: dict) -> None:
        sys.stdout.write(json.dumps(message) + "\n")
        sys.stdout.flush()

    def read(self) -> dict:
        line = sys.stdin.readline()
        if not line:
            sys.exit(0)
        return json.loads(line)

    def update(self, sid: str, update: dict) -> None:
        self.send({"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": sid, "update": update}})

    def call(self, method: str, params: dict) -> tuple[dict | None, dict | None]:
        """(result, error) of a request to the client; a session/cancel arriving meanwhile is noted."""
        self.next_id += 1
        rid = f"a{self.next_id}"
        self.send({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
        while True:
            message = self.read()
            if message.get("id") == rid and "method" not in message:
                return message.get("result"), message.get("error")
            self.note(message)

    def note(self, message: dict) -> None:
        if message.get("method") == "session/cancel":
            self.cancelled.add(message["params"]["sessionId"])

    # -- methods ----------------------------------------------------------------
    def initialize(self, params: dict) -> dict:
        methods = [{"id": "token", "name": "Token", "description": "a test token"}] if REQUIRE_AUTH else []
        return {
            "protocolVersion": 1,
            "agentCapabilities": {"loadSession": False},
            "agentInfo": {"name": NAME, "version": "1.0"},
            "authMethods": methods,
        }

    def authenticate(self, params: dict) -> dict:
        self.authenticated = params.get("methodId") == "token"
        return {}

    def new_session(self, params: dict) -> dict:
        if REQUIRE_AUTH and not self.authenticated:
            raise Stop("auth")
        sid = uuid.uuid4().hex
        self.sessions[sid] = {"cwd": params["cwd"], "mcp": params.get("mcpServers", []), "history": []}
        return {"sessionId": sid}

    def prompt(self, params: dict) -> dict:
        sid = params["sessionId"]
        session = self.sessions[sid]
        text = "".join(b.get("text", "") for b in params["prompt"] if b.get("type") == "text")
        session["history"].append(text)
        result: dict = {"stopReason": "end_turn"}
        acted = False
        for line in text.splitlines():
            verb, _, rest = line.strip().partition(" ")
            handler = getattr(self, "do_" + verb.replace("-", "_").split("@")[0], None)
            if handler is None:
                continue
            acted = True
            try:
                handler(sid, session, verb, rest, result)
            except Stop as stop:
                result["stopReason"] = stop.reason
                break
        if not acted:
            self.say(sid, f"echo: {text}")
        return result

    # -- directives -------------------------------------------------------------
    def say(self, sid: str, text: str, message_id: str | None = None, parts: int = 3) -> None:
        size = max(1, -(-len(text) // parts))
        for i in range(0, len(text), size):
            update = {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": text[i : i + size]}}
            if message_id:
                update["messageId"] = message_id
            self.update(sid, update)

    def do_say(self, sid, session, verb, rest, result):
        _, _, mid = verb.partition("@")
        self.say(sid, rest, mid or None, parts=2 if mid else 3)

    def do_trickle(self, sid, session, verb, rest, result):
        self.say(sid, rest, parts=len(rest))

    def do_think(self, sid, session, verb, rest, result):
        self.update(sid, {"sessionUpdate": "agent_thought_chunk", "content": {"type": "text", "text": rest}})

    def do_tool(self, sid, session, verb, rest, result):
        tid, _, outcome = rest.partition(" ")
        path = f"{session['cwd']}/notes.txt"
        self.update(
            sid,
            {
                "sessionUpdate": "tool_call",
                "toolCallId": tid,
                "title": "Read notes.txt",
                "kind": "read",
                "status": "pending",
                "rawInput": {"path": path},
                "locations": [{"path": path, "line": 1}],
            },
        )
        self.update(sid, {"sessionUpdate": "tool_call_update", "toolCallId": tid, "status": "in_progress"})
        status = "failed" if outcome == "fail" else "completed"
        self.update(
            sid,
            {
                "sessionUpdate": "tool_call_update",
                "toolCallId": tid,
                "status": status,
                "rawOutput": {"ok": status == "completed"},
                "content": [
                    {"type": "content", "content": {"type": "text", "text": "notes"}},
                    {"type": "diff", "path": path, "oldText": "a", "newText": "b"},
                ],
            },
        )

    def do_plan(self, sid, session, verb, rest, result):
        entries = [
            {"content": "look", "priority": "high", "status": "pending"},
            {"content": "answer", "priority": "medium", "status": "pending"},
        ]
        self.update(sid, {"sessionUpdate": "plan", "entries": entries})
        entries[0] = {**entries[0], "status": "completed"}
        self.update(sid, {"sessionUpdate": "plan", "entries": entries})

    def do_usage(self, sid, session, verb, rest, result):
        self.update(
            sid, {"sessionUpdate": "usage_update", "used": 1200, "size": 200000, "cost": {"amount": 0.25, "currency": "USD"}}
        )
        result["usage"] = {"inputTokens": 10, "outputTokens": 5, "totalTokens": 15, "thoughtTokens": 2}

    def do_extras(self, sid, session, verb, rest, result):
        self.update(
            sid,
            {"sessionUpdate": "available_commands_update", "availableCommands": [{"name": "test", "description": "run tests"}]},
        )
        self.update(sid, {"sessionUpdate": "current_mode_update", "currentModeId": "code"})
        self.update(sid, {"sessionUpdate": "future_update_kind", "payload": {"x": 1}})

    def do_permission(self, sid, session, verb, rest, result):
        kind, _, title = rest.partition(" ")
        tid = f"perm-{uuid.uuid4().hex[:6]}"
        self.update(sid, {"sessionUpdate": "tool_call", "toolCallId": tid, "title": title, "kind": kind, "status": "pending"})
        res, _err = self.call(
            "session/request_permission",
            {
                "sessionId": sid,
                "toolCall": {"toolCallId": tid, "title": title, "kind": kind},
                "options": [
                    {"optionId": "yes", "name": "Allow", "kind": "allow_once"},
                    {"optionId": "always", "name": "Always", "kind": "allow_always"},
                    {"optionId": "no", "name": "Reject", "kind": "reject_once"},
                ],
            },
        )
        outcome = (res or {}).get("outcome", {})
        self.say(sid, f"permission: {outcome.get('outcome')} {outcome.get('optionId', '')}".strip())

    def do_read(self, sid, session, verb, rest, result):
        res, err = self.call("fs/read_text_file", {"sessionId": sid, "path": rest})
        self.say(sid, f"read error: {err['message']}" if err else f"read: {res['content']}")

    def do_write(self, sid, session, verb, rest, result):
        path, _, content = rest.partition(" ")
        _res, err = self.call("fs/write_text_file", {"sessionId": sid, "path": path, "content": content})
        self.say(sid, f"write error: {err['message']}" if err else f"wrote {path}")

    def terminal(self, sid, command, **extra) -> str:
        res, err = self.call("terminal/create", {"sessionId": sid, "command": command, **extra})
        if err:
            return f"terminal error: {err['message']}"
        tid = res["terminalId"]
        status, _ = self.call("terminal/wait_for_exit", {"sessionId": sid, "terminalId": tid})
        out, _ = self.call("terminal/output", {"sessionId": sid, "terminalId": tid})
        self.call("terminal/release", {"sessionId": sid, "terminalId": tid})
        return f"exit {status['exitCode']} truncated {out['truncated']}: {out['output']}"

    def do_run(self, sid, session, verb, rest, result):
        self.say(sid, self.terminal(sid, rest))

    def do_runin(self, sid, session, verb, rest, result):
        cwd, _, command = rest.partition(" ")
        self.say(sid, self.terminal(sid, command, cwd=cwd))

    def do_runenv(self, sid, session, verb, rest, result):
        pair, _, command = rest.partition(" ")
        name, _, value = pair.partition("=")
        self.say(sid, self.terminal(sid, command, env=[{"name": name, "value": value}]))

    def do_runlimit(self, sid, session, verb, rest, result):
        limit, _, command = rest.partition(" ")
        self.say(sid, self.terminal(sid, command, outputByteLimit=int(limit)))

    def do_spawn(self, sid, session, verb, rest, result):
        """Start a command that outlives the turn; wait until it prints "ready" so it has really started."""
        res, err = self.call("terminal/create", {"sessionId": sid, "command": rest})
        if not res:
            self.say(sid, f"terminal error: {err['message']}")
            return
        for _ in range(500):
            out, _ = self.call("terminal/output", {"sessionId": sid, "terminalId": res["terminalId"]})
            if out and "ready" in out.get("output", ""):
                break
            time.sleep(0.01)
        self.say(sid, f"spawned {res['terminalId']}")

    def do_flood(self, sid, session, verb, rest, result):
        line = ("x" * 1023 + "\n").encode()
        for _ in range(int(rest)):
            sys.stderr.buffer.write(line)
        sys.stderr.buffer.write(b"flood done\n")
        sys.stderr.flush()

    def do_killparent(self, sid, session, verb, rest, result):
        if rest.strip():
            with open(rest.strip(), "a") as f:
                f.write(f"killed {os.getppid()}\n")
        os.kill(os.getppid(), 9)
        os._exit(9)  # nobody reads this any more: the worker that ran the adapter is gone

    def do_orphan(self, sid, session, verb, rest, result):
        sleeper = subprocess.Popen(["sleep", "300"], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, start_new_session=True)
        with open(rest.strip(), "a") as f:
            f.write(f"{os.getpid()}@{start_time(os.getpid())} {sleeper.pid}@{start_time(sleeper.pid)}\n")

    def do_crash(self, sid, session, verb, rest, result):
        sys.stderr.write("scripted agent: crashing on purpose\n")
        sys.stderr.flush()
        sys.exit(3)

    def do_malformed(self, sid, session, verb, rest, result):
        sys.stdout.write("this is not JSON-RPC\n")
        sys.stdout.flush()
        time.sleep(60)

    def do_hang(self, sid, session, verb, rest, result):
        while sid not in self.cancelled:
            self.note(self.read())
        raise Stop("cancelled")

    def do_hang_hard(self, sid, session, verb, rest, result):
        while True:
            self.read()

    def do_stop(self, sid, session, verb, rest, result):
        raise Stop(rest)

    def do_symlink(self, sid, session, verb, rest, result):
        name, _, target = rest.partition(" ")
        os.symlink(target, os.path.join(session["cwd"], name))

    def do_mkfifo(self, sid, session, verb, rest, result):
        os.mkfifo(os.path.join(session["cwd"], rest))

    def do_sparse(self, sid, session, verb, rest, result):
        name, _, megabytes = rest.partition(" ")
        with open(os.path.join(session["cwd"], name), "wb") as f:
            f.truncate(int(megabytes) * 1024 * 1024)

    def do_readpart(self, sid, session, verb, rest, result):
        path, line, limit = rest.split()
        res, err = self.call("fs/read_text_file", {"sessionId": sid, "path": path, "line": int(line), "limit": int(limit)})
        if err:
            self.say(sid, f"read error: {err['message']}")
        else:
            self.say(sid, f"read {len(res['content'])} chars, first line {res['content'].splitlines()[0][:40]!r}")

    def do_flip(self, sid, session, verb, rest, result):
        name, target, count = rest.split()
        path = os.path.join(session["cwd"], name)
        pid = os.fork()
        if pid == 0:  # the swapper: a regular file one moment, a symlink out the next
            temp = path + ".new"
            while True:
                with open(temp, "w") as f:
                    f.write("inside\n")
                os.replace(temp, path)
                with contextlib.suppress(FileExistsError):
                    os.symlink(target, temp)
                os.replace(temp, path)
        seen = set()
        try:
            for _ in range(int(count)):
                res, _err = self.call("fs/read_text_file", {"sessionId": sid, "path": name})
                seen.add(res["content"].strip() if res else "error")
        finally:
            os.kill(pid, 9)
            os.waitpid(pid, 0)
        self.say(sid, "flip saw: " + ",".join(sorted(seen)))

    def do_barrier(self, sid, session, verb, rest, result):
        directory, _, count = rest.partition(" ")
        os.makedirs(directory, exist_ok=True)
        open(os.path.join(directory, str(os.getpid())), "w").close()
        for _ in range(300):
            if len(os.listdir(directory)) >= int(count):
                self.say(sid, f"barrier passed by {count} agents")
                return
            time.sleep(0.1)
        self.say(sid, "barrier failed")

    def do_cwd(self, sid, session, verb, rest, result):
        self.say(sid, f"cwd: {session['cwd']}")

    def do_mcp(self, sid, session, verb, rest, result):
        self.say(sid, "mcp: " + ",".join(s["name"] for s in session["mcp"]))

    def do_history(self, sid, session, verb, rest, result):
        self.say(sid, "history: " + " | ".join(session["history"][:-1]))

    def do_name(self, sid, session, verb, rest, result):
        self.say(sid, f"name: {NAME}")

    # -- main loop --------------------------------------------------------------
    def serve(self) -> None:
        methods = {
            "initialize": self.initialize,
            "authenticate": self.authenticate,
            "session/new": self.new_session,
            "session/prompt": self.prompt,
        }
        while True:
            message = self.read()
            if "id" not in message:
                self.note(message)
                continue
            handler = methods.get(message.get("method"))
            if handler is None:
                self.send({"jsonrpc": "2.0", "id": message["id"], "error": {"code": -32601, "message": "method not found"}})
                continue
            try:
                self.send({"jsonrpc": "2.0", "id": message["id"], "result": handler(message["params"])})
            except Stop:
                self.send(
                    {"jsonrpc": "2.0", "id": message["id"], "error": {"code": -32000, "message": "authentication required"}}
                )


if __name__ == "__main__":
    if STARTS:
        with open(STARTS, "a") as f:
            f.write(f"{os.getpid()}\n")
    time.sleep(STARTUP)
    Agent().serve()
