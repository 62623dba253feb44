"""Fault injection into real grader and agent processes.

Every fault must end as an *error* (never a pass or a fail) with its reason,
the result's output and trajectory kept, the run completed, and no process left
behind.
"""

from __future__ import annotations

import subprocess
import sys
import uuid
from pathlib import Path

import anyio
import pytest

import waza
from waza.protocol import schemas

from .conftest import executable

AGENT = [sys.executable, str(Path(__file__).parent / "agents" / "exec_agent.py")]
PY = sys.executable
MARK = f"31.{uuid.uuid4().int % 10**8}"  # a unique sleep argument to find leftover processes by

#: The budget of the two graders that hang (what they wait out) and their names. Every other grader gets a generous
#: one, so a busy machine still starts and reads the healthy-speed ones (100 MB of stdout among them) in time.
HANG_BUDGET = 5
HANGING = ("hangs", "answers-too-late")
GRADER_FAULTS: dict[str, tuple[str, str]] = {
    # name: (script body, expected words in the error).
    "exit-nonzero": ("#!/bin/sh\necho 'boom' >&2\nexit 4\n", "exited with code 4: boom"),
    "killed-by-signal": ("#!/bin/sh\nkill -9 $$\n", "killed by signal 9"),
    "hangs": (f"#!/bin/sh\nsleep {MARK}\n", f"timed out after {HANG_BUDGET}s"),
    "answers-too-late": ('#!/bin/sh\nsleep 30\necho \'{"pass": true, "score": 1}\'\n', "timed out"),
    "prints-nothing": ("#!/bin/sh\ncat >/dev/null\n", "printed nothing"),
    "garbage": ("#!/bin/sh\necho 'PASS!!'\n", "not one JSON document"),
    "partial-json": ('#!/bin/sh\nprintf \'{"pass": true, "sco\'\n', "not one JSON document"),
    "two-documents": (
        '#!/bin/sh\necho \'{"pass": true, "score": 1}\'\necho \'{"pass": false, "score": 0}\'\n',
        "not one JSON document",
    ),
    "text-before-json": ("#!/bin/sh\necho 'result:'\necho '{\"pass\": true, \"score\": 1}'\n", "not one JSON document"),
    "huge-stdout": (f"#!{PY}\nimport sys\nsys.stdout.write('x' * (100 * 1024 * 1024))\n", "more than 10 MB"),
    "score-too-high": ('#!/bin/sh\necho \'{"pass": true, "score": 1.5}\'\n', "[0, 1]"),
    "score-negative": ('#!/bin/sh\necho \'{"pass": false, "score": -0.1}\'\n', "[0, 1]"),
    "score-nan": ('#!/bin/sh\necho \'{"pass": true, "score": NaN}\'\n', "not one JSON document"),
    "score-string": ('#!/bin/sh\necho \'{"pass": true, "score": "0.5"}\'\n', "must be a number"),
    "pass-yes": ('#!/bin/sh\necho \'{"pass": "yes", "score": 1}\'\n', "must be a boolean"),
    "invalid-utf8": (
        f'#!{PY}\nimport sys\nsys.stdout.buffer.write(b\'{{"pass": true, "score": 1, "reasoning": "\\xff\\xfe"}}\')\n',
        "not one JSON document",
    ),
    "closes-stdin": ('#!/bin/sh\nexec 0<&-\necho \'{"pass": true, "score": 1}\'\n', None),
    "grandchild": (f'#!/bin/sh\n(sleep {MARK} &)\necho \'{{"pass": true, "score": 1}}\'\n', None),
    "stderr-flood": (f"#!{PY}\nimport sys\nsys.stderr.write('e' * (5 * 1024 * 1024))\nsys.exit(2)\n", "exited with code 2"),
}


@pytest.fixture(scope="module")
def fault_run(tmp_path_factory):
    """Both results graded by every faulty grader, through the API in-process (engine behaviour: what record comes
    out); the grader processes are real. The hanging ones get a short budget of their own, the others a long one."""
    tmp = tmp_path_factory.mktemp("faults")
    prompts = [{"id": "a", "input": "emit events"}, {"id": "b", "input": "more events"}]
    graders = [
        waza.Executable(argv=(str(executable(tmp / name, body)),), name=name, timeout=HANG_BUDGET if name in HANGING else 60)
        for name, (body, _) in GRADER_FAULTS.items()
    ]
    agent = waza.ExecAgent(command=tuple(AGENT), events=True)
    return [r.to_dict() for r in waza.capture(prompts, agent, graders, concurrency=2)]


def test_run_completes_with_every_result_written(fault_run):
    rows = fault_run
    assert sorted(r["id"] for r in rows) == ["a", "b"]
    for row in rows:
        assert schemas.errors("CaptureResult", row) == []
        assert row["status"] == "error"
        assert row["trajectory"], "the capture is kept"
        assert row["output"]


