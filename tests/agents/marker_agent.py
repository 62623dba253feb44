"""An exec agent for the --retry-errors tests: what it does is written in the prompt, as JSON.

  {"log": FILE}                appends "ID TRIAL" to FILE when it starts (so a test counts the runs)
  {"fail_while": MARKER}       exits 3 while MARKER exists (a broken dependency, fixed by removing it)
  {"fail_trials": [2]}         ... only on these trials (all trials when absent)
  {"wait_while": FILE}         waits (at most 60 s) while FILE exists before answering

It answers ``ok-answer`` otherwise. Everything comes from the prompt, not the environment, so it
behaves the same in a Ray worker.
"""

from __future__ import annotations

import json
import os
import sys
import time

spec = json.loads(sys.stdin.read())
trial = os.environ.get("WAZA_TRIAL", "")

if spec.get("log"):
    with open(spec["log"], "a") as f:
        f.write(f"{os.environ['WAZA_PROMPT_ID']} {trial}\n")

failing = spec.get("fail_trials")
if spec.get("fail_while") and os.path.exists(spec["fail_while"]) and (failing is None or int(trial or 0) in failing):
    print("the dependency is broken", file=sys.stderr)
    sys.exit(3)

deadline = time.monotonic() + 60
while spec.get("wait_while") and os.path.exists(spec["wait_while"]) and time.monotonic() < deadline:
    time.sleep(0.05)
print("ok-answer")
