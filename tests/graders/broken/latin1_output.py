#!/usr/bin/env python3
"""Broken on purpose (unicode): echoes the output in Latin-1, which is not UTF-8 JSON."""

import json
import sys

request = json.loads(sys.stdin.buffer.read())
text = json.dumps({"pass": True, "score": 1, "reasoning": request["output"]}, ensure_ascii=False)
sys.stdout.buffer.write(text.encode("latin-1", "replace") + b"\n")
