"""Running a built-in grader both ways, in-process and as ``python -m waza.graders.NAME``.

Every table-driven grader test goes through ``grade_both``, which asserts that
the two paths agree on everything a user sees (status, pass, score,
reasoning, outcome, details) before handing the grade back for the case's own
assertions. The process side keeps one ``python -m waza.graders.NAME --worker``
per grader for the whole session (a process start costs ~0.3 s); the
catalogue tests prove the one-shot form (request on stdin, result on stdout)
answers exactly as the worker form does.
"""

from __future__ import annotations

import atexit
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import orjson

from waza.protocol.grader_protocol import grade_from_result, parse_result_bytes
from waza.protocol.records import Grade, GraderRequest
from waza.protocol.schemas import errors
from waza.runner.grading.build import make_runner
from waza.runner.grading.grader_specs import Builtin


def step(name: str, n: int = 1, **fields: Any) -> dict[str, Any]:
    """A tool_call trajectory step as our adapters write it."""
    return {"type": "tool_call", "stepId": f"s{n}", "timestamp": n, "name": name, "status": "completed", **fields}


def tools(*names: str) -> list[dict[str, Any]]:
    return [step(name, i) for i, name in enumerate(names, 1)]


def in_process(name: str, config: dict[str, Any], request: GraderRequest) -> Grade:
    runner = make_runner(Builtin(name=name, grader=name, config=config))
    return anyio.run(runner.grade, request)


_WORKERS: dict[str, subprocess.Popen[bytes]] = {}


def _close_workers() -> None:
    for proc in _WORKERS.values():
        assert proc.stdin is not None
        proc.stdin.close()
        proc.wait(timeout=30)


atexit.register(_close_workers)


def one_shot(name: str, body: dict[str, Any]) -> subprocess.CompletedProcess[bytes]:
    """``python -m waza.graders.NAME < request.json``."""
    return subprocess.run(
        [sys.executable, "-m", f"waza.graders.{name}"], input=orjson.dumps(body), capture_output=True, timeout=60
    )


def as_process(name: str, config: dict[str, Any], request: GraderRequest) -> Grade:
    """The grade from the grader's own process (worker form: one request line, one answer line)."""
    proc = _WORKERS.get(name)
    if proc is None:
        proc = _WORKERS[name] = subprocess.Popen(
            [sys.executable, "-m", f"waza.graders.{name}", "--worker"], stdin=subprocess.PIPE, stdout=subprocess.PIPE
        )
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(orjson.dumps({**request.to_dict(), "config": config}) + b"\n")
    proc.stdin.flush()
    answer = orjson.loads(proc.stdout.readline())
    if "error" in answer:
        return Grade(name=name, status="error", error=answer["error"])
    return grade_from_result(name, parse_result_bytes(orjson.dumps(answer)), weight=1.0, duration_ms=0)


def grade_both(name: str, config: dict[str, Any], cwd: Path | None = None, **fields: Any) -> Grade:
    """Grade one request both ways; assert they agree; return the in-process grade."""
    request = GraderRequest(cwd=str(cwd) if cwd else None, **fields)
    inside = in_process(name, config, request)
    outside = as_process(name, config, request)
    assert errors("Grade", inside.to_dict()) == []
    seen = (inside.status, inside.passed, inside.score)
    assert seen == (outside.status, outside.passed, outside.score), f"in-process {seen} != subprocess {outside}"
    if inside.status != "error":
        assert (inside.reasoning, inside.outcome, inside.details) == (outside.reasoning, outside.outcome, outside.details)
    return inside


def write_files(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
