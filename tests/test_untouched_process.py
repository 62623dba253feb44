"""Using waza as a library leaves the rest of the process as it found it.

A notebook or a service that imports waza and runs a capture keeps its own
``dataclasses``, asyncio event loop policy and child watcher, garbage collector,
signal handlers, working directory and environment: waza patches nothing that is
not its own. The check runs in a fresh interpreter, so the state before ``import
waza`` is really the state before (this test process has long imported waza).

Standard output is the caller's too: a run whose results go to a file leaves
``sys.stdout`` as it is while its graders run, so a notebook's other output (another
task printing meanwhile) stays where it was. The Ray path gives back what it sets for
Ray (the workers' niceness in ``os.environ``, the level of Ray's logger).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.conftest import executable

# The child: note the process-wide state, import waza, run captures in-process (a scripted agent, then real
# agent programs, plain and streaming events, and a grader program, so children are started and reaped), note
# it again, print the differences.
STATE = textwrap.dedent(
    """
    import asyncio, dataclasses, gc, json, logging, os, signal, sys, warnings

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
            "Ray's logger level": logging.getLogger("ray").level,
        }

    def report(before, after, **facts):
        changed = {}
        for key in before:
            if before[key] != after[key]:
                if isinstance(before[key], dict):
                    keys = sorted(set(before[key]) | set(after[key]))
                    changed[key] = {k: [before[key].get(k), after[key].get(k)] for k in keys if before[key].get(k) != after[key].get(k)}
                else:
                    changed[key] = [before[key], after[key]]
        print(json.dumps({"changed": changed, **facts}), file=sys.__stdout__, flush=True)
    """
)

CHILD = STATE + textwrap.dedent(
    """
    before = state()
    import waza

    agent, events_agent, grader, prompts = sys.argv[1:5]
    graders = [waza.Executable(argv=(grader,))]
    ran = waza.capture([{"id": "m", "input": "hi", "mock": [{"message": "hello"}]}], waza.MockAgent(), graders)
    ran += waza.capture(prompts, waza.ExecAgent(command=(sys.executable, agent)), graders)
    ran += waza.capture(prompts, waza.ExecAgent(command=(sys.executable, events_agent), events=True), graders)
    report(before, state(), statuses=[r.status for r in ran])
    """
)

# A notebook's way: stdout is a text stream with no byte buffer (as ipykernel's OutStream), another task prints
# while the run goes on, and an async in-process grader runs with results written to a file.
NOTEBOOK_CHILD = STATE + textwrap.dedent(
    """
    import io

    class OutStream(io.TextIOBase):
        def __init__(self):
            self.lines = []
        def writable(self):
            return True
        def write(self, text):
            self.lines.append(text)
            return len(text)

    cell = OutStream()
    sys.stdout = cell
    before = state()
    import waza

    seen = []  # what sys.stdout was while each grade ran

    async def grade(request):
        seen.append(sys.stdout is cell)
        print("grader says hi")
        await asyncio.sleep(0.3)  # the other task prints meanwhile
        seen.append(sys.stdout is cell)
        return {"pass": True, "score": 1.0}

    async def ticker(stop):
        while not stop.is_set():
            print("tick from another task")
            await asyncio.sleep(0.02)

    async def main(agent, prompts, out):
        stop = asyncio.Event()
        other = asyncio.create_task(ticker(stop))
        ran = [
            r
            async for r in waza.acapture(
                prompts, waza.ExecAgent(command=(sys.executable, agent)), [waza.PythonGrader(fn=grade)], output=waza.Output(out)
            )
        ]
        stop.set()
        await other
        return ran

    agent, prompts, out = sys.argv[1:4]
    stderr = io.StringIO()
    real_stderr, sys.stderr = sys.stderr, stderr
    try:
        ran = asyncio.run(main(agent, prompts, out))
    finally:
        sys.stderr = real_stderr
    after = state()
    sys.stdout = sys.__stdout__
    report(
        before,
        after,
        statuses=[r.status for r in ran],
        seen=seen,
        ticks_on_stdout=sum("tick from another task" in line for line in cell.lines),
        ticks_on_stderr=stderr.getvalue().count("tick from another task"),
        grader_print_on_stdout="grader says hi" in "".join(cell.lines),
    )
    """
)

# The Ray path: an embedded instance, started and shut down by the run. Ray is imported first (as a caller
# using Ray would have): what importing Ray does is Ray's; what the run does around it must be undone.
RAY_CHILD = STATE + textwrap.dedent(
    """
    import ray
    before = state()
    import waza
    from waza.runner.engine.capture import CaptureRun
    from waza.runner.ray_cluster.executor import RayExecutor, RayOptions

    agent, prompts = sys.argv[1:3]
    run = CaptureRun.prepare(
        prompts,
        waza.ExecAgent(command=(sys.executable, agent)),
        executor=RayExecutor(RayOptions(cpus=1)),
    )

    async def main():
        return [r async for r in run.stream()]

    ran = asyncio.run(main())
    report(before, state(), statuses=[r.status for r in ran])
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


def test_a_notebook_like_run_leaves_stdout_to_the_caller_and_its_other_output(tmp_path: Path) -> None:
    agent = tmp_path / "agent.py"
    agent.write_text("import sys\nprint(sys.stdin.read().upper())\n")
    prompts = tmp_path / "prompts.jsonl"
    prompts.write_text('{"id": "a", "input": "one"}\n{"id": "b", "input": "two"}\n')
    done = subprocess.run(
        [sys.executable, "-c", NOTEBOOK_CHILD, str(agent), str(prompts), str(tmp_path / "results.jsonl")],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout.splitlines()[-1])
    assert report["statuses"] == ["passed", "passed"]
    assert report["changed"] == {}, json.dumps(report["changed"], indent=1)
    # While the graders ran, sys.stdout stayed the notebook's: its own print, and the other task's, went there.
    assert report["seen"] == [True] * 4
    assert report["grader_print_on_stdout"] is True
    assert report["ticks_on_stdout"] > 0 and report["ticks_on_stderr"] == 0, report


@pytest.mark.slow  # an embedded Ray instance; the local path's twin above is in the main suite
def test_the_ray_path_gives_back_the_environment_and_rays_logger_level(tmp_path: Path) -> None:
    pytest.importorskip("ray", reason="the ray extra is not installed (pip install 'waza[ray]')")
    agent = tmp_path / "agent.py"
    agent.write_text("import sys\nprint(sys.stdin.read().upper())\n")
    prompts = tmp_path / "prompts.jsonl"
    prompts.write_text('{"id": "a", "input": "one"}\n')
    env = {k: v for k, v in os.environ.items() if k not in ("RAY_ADDRESS", "RAY_worker_niceness")}
    done = subprocess.run(
        [sys.executable, "-c", RAY_CHILD, str(agent), str(prompts)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout.splitlines()[-1])
    assert report["statuses"] == ["ungraded"]  # it ran (no grader)
    assert report["changed"] == {}, json.dumps(report["changed"], indent=1)
