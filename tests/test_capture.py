"""End-to-end tests of ``waza capture`` and ``waza grade`` with the exec adapter and real graders."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

import waza
from waza.protocol import schemas

from .conftest import executable, read_jsonl, run_waza, write_jsonl

AGENT = [sys.executable, str(Path(__file__).parent / "agents" / "exec_agent.py")]
PY = sys.executable


def valid(rows: list[dict]) -> list[dict]:
    for row in rows:
        assert schemas.errors("CaptureResult", row) == [], row["id"]
    return rows


def captured(prompts, graders=(), *, events: bool = False, **kw) -> list[dict]:
    """Engine behaviour through the API in-process: the exec test agent's records as JSON dicts, in prompt order.

    The CLI's own parsing, exit codes and summary lines are checked by the subprocess tests in this file."""
    agent = waza.ExecAgent(command=tuple(AGENT), events=events)
    if isinstance(prompts, Path):
        prompts = read_jsonl(prompts)
    order = [p["id"] for p in prompts]
    rows = [r.to_dict() for r in waza.capture(prompts, agent, list(graders), **kw)]
    return valid(sorted(rows, key=lambda r: order.index(r["id"])))


@pytest.fixture
def graders(tmp_path: Path) -> dict[str, Path]:
    """Graders in three languages that pass when the output contains the hint, and broken ones."""
    g = tmp_path / "graders"
    g.mkdir()
    return {
        "python": executable(
            g / "contains.py",
            f"""#!{PY}
import json, sys
req = json.load(sys.stdin)
ok = (req.get("hint") or "").lower() in req["output"].lower()
print(json.dumps({{"pass": ok, "score": 1.0 if ok else 0.0, "reasoning": "py"}}))
""",
        ),
        "sh": executable(
            g / "contains.sh",
            """#!/bin/sh
req=$(cat)
out=$(printf '%s' "$req" | jq -r '.output | ascii_downcase')
hint=$(printf '%s' "$req" | jq -r '(.hint // "") | ascii_downcase')
case "$out" in
  *"$hint"*) echo '{"pass": true, "score": 1, "reasoning": "sh"}' ;;
  *) echo '{"pass": false, "score": 0, "reasoning": "sh"}' ;;
esac
""",
        ),
        "node": executable(
            g / "contains.js",
            """#!/usr/bin/env node
let data = "";
process.stdin.on("data", (c) => (data += c));
process.stdin.on("end", () => {
  const req = JSON.parse(data);
  const ok = req.output.toLowerCase().includes((req.hint || "").toLowerCase());
  process.stdout.write(JSON.stringify({ passed: ok, score: ok ? 1 : 0, message: "node" }));
});
""",
        ),
        "crash": executable(g / "crash.sh", "#!/bin/sh\necho 'grader blew up' >&2\nexit 3\n"),
        "hang": executable(g / "hang.sh", "#!/bin/sh\nsleep 30\n"),
        "garbage": executable(g / "garbage.sh", "#!/bin/sh\necho 'this is not json'\n"),
        "liar": executable(g / "liar.sh", '#!/bin/sh\necho \'{"pass": true, "score": 1.5}\'\n'),
        "cwd": executable(
            g / "cwd.py",
            f"""#!{PY}
import json, os, sys
req = json.load(sys.stdin)
print(json.dumps({{"pass": True, "score": 1, "reasoning": os.getcwd() + "|" + str(req.get("cwd"))}}))
""",
        ),
    }


@pytest.fixture
def prompts(tmp_path: Path) -> Path:
    return write_jsonl(
        tmp_path / "prompts.jsonl",
        [
            {"id": "good", "input": "say hello", "hint": "hello"},
            {"id": "bad", "input": "say goodbye", "expected": "zebra"},
        ],
    )