@pytest.mark.parametrize("name", [n for n, (_, why) in GRADER_FAULTS.items() if why])
def test_each_grader_fault_is_an_error_with_its_reason(fault_run, name):
    expected = GRADER_FAULTS[name][1]
    for row in fault_run:
        grade = next(g for g in row["grades"] if g["name"] == name)
        assert grade["status"] == "error", grade
        assert grade["pass"] is None and grade["score"] is None
        assert expected in grade["error"], grade["error"]


def test_tolerated_quirks_still_give_a_verdict(fault_run):
    """Closing stdin unread and leaving a grandchild behind are not errors if the answer is valid."""
    for row in fault_run:
        grades = {g["name"]: g for g in row["grades"]}
        assert grades["closes-stdin"]["status"] == "passed"
        assert grades["grandchild"]["status"] == "passed"


def test_no_grader_process_is_left_behind(fault_run):
    assert subprocess.run(["pgrep", "-f", MARK], capture_output=True).stdout == b""


def test_stderr_tail_is_bounded(fault_run):
    row = fault_run[0]
    grade = next(g for g in row["grades"] if g["name"] == "stderr-flood")
    assert 0 < len(grade["details"]["stderr"]) <= 8192


AGENT_FAULTS = {
    "crash-mid-stream": (
        f"#!{PY}\nimport json\nprint(json.dumps({{'type': 'message', 'content': 'half'}}), flush=True)\nraise SystemExit(5)\n",
        "exited with code 5",
    ),
    "hang-before-first-event": (f"#!/bin/sh\nsleep {MARK}\n", "timed out"),
    "malformed-event": ('#!/bin/sh\necho \'{"type": "message", "content": "ok"}\'\necho \'{nope\'\n', "not a trajectory event"),
    "stderr-flood": (
        f'#!{PY}\nimport sys\nsys.stderr.write(\'z\' * (20 * 1024 * 1024))\nprint(\'{{"type": "message", "content": "fine"}}\')\n',
        None,
    ),
    "huge-message": (
        f"#!{PY}\nimport json\nprint(json.dumps({{'type': 'message', 'content': 'm' * (50 * 1024 * 1024)}}))\n",
        None,
    ),
    "exits-with-children": (f'#!/bin/sh\n(sleep {MARK} &)\necho \'{{"type": "message", "content": "bye"}}\'\n', None),
    "killed": ('#!/bin/sh\necho \'{"type": "thought", "content": "hmm"}\'\nkill -9 $$\n', "killed by signal 9"),
    "bad-usage-event": (
        '#!/bin/sh\necho \'{"type": "usage", "inputTokens": "ten"}\'\necho \'{"type": "message", "content": "ok"}\'\n',
        "field 'inputTokens': must be integer or null",
    ),
    "unknown-event-kind": (
        '#!/bin/sh\necho \'{"type": "telemetry", "x": 1}\'\necho \'{"type": "message", "content": "ok"}\'\n',
        None,
    ),
}


@pytest.fixture(scope="module")
def agent_runs(tmp_path_factory):
    """Each faulty agent captured through the API in-process (engine behaviour: what record comes out),
    all at once, so the hang case's timeout overlaps the others."""
    tmp = tmp_path_factory.mktemp("agents")
    runs: dict[str, list[dict]] = {}

    async def one(name: str) -> None:
        # The hung agent a short budget; the others (a 50 MB message among them) a generous one on a busy machine.
        prompts = [{"id": "p", "input": "go", "timeout": 5 if name.startswith("hang") else 60}]
        agent = waza.ExecAgent(command=(str(executable(tmp / name, AGENT_FAULTS[name][0])),), events=True)
        runs[name] = [r.to_dict() async for r in waza.acapture(prompts, agent, workspace=waza.Workspace(cwd=tmp))]

    async def main() -> None:
        async with anyio.create_task_group() as group:
            for name in AGENT_FAULTS:
                group.start_soon(one, name)

    anyio.run(main)
    return runs


@pytest.mark.parametrize("name", sorted(AGENT_FAULTS))
def test_each_agent_fault_ends_in_a_record(agent_runs, name):
    rows = agent_runs[name]
    expected = AGENT_FAULTS[name][1]
    assert len(rows) == 1 and schemas.errors("CaptureResult", rows[0]) == []
    row = rows[0]
    if expected is None:
        assert row["status"] == "ungraded", row["errors"]
    else:
        assert row["status"] == "error"
        assert any(expected in e for e in row["errors"]), row["errors"]


def test_what_an_agent_said_before_failing_is_kept(agent_runs):
    assert agent_runs["crash-mid-stream"][0]["output"] == "half"
    assert agent_runs["killed"][0]["trajectory"][1]["content"] == "hmm"
    assert len(agent_runs["huge-message"][0]["output"]) == 50 * 1024 * 1024
    events = [s for s in agent_runs["unknown-event-kind"][0]["trajectory"] if s["type"] == "event"]
    assert events[0]["extra"]["data"] == {"type": "telemetry", "x": 1}


def test_no_agent_process_is_left_behind(agent_runs):
    assert subprocess.run(["pgrep", "-f", MARK], capture_output=True).stdout == b""
