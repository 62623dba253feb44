#!/usr/bin/env python3
"""Broken on purpose (reports-errors): on a request it cannot read, exits 0 and says nothing."""

import json
import sys

try:
    request = json.loads(sys.stdin.read())
except ValueError:
    sys.exit(0)
print(json.dumps({"pass": True, "score": 1}))
