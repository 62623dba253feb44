"""A scripted exec agent for the trials tests: its behaviour per trial is written in the prompt.

The prompt is a JSON object: ``{"pass": [1, 3], "crash": [2]}`` answers
``ok-answer`` on trials 1 and 3, exits with code 3 on trial 2 and answers
``wrong`` otherwise (the trial number comes from WAZA_TRIAL). It also:

- leaves a ``touched`` file in its workspace and answers ``dirty`` when the
  file is already there, so a workspace shared between trials fails the grade;
- answers ``unseeded`` when NEED_FILE names a file its workspace lacks;
- appends ``ID TRIAL`` to the file named by TRIAL_LOG, so a test can count runs;
- when CUT_AT is ``ID:TRIAL``, sends SIGTERM to waza (its parent) and waits to
  be stopped, which cuts the run short at a known point.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from pathlib import Path

prompt_id = os.environ["WAZA_PROMPT_ID"]
trial = int(os.environ["WAZA_TRIAL"])
spec = json.loads(sys.stdin.read())

log = os.environ.get("TRIAL_LOG")
if log:
    with open(log, "a") as f:
        f.write(f"{prompt_id} {trial}\n")

if os.environ.get("CUT_AT") == f"{prompt_id}:{trial}":
    os.kill(os.getppid(), signal.SIGTERM)
    time.sleep(60)  # waza stops this process group while it shuts down

need = os.environ.get("NEED_FILE")
if need and not Path(need).exists():
    print("unseeded")
    sys.exit(0)

marker = Path("touched")
if marker.exists():
    print("dirty")
    sys.exit(0)
marker.write_text(str(trial))

if trial in spec.get("crash", []):
    print("crashing", file=sys.stderr)
    sys.exit(3)
print("ok-answer" if trial in spec.get("pass", []) else "wrong")
