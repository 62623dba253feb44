#!/usr/bin/env python3
"""A scripted exec-adapter agent (--events format) whose verdict per prompt is chosen on its command line.

Prompts say "Say WORD"; the agent thinks, plans, calls a `lookup` tool and answers WORD,
so the hint grader passes it. Arguments ID=RULE change that for one prompt id:

  ID=fail      answers "I would rather not" (the hint grader fails it)
  ID=error     prints a bad event line and exits 3 (an agent error, not a fail)
  ID=crash     as error, with a Python traceback on stderr first (what a crashing agent leaves)
  ID=1,3       passes only in those trials (WAZA_TRIAL), fails in the others
"""

import json
import os
import re
import sys

rules = dict(arg.split("=", 1) for arg in sys.argv[1:])
prompt = sys.stdin.read() or os.environ.get("WAZA_PROMPT", "")
pid = os.environ.get("WAZA_PROMPT_ID", "")
trial = os.environ.get("WAZA_TRIAL", "")
rule = rules.get(pid, "pass")


def emit(**event):
    print(json.dumps(event), flush=True)


if rule in ("error", "crash"):
    emit(type="thought", content="about to break")
    if rule == "crash":
        print('Traceback (most recent call last):\n  File "quiz_agent.py", line 1, in <module>', file=sys.stderr)
        print("KeyError: 'QUIZ_API_KEY'", file=sys.stderr, flush=True)
    sys.exit(3)
word = (re.search(r"Say (\S+)", prompt) or [None, "nothing"])[1]
passes = rule == "pass" or (rule not in ("fail",) and trial in rule.split(","))
emit(type="thought", content=f"The user wants me to say {word}.")
emit(type="plan", entries=[{"content": "look the word up", "status": "completed"}, {"content": "answer", "status": "pending"}])
emit(type="tool_call", toolCallId="t1", name="lookup", kind="search", status="pending", input={"word": word})
emit(type="tool_call", toolCallId="t1", status="completed", output={"found": word, "note": "<b>not bold</b>"})
emit(type="message", content=word if passes else "I would rather not")
emit(type="usage", inputTokens=7, outputTokens=3)
