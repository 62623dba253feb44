#!/usr/bin/env python3
"""Broken on purpose (large-request): reads at most 64 KB of the request."""

import json
import sys

request = json.loads(sys.stdin.buffer.read(65536))
print(json.dumps({"pass": True, "score": 1}))
