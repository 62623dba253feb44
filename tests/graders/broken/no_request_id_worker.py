#!/usr/bin/env python3
"""Broken on purpose (worker-request-id): a protocol-1 worker, right answers that do not echo requestId."""

import json
import sys

for line in sys.stdin:
    try:
        request = json.loads(line)
    except ValueError as exc:
        print(json.dumps({"error": str(exc)}), flush=True)
        continue
    found = (request.get("hint") or "") in request.get("output", "")
    print(json.dumps({"pass": found, "score": 1.0 if found else 0.0}), flush=True)
