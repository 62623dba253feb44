#!/usr/bin/env python3
"""Broken on purpose (stdout-clean): a debug line on stdout before the result."""

import sys

sys.stdin.read()
print("debug: grading now")
print('{"pass": true, "score": 1}')