@pytest.mark.skipif(not (os.path.exists("/usr/bin/jq") and os.path.exists("/usr/bin/node")), reason="needs jq and node")
def test_graders_in_python_sh_and_node_pass_and_fail(tmp_path, prompts, graders):
    out = tmp_path / "results.jsonl"
    proc = run_waza(
        "capture",
        prompts,
        "--adapter",
        "exec",
        "--grader",
        graders["python"],
        "--grader",
        graders["sh"],
        "--grader",
        graders["node"],
        "-o",
        out,
        "--",
        *AGENT,
    )
    assert proc.returncode == 0, proc.stderr
    rows = {r["id"]: r for r in valid(read_jsonl(out))}
    assert rows["good"]["output"] == "echo: say hello"
    assert [g["status"] for g in rows["good"]["grades"]] == ["passed"] * 3
    assert [g["status"] for g in rows["bad"]["grades"]] == ["failed"] * 3
    assert rows["bad"]["hint"] == "zebra"  # `expected` accepted as the older name of hint
    assert rows["good"]["score"] == {"status": "passed", "pass": True, "score": 1.0, "reasoning": "all graders passed"}
    assert rows["bad"]["status"] == "failed" and rows["bad"]["score"]["pass"] is False
    assert [g["reasoning"] for g in rows["good"]["grades"]] == ["py", "sh", "node"]  # dialects normalised
    assert b"2 results: 1 passed, 1 failed" in proc.stderr


def test_python_callable_graders_sync_and_async(tmp_path, prompts):
    module = tmp_path / "my_graders.py"
    module.write_text(
        """
import asyncio

def sync_grade(req):
    ok = req["hint"] in req["output"]
    return {"pass": ok, "score": float(ok), "reasoning": "sync"}

async def async_grade(req):
    await asyncio.sleep(0)
    return {"passed": True, "score": 0.25, "message": "async " + req["id"]}
"""
    )
    graders = [waza.PythonGrader(fn=f"{module}:sync_grade", weight=3), waza.PythonGrader(fn=f"{module}:async_grade")]
    rows = {r["id"]: r for r in captured(prompts, graders)}
    good = rows["good"]
    assert [g["name"] for g in good["grades"]] == ["sync_grade", "async_grade"]
    assert good["grades"][1]["reasoning"] == "async good"
    assert good["score"]["score"] == pytest.approx((3 * 1.0 + 1 * 0.25) / 4)  # weighted mean
    assert rows["bad"]["grades"][0]["status"] == "failed"


def test_broken_graders_are_errors_and_keep_the_capture(tmp_path, prompts, graders):
    # The hung grader has a short budget of its own; the others the run's generous one.
    specs = [
        waza.Executable(argv=(str(graders[n]),), timeout=1 if n == "hang" else None)
        for n in ("crash", "hang", "garbage", "liar", "python")
    ]
    # Every prompt still has its result with output and trajectory (the CLI's exit 1 for errored
    # results is checked by test_agent_crash_and_timeout_are_errors_and_the_run_goes_on).
    rows = captured(prompts, specs, events=True, timeouts=waza.Timeouts(grader=60))
    assert len(rows) == 2
    for row in rows:
        grades = {g["name"]: g for g in row["grades"]}
        assert grades["crash.sh"]["status"] == "error" and "code 3" in grades["crash.sh"]["error"]
        assert "grader blew up" in grades["crash.sh"]["details"]["stderr"]
        assert "timed out" in grades["hang.sh"]["error"]
        assert "not one JSON document" in grades["garbage.sh"]["error"]
        assert "[0, 1]" in grades["liar.sh"]["error"]
        broken = ("crash.sh", "hang.sh", "garbage.sh", "liar.sh")
        assert all(grades[n]["pass"] is None and grades[n]["score"] is None for n in broken)
        assert grades["contains.py"]["status"] in ("passed", "failed")  # the healthy grader still ran
        assert row["status"] == "error" and row["score"]["status"] == "error"
        assert row["trajectory"], "the trajectory is kept when graders fail"


def test_events_mode_builds_the_trajectory(tmp_path):
    prompts = write_jsonl(tmp_path / "p.jsonl", [{"id": "ev", "input": "emit events"}])
    (row,) = captured(prompts, events=True)
    steps = row["trajectory"]
    assert [s["type"] for s in steps] == ["message", "thought", "tool_call", "plan", "message"]
    assert steps[0]["role"] == "user"
    assert steps[1]["content"] == "thinking hard"  # chunks joined exactly
    tool = steps[2]
    assert tool["toolCallId"] == "t1" and tool["name"] == "bash" and tool["status"] == "failed"
    assert tool["input"] == {"cmd": "ls"} and tool["output"] == "no such dir"
    assert tool["duration"] == tool["end"] - tool["start"]
    assert steps[4]["content"] == "done: events" and row["output"] == "done: events"
    assert row["toolErrors"] is True
    assert row["usage"] == {"inputTokens": 11, "outputTokens": 7}
    assert row["timing"]["inputTokens"] == 11
    assert [s["stepId"] for s in steps] == ["s1", "s2", "s3", "s4", "s5"]


