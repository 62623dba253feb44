#!/usr/bin/env python3
"""A worker-mode grader whose misbehaviour is chosen by the request id, for the worker-mode tests.

Every good answer names the id it answers and the worker's pid in ``outcome``,
so a test can see that no answer went to the wrong request and when a worker
was replaced.
"""

import json
import os
import sys
import time

previous = None
for line in sys.stdin:
    request = json.loads(line)
    rid = request["id"]
    echo = request["requestId"]
    sys.stderr.write(f"grading {rid}\n" + ("x" * 200_000 + "\n" if rid.startswith("noisy") else ""))
    sys.stderr.flush()
    if rid.startswith("crash"):
        sys.stderr.write("about to crash\n")
        sys.stderr.flush()
        os._exit(3)
    if rid.startswith("hang"):
        time.sleep(600)
    if rid.startswith("garbage"):
        print("this is not json", flush=True)
        continue
    if rid.startswith("double"):
        print(
            json.dumps({"requestId": echo, "pass": True, "score": 1}) + "\n" + json.dumps({"pass": True, "score": 1}), flush=True
        )
        continue
    if rid.startswith("wrongid"):
        print(json.dumps({"id": "someone-else", "requestId": echo, "pass": True, "score": 1}), flush=True)
        continue
    if rid.startswith("noid"):  # a protocol-1 answer: right, but without the requestId
        print(json.dumps({"pass": True, "score": 1}), flush=True)
        continue
    if rid.startswith("stale"):  # as a late answer to the request before would look
        print(json.dumps({"requestId": previous, "pass": True, "score": 1}), flush=True)
        continue
    previous = echo
    if rid.startswith("reject"):
        print(json.dumps({"requestId": echo, "error": "cannot grade this one"}), flush=True)
        continue
    found = request.get("hint", "") in request.get("output", "")
    answer = {
        "id": rid,
        "requestId": echo,
        "pass": found,
        "score": 1.0 if found else 0.0,
        "reasoning": f"graded {rid}",
        "outcome": {"pid": os.getpid(), "for": rid},
    }
    print(json.dumps(answer), flush=True)
