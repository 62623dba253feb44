#!/usr/bin/env python3
"""Broken on purpose (exit-code): a good result, then exit code 3."""

import sys

sys.stdin.read()
print('{"pass": true, "score": 1}')
sys.stderr.write("done, exiting with 3 for no reason\n")
sys.exit(3)