def test_multi_turn_input_runs_each_turn_with_history(tmp_path):
    prompts = write_jsonl(tmp_path / "p.jsonl", [{"id": "mt", "input": ["my name is Ada", "what is my name?"], "hint": "Ada"}])
    (row,) = captured(prompts, [waza.Builtin(grader="hint")])
    assert row["output"] == "your name is Ada"
    users = [s for s in row["trajectory"] if s.get("role") == "user"]
    assert [u["turn"] for u in users] == [0, 1]
    assert row["status"] == "passed"


def test_agent_crash_and_timeout_are_errors_and_the_run_goes_on(tmp_path):
    prompts = write_jsonl(
        tmp_path / "p.jsonl",
        [
            {"id": "crash", "input": "please crash"},
            {"id": "hang", "input": "please hang", "timeout": 1},
            {"id": "fine", "input": "all good"},
        ],
    )
    proc = run_waza("capture", prompts, "--adapter", "exec", "--grader", "builtin:hint", "--", *AGENT)
    assert proc.returncode == 1
    rows = {r["id"]: r for r in valid(read_jsonl(proc.stdout))}
    assert rows["crash"]["status"] == "error" and rows["crash"]["exit"]["code"] == 3
    assert rows["crash"]["output"] == "partial answer before the crash"
    assert rows["hang"]["status"] == "error" and rows["hang"]["exit"]["timedOut"] is True
    assert rows["hang"]["output"] == "started"
    assert rows["fine"]["errors"] == []
    # the hung agent's process group was killed
    ps = subprocess.run(["pgrep", "-f", "please hang"], capture_output=True)
    assert ps.stdout == b""


def test_chatty_agent_stderr_is_drained_and_tail_kept(tmp_path):
    prompts = write_jsonl(tmp_path / "p.jsonl", [{"id": "noisy", "input": "lots of stderr"}])
    (row,) = captured(prompts)
    assert row["output"] == "echo: lots of stderr"
    assert 0 < len(row["stderr"]) <= 8192 and set(row["stderr"]) == {"x"}


def test_resume_repairs_a_torn_line_and_runs_only_what_is_missing(tmp_path):
    prompts = write_jsonl(tmp_path / "p.jsonl", [{"id": f"p{i}", "input": f"prompt {i}"} for i in range(4)])
    out = tmp_path / "out.jsonl"
    first = run_waza("capture", prompts, "--adapter", "exec", "-o", out, "--", *AGENT)
    assert first.returncode == 0
    lines = out.read_bytes().splitlines(keepends=True)
    # As if killed mid-write: two whole lines and half of the third.
    out.write_bytes(lines[0] + lines[1] + lines[2][:25])
    again = run_waza("capture", prompts, "--adapter", "exec", "-o", out, "--resume", "--", *AGENT)
    assert again.returncode == 0, again.stderr
    assert b"repaired" in again.stderr and b"2 already done" in again.stderr
    final = out.read_bytes().splitlines(keepends=True)
    assert final[:2] == lines[:2]  # complete records untouched
    assert sorted(r["id"] for r in read_jsonl(out)) == ["p0", "p1", "p2", "p3"]


def test_agent_flags_pass_through(tmp_path):
    agent = executable(tmp_path / "argv.py", f"#!{PY}\nimport sys, json\nprint(json.dumps(sys.argv[1:]))\n")
    prompts = write_jsonl(tmp_path / "p.jsonl", [{"id": "a", "input": "hi"}])
    # An option waza does not know, before --, is a mistake (it would be lost on the agent)...
    proc = run_waza("capture", prompts, "--adapter", "exec", agent, "--its-flag", "x", "--no-progress")
    assert proc.returncode == 2 and b"no such option --its-flag" in proc.stderr
    # ...and everything after -- goes verbatim to the agent, even flags waza has.
    proc = run_waza("capture", prompts, "--adapter", "exec", "--", agent, "-o", "--timeout", "{prompt}")
    assert proc.returncode == 0, proc.stderr
    assert orjson.loads(read_jsonl(proc.stdout)[0]["output"]) == ["-o", "--timeout", "hi"]


