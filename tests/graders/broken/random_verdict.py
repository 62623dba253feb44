#!/usr/bin/env python3
"""Broken on purpose (deterministic): a coin toss."""

import json
import os
import sys

json.loads(sys.stdin.read())
print(json.dumps({"pass": True, "score": int.from_bytes(os.urandom(4), "big") / 2**32}))
