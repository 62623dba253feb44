"""An exec agent for the Ray tests: what it does is written in the prompt, as JSON.

  {"answer": "A"}          answers A (default "ok-answer")
  {"sleep": S}             sleeps S seconds first
  {"log": FILE}            appends "ID TRIAL" to FILE when it starts
  {"kill_once": MARKER}    the first time (MARKER does not exist yet): creates MARKER and SIGKILLs its
                           parent, the Ray worker process running it, so Ray must retry the task
  {"kill_always": true}    SIGKILLs its parent every time
  {"killed": FILE}         appends the pid of the parent it kills (with kill_once or kill_always) to FILE
  {"orphan": FILE}         before it kills its parent (kill_once, kill_always), starts `sleep 300` in a
                           session of its own and appends "PID@START SLEEPERPID@START" to FILE; after,
                           it stays (300 s) instead of exiting: an agent hung, and what it started, left
                           running by a worker that died
  {"wait_for": FILE}       waits (at most 60 s) until FILE exists before answering
  {"span": FILE}           appends "ID START END" (wall-clock seconds) to FILE when it is done
  {"fail_if_env": NAME}    exits 1 at once when NAME is set (a node started with it is a "bad node")

Everything comes from the prompt, not the environment, because a shared Ray
instance's workers do not inherit the environment of the waza that submits tasks.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

spec = json.loads(sys.stdin.read())

if spec.get("log"):
    with open(spec["log"], "a") as f:
        f.write(f"{os.environ['WAZA_PROMPT_ID']} {os.environ.get('WAZA_TRIAL', '')}\n")


def start_time(pid: int) -> str:
    """A process's start time (/proc/PID/stat), written beside its id: whoever kills it later checks
    the id still names this process, not one the kernel gave the id to since."""
    with open(f"/proc/{pid}/stat") as f:
        return f.read().rpartition(")")[2].split()[19]


def kill_worker() -> None:
    if spec.get("killed"):
        with open(spec["killed"], "a") as f:
            f.write(f"{os.getppid()}\n")
    if spec.get("orphan"):
        sleeper = subprocess.Popen(["sleep", "300"], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, start_new_session=True)
        with open(spec["orphan"], "a") as f:
            f.write(f"{os.getpid()}@{start_time(os.getpid())} {sleeper.pid}@{start_time(sleeper.pid)}\n")
    os.kill(os.getppid(), signal.SIGKILL)
    if spec.get("orphan"):
        time.sleep(300)
    sys.exit(9)  # nobody reads this any more: the worker that ran it is gone


if spec.get("fail_if_env") and os.environ.get(spec["fail_if_env"]):
    print("this node is broken", file=sys.stderr)
    sys.exit(1)
if spec.get("kill_always"):
    kill_worker()
if spec.get("kill_once"):
    try:
        os.close(os.open(spec["kill_once"], os.O_WRONLY | os.O_CREAT | os.O_EXCL))
    except FileExistsError:
        pass
    else:
        kill_worker()

if spec.get("wait_for"):
    deadline = time.monotonic() + 60
    while not os.path.exists(spec["wait_for"]) and time.monotonic() < deadline:
        time.sleep(0.05)
started = time.time()
time.sleep(float(spec.get("sleep", 0)))
if spec.get("span"):
    with open(spec["span"], "a") as f:
        f.write(f"{os.environ['WAZA_PROMPT_ID']} {started} {time.time()}\n")
print(spec.get("answer", "ok-answer"))
