"""Files both ways with acp-harness's own CLI (@plaited/agent-eval-harness under Bun, installed from npm).

waza's results, exported with ``waza export --to acp-harness``, are read by acp-harness's summarize,
calibrate and compare; results and trials acp-harness wrote (capturing a fake headless CLI with a
real schema) are read by every waza command that reads results.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

import waza

from .conftest import compat_path, executable, read_jsonl, run_waza, write_jsonl

HARNESS = "@plaited/agent-eval-harness@0.12.2"
BUN = "bun@1"
AGENTS = Path(__file__).parent / "agents"
HEADLESS = Path(__file__).parent / "fixtures" / "headless"

GRADER = f"""#!{sys.executable}
import json, sys
req = json.load(sys.stdin)
want = req.get("hint") or req.get("expected") or ""
ok = want in req["output"]
print(json.dumps({{"pass": ok, "score": 1.0 if ok else 0.0, "reasoning": "found" if ok else "missing"}}))
"""


@pytest.fixture(scope="module")
def harness_bin() -> Path:
    """acp-harness's CLI and Bun, installed once into a cache directory; the directory of their commands."""
    if not shutil.which("node") or not shutil.which("npm"):
        pytest.skip("node and npm are needed to install acp-harness's CLI")
    cache = Path(os.environ.get("WAZA_TEST_CACHE", Path.home() / ".cache" / "waza-tests")) / "acp-harness-0.12.2"
    bin_dir = cache / "node_modules" / ".bin"
    if not (bin_dir / "agent-eval-harness").exists() or not (bin_dir / "bun").exists():
        cache.mkdir(parents=True, exist_ok=True)
        try:
            done = subprocess.run(
                ["npm", "install", "--prefix", str(cache), "--no-audit", "--no-fund", "--loglevel=error", HARNESS, BUN],
                capture_output=True,
                timeout=300,
                check=False,
            )
        except subprocess.TimeoutExpired:
            pytest.skip(f"npm install {HARNESS} timed out")
        if done.returncode != 0:
            pytest.skip(f"npm install {HARNESS} failed: {done.stderr.decode(errors='replace')[-300:]}")
    probe = subprocess.run([str(bin_dir / "bun"), "--version"], capture_output=True, check=False)
    if probe.returncode != 0:
        pytest.skip(f"bun from npm does not run here: {probe.stderr.decode(errors='replace')[-300:]}")
    return bin_dir


