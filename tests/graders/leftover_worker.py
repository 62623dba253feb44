#!/usr/bin/env python3
"""A worker that prints a leftover ``{"pass": true, "score": 1}`` line in place of its second answer.

Its answers are right (pass when the output holds the hint) and echo the
requestId, but from the second request on each one comes a request late: the
stray line first, then every answer when the next request arrives. Without
request ids waza takes each line for the answer to the request in flight, and
the first bad result passes on the stray line.
"""

import json
import sys

late = None
for n, line in enumerate(sys.stdin, start=1):
    request = json.loads(line)
    found = (request.get("hint") or "") in request.get("output", "")
    answer = json.dumps({"requestId": request.get("requestId"), "pass": found, "score": 1.0 if found else 0.0})
    if n == 1:
        print(answer, flush=True)
        continue
    print(late if late is not None else json.dumps({"pass": True, "score": 1}), flush=True)
    late = answer