def test_workspace_dir_gives_each_prompt_a_fresh_directory(tmp_path, prompts, graders):
    ws = tmp_path / "ws"
    rows = captured(prompts, [waza.Executable(argv=(str(graders["cwd"]),))], workspace=waza.Workspace(root=ws))
    assert len(rows) == 2
    for row in rows:
        expected = str((ws / row["id"]).resolve())
        assert row["cwd"] == expected
        grader_cwd, request_cwd = row["grades"][0]["reasoning"].split("|")
        assert grader_cwd == expected and request_cwd == expected


def test_fail_under_gate(tmp_path, prompts):
    proc = run_waza(
        "capture", prompts, "--adapter", "exec", "--grader", "builtin:hint", "--fail-under", "pass_rate=0.75", "--", *AGENT
    )
    assert proc.returncode == 1
    assert b"pass_rate 0.500 < 0.75" in proc.stderr
    proc = run_waza(
        "capture", prompts, "--adapter", "exec", "--grader", "builtin:hint", "--fail-under", "pass_rate=0.5", "--", *AGENT
    )
    assert proc.returncode == 0


def test_grade_regrades_stdin_to_stdout(tmp_path, prompts, graders):
    captured = run_waza("capture", prompts, "--adapter", "exec", "--grader", "builtin:hint", "--", *AGENT)
    regraded = run_waza("grade", "-", "--grader", graders["python"], "-j", "2", input=captured.stdout)
    assert regraded.returncode == 0, regraded.stderr
    rows = {r["id"]: r for r in valid(read_jsonl(regraded.stdout))}
    assert set(rows) == {"good", "bad"}
    assert [g["name"] for g in rows["good"]["grades"]] == ["contains.py"]  # earlier grades replaced
    assert rows["good"]["trajectory"] == read_jsonl(captured.stdout)[0]["trajectory"]


def test_demo_runs_with_no_network(tmp_path):
    proc = run_waza("demo", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    rows = {r["id"]: r for r in valid(read_jsonl(proc.stdout))}
    assert rows["boiling-point"]["status"] == "failed"
    assert all(rows[i]["status"] == "passed" for i in ("arithmetic", "capital", "memory"))


def test_prompt_timeout_units_acp_harness_ms_or_refused_when_ambiguous(tmp_path):
    """acp-harness prompt files give timeout in ms: read with --prompt-timeout-unit ms; 1000+ in auto is refused."""
    agent = [sys.executable, "-c", "import sys, time; time.sleep(30 if 'wait' in sys.stdin.read() else 0); print('ok')"]
    prompts = write_jsonl(tmp_path / "p.jsonl", [{"id": "a", "input": "x"}, {"id": "slow", "input": "wait", "timeout": 1500}])
    refused = run_waza("capture", prompts, "--adapter", "exec", "--", *agent)
    assert refused.returncode == 2 and refused.stdout == b""
    message = refused.stderr.decode()
    assert "p.jsonl:2: field 'timeout'" in message and "--prompt-timeout-unit" in message
    done = run_waza("capture", prompts, "--adapter", "exec", "--timeout", "60", "--prompt-timeout-unit", "ms", "--", *agent)
    results = {r["id"]: r for r in read_jsonl(done.stdout)}
    assert results["slow"]["exit"]["timedOut"] is True and results["a"]["output"] == "ok"
    bad = run_waza("capture", prompts, "--adapter", "exec", "--prompt-timeout-unit", "min", "--", *agent)
    assert bad.returncode == 2 and "--prompt-timeout-unit takes auto, s or ms" in bad.stderr.decode()


def test_a_grader_process_reads_the_whole_documented_request(tmp_path, prompts):
    """What a one-shot grader reads on stdin is a GraderRequest carrying the result's own fields."""
    seen = tmp_path / "requests"
    seen.mkdir()
    grader = executable(
        tmp_path / "keep.py",
        f"""#!{PY}
import json, sys
req = json.load(sys.stdin)
open({str(seen)!r} + "/" + req["id"] + ".json", "w").write(json.dumps(req))
print(json.dumps({{"pass": True, "score": 1}}))
""",
    )
    rows = {r["id"]: r for r in captured(prompts, [waza.Executable(argv=(str(grader),))])}
    for rid, row in rows.items():
        request = orjson.loads((seen / f"{rid}.json").read_bytes())
        assert schemas.errors("GraderRequest", request) == [], rid
        for key in ("id", "input", "output", "hint", "reference", "trajectory", "metadata", "timing", "exit", "errors", "trial"):
            assert request[key] == row.get(key), (rid, key)
        assert request["expected"] == row.get("hint")
        assert request["config"] == {}