def harness(
    bin_dir: Path, *args: str | Path, cwd: Path, extra_path: Path | None = None, env: dict[str, str] | None = None
) -> bytes:
    path = f"{extra_path}{os.pathsep}" if extra_path else ""
    full_env = {**os.environ, "PATH": f"{path}{bin_dir}{os.pathsep}{os.environ['PATH']}", **(env or {})}
    done = subprocess.run(
        [str(bin_dir / "agent-eval-harness"), *map(str, args)],
        capture_output=True,
        cwd=cwd,
        env=full_env,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr.decode(errors="replace")[-2000:]
    return done.stdout


def waza_results(tmp: Path) -> Path:
    """A real capture: the Python SDK agent, a pass, a fail and a timeout (an error)."""
    work = tmp / "work"
    work.mkdir()
    (work / "notes.txt").write_text("Buy milk. Then eggs.\n")
    prompts = [
        {"id": "notes", "input": "Summarize the notes", "hint": "summary.md"},
        {"id": "other", "input": "Summarize again", "hint": "not said"},
        {"id": "slow", "input": "be slow", "timeout": 1},
    ]
    out = tmp / "waza.jsonl"
    grader = executable(tmp / "grade.py", GRADER)
    # Made through the API in-process (an ACP agent, as `waza capture` runs it by default): what is
    # tested is the file, read by acp-harness and by waza's commands.
    waza.capture(
        prompts,
        waza.AcpAgent(command=(sys.executable, str(AGENTS / "sdk_acp_agent.py"))),
        [waza.Executable(argv=(str(grader),))],
        workspace=waza.Workspace(cwd=work),
        output=waza.Output(str(out)),
    )
    return out


def test_waza_results_read_by_acp_harness(tmp_path: Path, harness_bin: Path) -> None:
    ours = waza_results(tmp_path)
    exported = tmp_path / "exported.jsonl"
    proc = run_waza("export", ours, "--to", "acp-harness", "-o", exported)
    assert proc.returncode == 0, proc.stderr
    lines = {r["id"]: r for r in read_jsonl(exported.read_bytes())}
    # exactly acp-harness's shapes: no null, no step type it lacks, a fail for the errored prompt
    assert b"null" not in exported.read_bytes()
    assert {s["type"] for r in lines.values() for s in r["trajectory"]} <= {"message", "thought", "tool_call", "plan"}
    assert lines["slow"]["score"]["pass"] is False and lines["slow"]["errors"] == ["agent timed out after 1s"]
    assert lines["notes"]["timing"]["inputTokens"] == 3

    summary = [orjson.loads(x) for x in harness(harness_bin, "summarize", exported, cwd=tmp_path).splitlines()]
    assert [s["id"] for s in summary] == ["notes", "other", "slow"]
    assert summary[0]["toolCalls"] == ["Write summary.md"]
    calibration = harness(harness_bin, "calibrate", exported, cwd=tmp_path).decode()
    assert "Samples: 2" in calibration and "## Sample 1: other" in calibration  # the fail and the error
    shutil.copyfile(exported, tmp_path / "again.jsonl")
    report = orjson.loads(harness(harness_bin, "compare", exported, tmp_path / "again.jsonl", cwd=tmp_path))
    quality = report["quality"]["exported"]
    ours_summary = run_waza("compare", ours, ours, "--label", "a", "--label", "b")
    assert ours_summary.returncode == 0, ours_summary.stderr
    assert (quality["passCount"], quality["failCount"]) == (1, 2)  # waza: 1 passed, 1 failed, 1 error
    assert quality["passRate"] == pytest.approx(1 / 3)


def test_waza_trials_read_by_acp_harness(tmp_path: Path, harness_bin: Path) -> None:
    agent = [sys.executable, str(AGENTS / "trial_agent.py")]
    prompts = [
        {"id": "flaky", "input": orjson.dumps({"pass": [1, 3]}).decode(), "hint": "ok-answer"},
        {"id": "always", "input": orjson.dumps({"pass": [1, 2, 3]}).decode(), "hint": "ok-answer"},
    ]
    ours = tmp_path / "trials.jsonl"
    waza.trials(prompts, waza.ExecAgent(command=tuple(agent)), [waza.Builtin(grader="hint")], k=3, output=waza.Output(str(ours)))
    proc = run_waza("export", ours, "--to", "acp-harness")
    assert proc.returncode == 0, proc.stderr
    exported = {r["id"]: r for r in read_jsonl(proc.stdout)}
    flaky = exported["flaky"]
    assert [t["trialNum"] for t in flaky["trials"]] == [1, 2, 3] and [t["pass"] for t in flaky["trials"]] == [True, False, True]
    assert flaky["passAtK"] == 1.0 and flaky["passExpK"] == 0.0 and flaky["k"] == 3  # n=3, c=2, k=3
    assert exported["always"]["passExpK"] == 1.0
    (tmp_path / "a.jsonl").write_bytes(proc.stdout)
    (tmp_path / "b.jsonl").write_bytes(proc.stdout)
    report = orjson.loads(harness(harness_bin, "compare", "a.jsonl", "b.jsonl", cwd=tmp_path))
    assert report["capability"]["a"]["avgPassAtK"] == 1.0


def harness_run(tmp: Path, bin_dir: Path, command: str, *args: str, grader: Path | None = None) -> Path:
    """acp-harness capturing (or trialling) a fake `claude` CLI through its own claude schema (reference data)."""
    fake = tmp / "fake-bin"
    fake.mkdir(exist_ok=True)
    executable(fake / "claude", f'#!/bin/sh\nexec "{sys.executable}" "{HEADLESS / "fake_cli.py"}" "$@"\n')
    grader = grader or executable(tmp / "grade.py", GRADER)
    prompts = write_jsonl(
        tmp / "hp.jsonl",
        [
            {"id": "files", "input": "list files", "hint": "a.txt has 3 lines"},
            {"id": "two", "input": ["one", "two"], "hint": "not said"},
        ],
    )
    out = tmp / f"harness-{command}.jsonl"
    harness(
        bin_dir,
        command,
        prompts,
        "-s",
        compat_path("acp-harness-schemas/claude-headless.json"),
        "-g",
        grader,
        "-o",
        out,
        *args,
        cwd=tmp,
        extra_path=fake,
        env={"FAKE_CLI_FIXTURE": str(HEADLESS / "claude-code.jsonl")},
    )
    return out


def ok(proc: subprocess.CompletedProcess[bytes]) -> bytes:
    assert proc.returncode == 0, proc.stderr.decode(errors="replace")
    return proc.stdout


def test_acp_harness_results_read_by_every_waza_command(tmp_path: Path, harness_bin: Path) -> None:
    theirs = harness_run(tmp_path, harness_bin, "capture")
    raw = [orjson.loads(x) for x in theirs.read_bytes().splitlines()]
    assert all("stepId" not in s for r in raw for s in r["trajectory"])  # what makes it theirs

    summaries = {s["id"]: s for s in read_jsonl(ok(run_waza("summarize", theirs)))}
    assert (summaries["files"]["status"], summaries["files"]["pass"]) == ("passed", True)
    assert summaries["two"]["status"] == "failed"
    assert "files" in ok(run_waza("report", theirs)).decode()
    ok(run_waza("compare", theirs, theirs, "--label", "x", "--label", "y"))
    sheet = ok(run_waza("calibrate", theirs, "--sample", "2", "--seed", "1"))
    assert {r["id"] for r in read_jsonl(sheet)} == {"files", "two"}
    prompts = write_jsonl(tmp_path / "again.jsonl", [{"id": "files", "input": "list files", "hint": "a.txt has 3 lines"}])
    [replayed] = read_jsonl(ok(run_waza("capture", prompts, "--adapter", "replay", "--from", theirs, "-g", "builtin:hint")))
    assert replayed["status"] == "passed" and replayed["output"].endswith("a.txt has 3 lines.")
    # and back: waza's export of their file is read by them again
    back = tmp_path / "back.jsonl"
    ok(run_waza("export", theirs, "--to", "acp-harness", "-o", back))
    harness(harness_bin, "summarize", back, cwd=tmp_path)


def test_acp_harness_trials_read_by_waza(tmp_path: Path, harness_bin: Path) -> None:
    theirs = harness_run(tmp_path, harness_bin, "trials", "-k", "2")
    files = [r for r in read_jsonl(ok(run_waza("summarize", theirs))) if r["id"] == "files"]
    assert [(r["trial"], r["status"]) for r in files] == [(1, "passed"), (2, "passed")]
    assert "files" in ok(run_waza("report", theirs)).decode()
    ok(run_waza("compare", theirs, theirs, "--label", "x", "--label", "y"))


def test_iterative_turns_reach_the_cli_as_acp_harness_sends_them(tmp_path: Path, harness_bin: Path) -> None:
    """The same two-turn prompt through acp-harness's gemini schema, under both tools: same argv."""
    schema = compat_path("acp-harness-schemas/gemini-headless.json")
    fake = tmp_path / "fake-bin"
    fake.mkdir()
    executable(fake / "gemini", f'#!/bin/sh\nexec "{sys.executable}" "{HEADLESS / "fake_cli.py"}" "$@"\n')
    prompts = write_jsonl(tmp_path / "p.jsonl", [{"id": "two", "input": ["How many files?", "And lines?"]}])
    env = {"FAKE_CLI_FIXTURE": str(HEADLESS / "gemini-cli.jsonl")}
    harness(
        harness_bin,
        "capture",
        prompts,
        "-s",
        schema,
        "-o",
        tmp_path / "theirs.jsonl",
        cwd=tmp_path,
        extra_path=fake,
        env={**env, "FAKE_CLI_LOG": str(tmp_path / "theirs.log")},
    )
    ok(
        run_waza(
            "capture",
            prompts,
            "--adapter",
            "headless",
            "--schema",
            schema,
            "-o",
            tmp_path / "ours.jsonl",
            cwd=tmp_path,
            env={**env, "FAKE_CLI_LOG": str(tmp_path / "ours.log"), "PATH": f"{fake}{os.pathsep}{os.environ['PATH']}"},
        )
    )
    theirs = [orjson.loads(x)["argv"] for x in (tmp_path / "theirs.log").read_bytes().splitlines()]
    ours = [orjson.loads(x)["argv"] for x in (tmp_path / "ours.log").read_bytes().splitlines()]
    assert [a[:-1] for a in ours] == [a[:-1] for a in theirs] and ours[0][-1] == theirs[0][-1] == "How many files?"
    # the history's shape is the same; the answer in it is each tool's own output of turn 1
    for second in (ours[1][-1], theirs[1][-1]):
        assert second.startswith("User: How many files?\nAssistant: ") and second.endswith("\n\nUser: And lines?")


GRADE_TS = """
type Req = { output: string; hint?: string; expected?: string }
export const grade = async ({ output, hint }: Req): Promise<{ pass: boolean; score: number; reasoning: string }> => {
  const pass: boolean = output.includes(hint ?? "")
  return { pass, score: pass ? 1 : 0, reasoning: pass ? "has the hint" : "hint missing" }
}
"""


def test_typescript_grader_module_runs_under_bun_as_acp_harness_runs_it(tmp_path: Path, harness_bin: Path) -> None:
    module = tmp_path / "grade.ts"
    module.write_text(GRADE_TS)
    prompts = write_jsonl(
        tmp_path / "p.jsonl",
        [{"id": "yes", "input": "say yes", "hint": "yes"}, {"id": "no", "input": "say no", "hint": "absent"}],
    )
    agent = [sys.executable, "-c", "import sys; print(sys.stdin.read())"]
    env = {"PATH": f"{harness_bin}{os.pathsep}{os.environ['PATH']}"}
    proc = run_waza("capture", prompts, "--adapter", "exec", "-g", module, "--", *agent, env=env)
    results = {r["id"]: r for r in read_jsonl(ok(proc))}
    assert results["yes"]["status"] == "passed" and results["yes"]["grades"][0]["reasoning"] == "has the hint"
    assert results["no"]["status"] == "failed" and results["no"]["grades"][0]["name"] == "grade.ts"
    # the same module under acp-harness's own capture (its fake claude CLI) gives the same verdict
    theirs = harness_run(tmp_path, harness_bin, "capture", grader=module)
    verdicts = {r["id"]: r["score"] for r in read_jsonl(theirs.read_bytes())}
    assert verdicts["files"] == {"pass": True, "score": 1, "reasoning": "has the hint"}
    assert verdicts["two"]["pass"] is False


def test_grader_module_without_a_runtime_names_what_to_install(tmp_path: Path) -> None:
    module = tmp_path / "grade.ts"
    module.write_text(GRADE_TS)
    prompts = write_jsonl(tmp_path / "p.jsonl", [{"id": "a", "input": "x"}])
    proc = run_waza(
        "capture",
        prompts,
        "--adapter",
        "exec",
        "-g",
        module,
        "--",
        sys.executable,
        "-c",
        "print(1)",
        env={"PATH": str(tmp_path / "empty")},
    )
    assert proc.returncode == 2
    message = proc.stderr.decode()
    assert "TypeScript module" in message and "Bun" in message and "tsx" in message and "Traceback" not in message


def test_javascript_grader_module_runs_under_node(tmp_path: Path) -> None:
    if not shutil.which("node"):
        pytest.skip("node is needed for a JavaScript grader module")
    module = tmp_path / "grade.mjs"
    module.write_text("export const grade = async ({ output }) => ({ pass: output.includes('ok'), score: 1 })\n")
    node_dir = Path(shutil.which("node")).parent  # node only: no bun on this PATH
    proc = run_waza(
        "capture",
        write_jsonl(tmp_path / "p.jsonl", [{"id": "a", "input": "ok"}]),
        "--adapter",
        "exec",
        "-g",
        module,
        "--",
        sys.executable,
        "-c",
        "import sys; print(sys.stdin.read())",
        env={"PATH": f"{node_dir}{os.pathsep}/usr/bin{os.pathsep}/bin"},
    )
    [result] = read_jsonl(ok(proc))
    assert result["status"] == "passed" and result["grades"][0]["score"] == 1
