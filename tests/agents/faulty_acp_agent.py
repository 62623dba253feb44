#!/usr/bin/env python3
"""A misbehaving ACP agent: the scripted agent plus the faults a real agent can commit.

Every directive of ``scripted_acp_agent.py`` still works (so the same process can
answer a normal prompt after a fault); these add the faults:

  stall               run ``sleep MARK`` without reading stdin or sending anything
  ignore-cancel       say "working", start ``sleep MARK`` in the background, then read on
                      ignoring session/cancel; once cancelled, ask one more permission and
                      say what it was answered, then never answer the prompt
  emit LINE           write LINE to stdout as it is (a non-JSON line, JSON that is not JSON-RPC)
  answer JSON         answer session/prompt at once with JSON's members (e.g. a malformed "error")
  update JSON         a session/update whose update is JSON (however strange)
  unknown METHOD      call a client method waza does not have (params: the session) and say the reply
  unknown-bare METHOD the same with ``params`` a list, not an object
  notify METHOD       send a notification waza does not know
  bigchunk MB         one agent_message_chunk of MB megabytes: "<" + "0123456789abcdef"... + ">"
  permissions N       N session/request_permission requests sent at once (titles "rm N" for every
                      fourth, "ls N" otherwise), then the answers read and counted
  exit-with-children  start two ``sleep MARK`` children (one holding stdout, one not), then exit 0

Flags: --mark MARK (the ``sleep`` argument, so tests find leftovers by it),
--hang-initialize-once FILE (the first agent that finds no FILE creates it and
never answers ``initialize``; later agents behave).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

from scripted_acp_agent import ARGS, Agent

MARK = ARGS[ARGS.index("--mark") + 1] if "--mark" in ARGS else "31.5"
HANG_ONCE = ARGS[ARGS.index("--hang-initialize-once") + 1] if "--hang-initialize-once" in ARGS else None


def sleep_mark(**kwargs: object) -> subprocess.Popen[bytes]:
    return subprocess.Popen(["sleep", MARK], **kwargs)  # type: ignore[call-overload]


class FaultyAgent(Agent):
    prompt_rid: object = None

    def read(self) -> dict:
        message = super().read()
        if message.get("method") == "session/prompt":
            self.prompt_rid = message["id"]
        return message

    def initialize(self, params: dict) -> dict:
        if HANG_ONCE is not None and not os.path.exists(HANG_ONCE):
            open(HANG_ONCE, "w").close()
            sys.stderr.write("faulty agent: ignoring initialize\n")
            sys.stderr.flush()
            sleep_mark().wait()
        return super().initialize(params)

    def do_stall(self, sid, session, verb, rest, result):
        sys.stderr.write("faulty agent: stalling\n")
        sys.stderr.flush()
        sleep_mark().wait()

    def do_ignore_cancel(self, sid, session, verb, rest, result):
        self.say(sid, "working", parts=1)
        sleep_mark()
        while True:
            message = self.read()
            if message.get("method") == "session/cancel":
                res, _ = self.call(
                    "session/request_permission",
                    {
                        "sessionId": sid,
                        "toolCall": {"toolCallId": "late", "title": "after cancel", "kind": "edit"},
                        "options": [{"optionId": "yes", "name": "Allow", "kind": "allow_once"}],
                    },
                )
                self.say(sid, f"after cancel: {(res or {}).get('outcome', {}).get('outcome')}", parts=1)

    def do_emit(self, sid, session, verb, rest, result):
        sys.stdout.write(rest + "\n")
        sys.stdout.flush()

    def do_answer(self, sid, session, verb, rest, result):
        self.send({"jsonrpc": "2.0", "id": self.prompt_rid, **json.loads(rest)})

    def do_update(self, sid, session, verb, rest, result):
        self.update(sid, json.loads(rest))

    def do_unknown(self, sid, session, verb, rest, result):
        _, err = self.call(rest, {"sessionId": sid})
        self.say(sid, f"{rest} answered {err and err['code']}", parts=1)

    def do_unknown_bare(self, sid, session, verb, rest, result):
        _, err = self.call(rest, [sid])  # type: ignore[arg-type]
        self.say(sid, f"{rest} answered {err and err['code']}", parts=1)

    def do_notify(self, sid, session, verb, rest, result):
        self.send({"jsonrpc": "2.0", "method": rest, "params": {"sessionId": sid, "n": 1}})

    def do_bigchunk(self, sid, session, verb, rest, result):
        body = "0123456789abcdef" * (int(rest) * 1024 * 1024 // 16)
        text = "<" + body[2:] + ">"
        self.update(sid, {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": text}})

    def do_permissions(self, sid, session, verb, rest, result):
        ids = []
        for i in range(int(rest)):
            rid = f"p{i}"
            kind, title = ("execute", f"rm {i}") if i % 4 == 0 else ("read", f"ls {i}")
            ids.append(rid)
            self.send(
                {
                    "jsonrpc": "2.0",
                    "id": rid,
                    "method": "session/request_permission",
                    "params": {
                        "sessionId": sid,
                        "toolCall": {"toolCallId": f"t{i}", "title": title, "kind": kind},
                        "options": [
                            {"optionId": "yes", "name": "Allow", "kind": "allow_once"},
                            {"optionId": "no", "name": "Reject", "kind": "reject_once"},
                        ],
                    },
                }
            )
        answers: dict[str, str] = {}
        while len(answers) < len(ids):
            message = self.read()
            if message.get("id") in ids and "method" not in message:
                answers[message["id"]] = (message.get("result") or {}).get("outcome", {}).get("optionId", "none")
            else:
                self.note(message)
        counts = {option: list(answers.values()).count(option) for option in ("yes", "no", "none")}
        self.say(sid, "permissions answered: " + json.dumps(counts, sort_keys=True), parts=1)

    def do_exit_with_children(self, sid, session, verb, rest, result):
        self.say(sid, "leaving", parts=1)
        sleep_mark()
        sleep_mark(stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        sys.stdout.flush()
        os._exit(0)


if __name__ == "__main__":
    FaultyAgent().serve()
