"""Buggy graders cannot end a run, rewrite a record or corrupt ``-o -``, nor hang on a detached child.

Each test runs ``waza grade`` as a user would, with a grader that misbehaves in
one way, and checks that the fault costs exactly the result it happened on.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sys
from pathlib import Path

import pytest

from waza.protocol.schemas import errors

from .conftest import executable, read_jsonl, write_jsonl

PY = sys.executable

EXITING = """
import sys


class Boom(BaseException):
    pass


def grade(request):
    if request["id"] == "exits":
        sys.exit(3)
    if request["id"] == "boom":
        raise Boom("not an Exception")
    return {"pass": True, "score": 1.0}
"""


def results(tmp_path: Path, ids: list[str]) -> Path:
    rows = [
        {"id": i, "input": "q", "output": f"answer {i}", "hint": "answer", "metadata": {"team": "red"}, "errors": []} for i in ids
    ]
    return write_jsonl(tmp_path / "results.jsonl", rows)


def graded(waza, source: Path, *args: str) -> tuple[dict[str, dict], bytes]:
    proc = waza("grade", source, *args)
    assert proc.returncode in (0, 1), proc.stderr.decode()
    rows = read_jsonl(proc.stdout)
    for row in rows:
        assert errors("CaptureResult", row) == []
    return {r["id"]: r for r in rows}, proc.stderr


def test_sys_exit_in_an_imported_grader_is_an_error_for_that_result_only(waza, tmp_path):
    grader = tmp_path / "g.py"
    grader.write_text(EXITING)
    rows, _ = graded(waza, results(tmp_path, ["a", "exits", "boom", "b"]), "--grader", f"{grader}:grade")
    assert list(rows) == ["a", "exits", "boom", "b"]  # the run went on past both
    assert rows["exits"]["status"] == "error"
    assert rows["exits"]["grades"][0]["error"] == "the grader failed with SystemExit: 3"
    assert rows["boom"]["grades"][0]["error"] == "the grader failed with Boom: not an Exception"
    assert rows["a"]["status"] == rows["b"]["status"] == "passed"


def test_sys_exit_in_a_hosted_worker_grader_is_an_error_and_the_worker_serves_on(waza, tmp_path):
    grader = tmp_path / "g.py"
    grader.write_text(EXITING)
    host = f"worker:{PY} -m waza.runner.grading.python_host {grader}:grade --worker"  # as the README shows it
    rows, _ = graded(waza, results(tmp_path, ["a", "exits", "b"]), "--grader", host, "-j", "1")
    assert rows["exits"]["grades"][0]["error"] == "grader reported an error: the grader failed with SystemExit: 3"
    assert rows["a"]["status"] == rows["b"]["status"] == "passed"


def test_a_grader_mutating_its_request_cannot_change_the_record(waza, tmp_path):
    grader = tmp_path / "g.py"
    grader.write_text(
        "def grade(request):\n"
        "    request['metadata']['team'] = 'tampered'\n"
        "    request['errors'].append('tampered')\n"
        "    request['output'] = 'tampered'\n"
        "    return {'pass': True, 'score': 1.0}\n"
    )
    rows, _ = graded(waza, results(tmp_path, ["a", "b"]), "--grader", f"{grader}:grade")
    for i in ("a", "b"):
        assert rows[i]["metadata"] == {"team": "red"}
        assert rows[i]["errors"] == []
        assert rows[i]["output"] == f"answer {i}"
        assert rows[i]["status"] == "passed"


@pytest.mark.parametrize("kind", ["sync", "async"])
def test_a_grader_that_prints_cannot_corrupt_results_on_stdout(waza, tmp_path, kind):
    grader = tmp_path / "g.py"
    prefix = "async " if kind == "async" else ""
    grader.write_text(
        f"{prefix}def grade(request):\n"
        "    print('debug: looking at', request['id'])\n"
        '    print(\'{"id": "forged", "pass": true}\')\n'
        "    return {'pass': True, 'score': 1.0}\n"
    )
    rows, stderr = graded(waza, results(tmp_path, ["a", "b", "c"]), "--grader", f"{grader}:grade", "-o", "-", "-j", "2")
    assert sorted(rows) == ["a", "b", "c"]  # every stdout line is a whole result, nothing else
    assert b"debug: looking at a" in stderr  # what it printed is shown as a diagnostic


def test_a_detached_child_holding_the_graders_stdout_does_not_hang_the_grade(waza, tmp_path):
    pidfile = tmp_path / "detached.pid"
    grader = executable(
        tmp_path / "detaches.sh",
        f'#!/bin/sh\nsetsid sleep 1000 &\necho $! > {pidfile}\necho \'{{"pass": true, "score": 1}}\'\n',
    )
    try:
        rows, _ = graded(waza, results(tmp_path, ["a"]), "--grader", str(grader), "--grader-timeout", "60")
        # Graded as soon as the grader exited, not timed out while the child held the pipe.
        assert rows["a"]["status"] == "passed", rows["a"]["grades"]
    finally:
        if pidfile.exists():
            with contextlib.suppress(ProcessLookupError):
                os.kill(int(pidfile.read_text()), signal.SIGKILL)


def test_a_function_grader_reads_exactly_what_a_grader_process_reads(waza, tmp_path):
    rich = {
        "id": "rich",
        "input": ["turn one", "turn two"],
        "output": "answer",
        "hint": "ans",
        "reference": "the answer",
        "trajectory": [
            {"type": "message", "stepId": "s0", "timestamp": 1, "role": "agent", "content": "hi"},
            {
                "type": "tool_call",
                "timestamp": 2,
                "name": "read",
                "status": "completed",
                "input": {"path": "a"},
                "output": [1, None],
            },
        ],
        "metadata": {"team": {"name": "red"}},
        "timing": {"start": 1, "end": 9, "total": 8},
        "usage": {"inputTokens": 3},
        "exit": {"code": 0},
        "errors": [],
        "trial": 2,
        "cwd": "/nowhere",
        "stderr": "tail",
        "grades": [{"name": "old", "status": "failed", "pass": False, "score": 0}],
        "extra": "kept on the record",
    }
    source = write_jsonl(tmp_path / "results.jsonl", [rich, {"id": "plain", "input": "q", "output": "o"}])
    seen = tmp_path / "seen"
    seen.mkdir()
    recorder = (
        "import json, pathlib\n\ndef record(request, how):\n"
        f"    (pathlib.Path({str(seen)!r}) / (how + '-' + request['id'])).write_text(json.dumps(request))\n"
    )
    module = tmp_path / "fn.py"
    module.write_text(
        recorder + "\ndef grade(request):\n    record(request, 'function')\n    return {'pass': True, 'score': 1.0}\n"
    )
    process = executable(
        tmp_path / "proc.py",
        f"#!{PY}\nimport json, sys\n{recorder}\nrecord(json.load(sys.stdin), 'process')\n"
        "print(json.dumps({'pass': True, 'score': 1.0}))\n",
    )
    config = '{"must": ["x"]}'
    for spec in (f"{module}:grade", str(process)):
        proc = waza("grade", source, "-g", spec, "--grader-config", config, "-o", tmp_path / "out.jsonl")
        assert proc.returncode == 0, proc.stderr.decode()
    for i in ("rich", "plain"):
        function, process_read = ((seen / f"{how}-{i}").read_text() for how in ("function", "process"))
        assert json.loads(function) == json.loads(process_read)
    assert json.loads((seen / "function-rich").read_text())["config"] == {"must": ["x"]}


def test_a_grader_mutating_every_nested_part_of_its_request_changes_no_record_and_no_later_request(waza, tmp_path):
    step = {"type": "tool_call", "timestamp": 2, "name": "read", "input": {"path": "a"}, "output": [1, {"k": "v"}]}
    row = {
        "input": ["one", "two"],
        "output": "answer",
        "trajectory": [step],
        "metadata": {"team": {"name": "red"}},
        "timing": {"start": 1, "end": 2, "total": 1},
        "errors": [],
    }
    source = write_jsonl(tmp_path / "results.jsonl", [{"id": i, **row} for i in ("a", "b", "c")])
    grader = tmp_path / "g.py"
    grader.write_text(
        "def grade(request):\n"
        "    ok = request['config'] == {'rules': ['x']} and request['trajectory'][0]['input'] == {'path': 'a'}\n"
        "    request['config']['rules'].append('tampered')\n"
        "    request['input'].append('tampered')\n"
        "    request['trajectory'][0]['input']['path'] = 'tampered'\n"
        "    request['trajectory'][0]['output'][1]['k'] = 'tampered'\n"
        "    request['trajectory'].append({'type': 'event'})\n"
        "    request['metadata']['team']['name'] = 'tampered'\n"
        "    request['timing']['start'] = 99\n"
        "    request['errors'].append('tampered')\n"
        "    return {'pass': ok, 'score': 1.0 if ok else 0.0}\n"
    )
    rows, _ = graded(waza, source, "--grader", f"{grader}:grade", "--grader-config", '{"rules": ["x"]}')
    for i in ("a", "b", "c"):
        assert rows[i]["status"] == "passed"  # each request arrived untouched by the one before
        assert rows[i]["input"] == ["one", "two"] and rows[i]["trajectory"] == [step]
        assert rows[i]["metadata"] == {"team": {"name": "red"}} and rows[i]["errors"] == []
        assert rows[i]["timing"] == {"start": 1, "end": 2, "total": 1}
