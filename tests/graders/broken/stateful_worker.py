#!/usr/bin/env python3
"""Broken on purpose (worker-in-order): each answer depends on how many requests came before it."""

import json
import sys

for n, line in enumerate(sys.stdin, start=1):
    try:
        request = json.loads(line)
    except ValueError as exc:
        print(json.dumps({"error": str(exc)}), flush=True)
        continue
    print(
        json.dumps({"pass": True, "score": 1, "reasoning": f"request number {n}", "requestId": request.get("requestId")}),
        flush=True,
    )
