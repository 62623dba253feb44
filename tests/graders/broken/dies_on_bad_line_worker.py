#!/usr/bin/env python3
"""Broken on purpose (worker-after-reject): a line it cannot parse kills the worker."""

import json
import sys

for line in sys.stdin:
    request = json.loads(line)
    print(json.dumps({"pass": True, "score": 1, "requestId": request.get("requestId")}), flush=True)
