#!/usr/bin/env python3
"""A scripted exec-adapter agent for tests: what it does is chosen by words in the prompt.

"crash"        prints part of an answer, then exits 3
"hang"         prints a line, then sleeps for a minute
"slow"         sleeps 0.15 s, then answers
"stderr"       writes 2 MB to stderr, then answers
"events"       prints JSONL trajectory events (use with --events)
"name is X"    remembers X; "what is my name" answers from WAZA_HISTORY
anything else  answers "echo: <prompt>"
"""

import json
import os
import re
import sys
import time

prompt = sys.stdin.read() or os.environ.get("WAZA_PROMPT", "")
history = json.loads(os.environ.get("WAZA_HISTORY", "[]"))

if "crash" in prompt:
    print("partial answer before the crash", flush=True)
    sys.exit(3)
if "hang" in prompt:
    print("started", flush=True)
    time.sleep(60)
if "slow" in prompt:
    time.sleep(0.15)
if "stderr" in prompt:
    sys.stderr.write("x" * (2 * 1024 * 1024))
    sys.stderr.flush()
if "events" in prompt:
    for event in (
        {"type": "thought", "content": "thinking "},
        {"type": "thought", "content": "hard"},
        {"type": "tool_call", "toolCallId": "t1", "name": "bash", "kind": "execute", "status": "pending", "input": {"cmd": "ls"}},
        {"type": "plan", "entries": [{"content": "look", "status": "completed"}]},
        {"type": "tool_call", "toolCallId": "t1", "status": "failed", "output": "no such dir"},
        {"type": "message", "content": "done: "},
        {"type": "message", "content": "events"},
        {"type": "usage", "inputTokens": 11, "outputTokens": 7},
    ):
        print(json.dumps(event), flush=True)
    sys.exit(0)
m = re.search(r"name is (\w+)", prompt)
if m:
    print(f"hello {m[1]}")
elif "what is my name" in prompt.lower():
    names = [re.search(r"name is (\w+)", t["content"]) for t in history if t["role"] == "user"]
    found = [n[1] for n in names if n]
    print(f"your name is {found[-1]}" if found else "I do not know")
else:
    print(f"echo: {prompt.strip()}")
