#!/usr/bin/env python3
"""A judge command for the LLM graders in tests: reads the prompt, always answers a 4 out of 5 with a reason."""

import json
import sys

sys.stdin.read()
print(json.dumps({"reasoning": "the answer is correct and complete", "score": 4, "overall_score": 4}))
