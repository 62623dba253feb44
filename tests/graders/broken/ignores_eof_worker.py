#!/usr/bin/env python3
"""Broken on purpose (worker-exits-on-eof): answers well, then ignores the end of stdin and SIGTERM."""

import json
import signal
import sys
import time

signal.signal(signal.SIGTERM, signal.SIG_IGN)
for line in sys.stdin:
    try:
        request = json.loads(line)
    except ValueError as exc:
        print(json.dumps({"error": str(exc)}), flush=True)
        continue
    print(json.dumps({"pass": True, "score": 1, "requestId": request.get("requestId")}), flush=True)
while True:
    time.sleep(1)
