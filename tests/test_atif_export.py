"""``waza export --to atif``: each trial's trajectory as an ATIF document that Harbor's own models accept.

The check is Harbor 0.26's pydantic ``Trajectory.model_validate``, from its wheel on PyPI
(``.ci/run`` downloads it into the test cache). Harbor requires Python 3.12, but its trajectory
models only need pydantic, so they are imported from the wheel (a zip on ``sys.path``) in a
subprocess, on the Python that runs the tests; where the wheel cannot be had, the test skips and
says why.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

import waza

from .conftest import executable, read_jsonl, run_waza

AGENTS = Path(__file__).parent / "agents"
HARBOR = "harbor==0.26.0"

GRADER = """#!/usr/bin/env python3
import json, sys
for line in sys.stdin:
    req = json.loads(line)
    print(json.dumps({"pass": "summary" in req["output"].lower(), "score": 1.0 if "summary" in req["output"].lower() else 0.0}), flush=True)
"""

#: Validates every line of a file with Harbor's Trajectory model; prints one JSON line per document.
VALIDATE = """
import json, sys
sys.path.insert(0, sys.argv[1])
from harbor.models.trajectories import Trajectory
for line in open(sys.argv[2], encoding="utf-8"):
    doc = Trajectory.model_validate(json.loads(line))
    print(json.dumps({"version": doc.schema_version, "steps": len(doc.steps), "session": doc.session_id}))
"""


@pytest.fixture(scope="module")
def harbor_wheel() -> Path:
    """Harbor 0.26's wheel, downloaded once into the test cache (no dependencies: only pydantic is used)."""
    try:
        import pydantic  # noqa: F401
    except ImportError:
        pytest.skip("pydantic is not installed here; Harbor's trajectory models need it")
    cache = Path(os.environ.get("WAZA_TEST_CACHE", Path.home() / ".cache" / "waza-tests")) / "harbor-0.26.0"
    wheels = sorted(cache.glob("harbor-0.26.0-*.whl"))
    if not wheels:
        cache.mkdir(parents=True, exist_ok=True)
        argv = [sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--python-version", "3.12"]
        argv += ["--only-binary=:all:", "-d", str(cache), HARBOR]
        try:
            done = subprocess.run(argv, capture_output=True, timeout=300, check=False)
        except subprocess.TimeoutExpired:
            pytest.skip(f"pip download {HARBOR} timed out")
        wheels = sorted(cache.glob("harbor-0.26.0-*.whl"))
        if done.returncode != 0 or not wheels:
            pytest.skip(f"pip download {HARBOR} failed: {done.stderr.decode(errors='replace')[-300:]}")
    return wheels[0]


def harbor_validate(wheel: Path, exported: Path) -> list[dict[str, object]]:
    done = subprocess.run(
        [sys.executable, "-c", VALIDATE, str(wheel), str(exported)], capture_output=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr.decode(errors="replace")[-3000:]
    return read_jsonl(done.stdout)


def test_capture_exports_as_atif_harbor_accepts(tmp_path: Path, harbor_wheel: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    (work / "notes.txt").write_text("Buy milk. Then eggs.\n")
    results = tmp_path / "results.jsonl"
    waza.capture(
        [
            {"id": "notes", "input": "Summarize the notes"},
            {"id": "turns", "input": ["Summarize the notes", "And again"]},
        ],
        waza.AcpAgent(command=(sys.executable, str(AGENTS / "sdk_acp_agent.py"))),
        [waza.Executable(argv=(str(executable(tmp_path / "grade.py", GRADER)),))],
        workspace=waza.Workspace(cwd=work),
        output=waza.Output(str(results)),
    )
    exported = tmp_path / "atif.jsonl"
    proc = run_waza("export", results, "--to", "atif", "-o", exported)
    assert proc.returncode == 0, proc.stderr

    checked = harbor_validate(harbor_wheel, exported)
    assert [c["session"] for c in checked] == ["notes", "turns"]
    assert {c["version"] for c in checked} == {"ATIF-v1.8"}

    docs = {d["session_id"]: d for d in read_jsonl(exported)}
    notes = docs["notes"]
    # absent rather than null (what waza keeps under extra is the agent's own data, as it sent it)
    assert b"null" not in orjson.dumps([{k: v for k, v in s.items() if k != "extra"} for s in notes["steps"]])
    first, *agent = notes["steps"]
    assert (first["source"], first["message"]) == ("user", "Summarize the notes")
    assert all(s["source"] == "agent" for s in agent)
    # the thought, the tool call with its result, and the final text are all there
    assert any("Task: Summarize the notes" in s.get("reasoning_content", "") for s in agent)
    calls = [c for s in agent for c in s.get("tool_calls", [])]
    assert [c["tool_call_id"] for c in calls] == ["write-1"]
    results_of_call = [r for s in agent for r in s.get("observation", {}).get("results", [])]
    assert results_of_call and results_of_call[0]["source_call_id"] == "write-1"
    assert "summary" in agent[-1]["message"].lower()
    assert all(s["timestamp"].endswith("Z") for s in notes["steps"][1:])
    # usage is the prompt's: final metrics, and the verdict kept beside
    assert notes["final_metrics"]["total_completion_tokens"] == 12
    assert notes["final_metrics"]["total_steps"] == len(notes["steps"])
    assert notes["extra"]["waza"]["status"] == "passed"
    # a conversation: both user turns, in order, each followed by the agent's answer
    users = [s["message"] for s in docs["turns"]["steps"] if s["source"] == "user"]
    assert users == ["Summarize the notes", "And again"]


def test_trials_export_one_document_per_trial(tmp_path: Path, harbor_wheel: Path) -> None:
    ours = tmp_path / "trials.jsonl"
    prompts = [{"id": "flaky", "input": orjson.dumps({"pass": [1, 3]}).decode(), "hint": "ok-answer"}]
    agent = waza.ExecAgent(command=(sys.executable, str(AGENTS / "trial_agent.py")))
    waza.trials(prompts, agent, [waza.Builtin(grader="hint")], k=3, output=waza.Output(str(ours)))
    exported = tmp_path / "atif.jsonl"
    proc = run_waza("export", ours, "--to", "atif", "-o", exported)
    assert proc.returncode == 0, proc.stderr

    checked = harbor_validate(harbor_wheel, exported)
    assert [c["session"] for c in checked] == ["flaky#1", "flaky#2", "flaky#3"]
    statuses = [d["extra"]["waza"]["status"] for d in read_jsonl(exported)]
    assert statuses == ["passed", "failed", "passed"]


def test_unknown_format_is_a_usage_error(tmp_path: Path) -> None:
    (tmp_path / "r.jsonl").write_text("")
    proc = run_waza("export", tmp_path / "r.jsonl", "--to", "harbor")
    assert proc.returncode == 2
    assert b"acp-harness, atif" in proc.stderr
