#!/usr/bin/env python3
"""Broken on purpose (valid-result): a score above 1."""

import sys

sys.stdin.read()
print('{"pass": true, "score": 1.5}')
