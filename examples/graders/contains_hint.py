#!/usr/bin/env python3
"""Pass when the output contains the hint. Works one-shot and as a worker (worker:./contains_hint.py)."""
import json
import sys

for line in sys.stdin:  # one-shot: a single request; worker: one request per line until stdin closes
    if not line.strip():
        continue
    request = json.loads(line)
    hint = (request.get("hint") or "").casefold()
    if not hint:
        answer = {"error": "the prompt has no hint to look for"}  # an error grade; the worker goes on
    else:
        found = hint in request.get("output", "").casefold()
        answer = {"pass": found, "score": 1.0 if found else 0.0, "reasoning": f"hint {'found' if found else 'missing'}"}
    print(json.dumps(answer), flush=True)  # exactly one line per request, flushed
