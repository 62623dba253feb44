#!/usr/bin/env python3
"""Broken on purpose (unknown-fields): rejects any request field it was not written for."""

import json
import sys

KNOWN = {
    "protocol",
    "id",
    "input",
    "output",
    "hint",
    "expected",
    "reference",
    "trajectory",
    "metadata",
    "cwd",
    "config",
    "timing",
    "usage",
    "exit",
    "errors",
    "toolErrors",
    "trial",
}
request = json.loads(sys.stdin.read())
unknown = sorted(set(request) - KNOWN)
if unknown:
    sys.exit(f"unknown request fields: {unknown}")
print(json.dumps({"pass": True, "score": 1}))
