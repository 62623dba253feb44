#!/usr/bin/env python3
"""Broken on purpose (worker-exits-on-eof): when stdin closes it exits with code 4."""

import json
import sys

for line in sys.stdin:
    try:
        request = json.loads(line)
        print(json.dumps({"pass": True, "score": 1, "requestId": request.get("requestId")}), flush=True)
    except ValueError as exc:
        print(json.dumps({"error": str(exc)}), flush=True)
sys.exit(4)
