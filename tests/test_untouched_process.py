"""Using waza as a library leaves the rest of the process as it found it.

A notebook or a service that imports waza and runs a capture keeps its own
``dataclasses``, asyncio event loop policy and child watcher, garbage collector,
signal handlers, working directory and environment: waza patches nothing that is
not its own. The check runs in a fresh interpreter, so the state before ``import
waza`` is really the state before (this test process has long imported waza).
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

from tests.conftest import executable

# The child: note the process-wide state, import waza, run captures in-process (a scripted agent, then real
# agent programs, plain and streaming events, and a grader program, so children are started and reaped), note
# it again, print the differences.
CHILD = textwrap.dedent(
    """
    import asyncio, dataclasses, gc, json, os, signal, sys, warnings

    def state():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            policy = asyncio.get_event_loop_policy()
            watcher = policy.get_child_watcher() if hasattr(policy, "get_child_watcher") else None
        return {
            "dataclasses": {name: repr(value) for name, value in sorted(vars(dataclasses).items())},
            "asyncio event loop policy": repr(policy),
            "asyncio child watcher": repr(watcher),
            "gc.isenabled()": gc.isenabled(),
            "gc thresholds": gc.get_threshold(),
            "signal handlers": {
                s.name: repr(signal.getsignal(s)) for s in (signal.SIGINT, signal.SIGTERM, signal.SIGCHLD, signal.SIGPIPE)
            },
            "os.getcwd()": os.getcwd(),
            "os.environ": dict(os.environ),
        }

    before = state()
    import waza

    agent, events_agent, grader, prompts = sys.argv[1:5]
    graders = [waza.Executable(argv=(grader,))]
    ran = waza.capture([{"id": "m", "input": "hi", "mock": [{"message": "hello"}]}], waza.MockAgent(), graders)
    ran += waza.capture(prompts, waza.ExecAgent(command=(sys.executable, agent)), graders)
    ran += waza.capture(prompts, waza.ExecAgent(command=(sys.executable, events_agent), events=True), graders)
    after = state()
    changed = {}
    for key in before:
        if before[key] != after[key]:
            if isinstance(before[key], dict):
                keys = sorted(set(before[key]) | set(after[key]))
                changed[key] = {k: [before[key].get(k), after[key].get(k)] for k in keys if before[key].get(k) != after[key].get(k)}
            else:
                changed[key] = [before[key], after[key]]
    print(json.dumps({"changed": changed, "statuses": [r.status for r in ran]}))
    """
)


def test_a_capture_in_process_changes_nothing_outside_waza(tmp_path: Path) -> None:
    agent = tmp_path / "agent.py"
    agent.write_text("import sys\nprint(sys.stdin.read().upper())\n")
    events_agent = tmp_path / "events_agent.py"
    events_agent.write_text('import json, sys\nprint(json.dumps({"type": "message", "content": sys.stdin.read()}))\n')
    grader = executable(tmp_path / "grader.sh", '#!/bin/sh\ncat >/dev/null\necho \'{"pass": true, "score": 1}\'\n')
    prompts = tmp_path / "prompts.jsonl"
    prompts.write_text('{"id": "a", "input": "one"}\n{"id": "b", "input": "two"}\n')
    done = subprocess.run(
        [sys.executable, "-c", CHILD, str(agent), str(events_agent), str(grader), str(prompts)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout.splitlines()[-1])
    assert report["statuses"] == ["passed"] * 5  # the runs really ran (and spawned children)
    assert report["changed"] == {}, f"on Python {sys.version.split()[0]}, waza changed: {json.dumps(report['changed'], indent=1)}"
