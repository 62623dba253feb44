#!/usr/bin/env python3
"""Pass when the output contains the hint. Works one-shot and as a worker (worker:./contains_hint.py)."""

import json
import sys


def grade(request):
    hint = (request.get("hint") or "").casefold()
    if not hint:
        return {"error": "the prompt has no hint to look for"}  # an error grade; a worker goes on
    found = hint in request.get("output", "").casefold()
    return {"pass": found, "score": 1.0 if found else 0.0, "reasoning": f"hint {'found' if found else 'missing'}"}


for line in sys.stdin:  # one-shot: a single request; worker: one request per line until stdin closes
    try:
        request = json.loads(line)
        answer = grade(request)
        answer["requestId"] = request.get("requestId")  # worker mode: every answer echoes the request's requestId
    except ValueError as exc:  # a request it cannot read is this request's error, not the worker's end
        answer = {"error": f"bad request: {exc}"}
    print(json.dumps(answer), flush=True)  # exactly one line per request, flushed
