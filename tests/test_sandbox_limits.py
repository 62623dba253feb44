"""Sandbox limits: hostile agents that allocate too much memory, fork-bomb, spin, or fill the disk each end
as their own prompt's error naming the limit, and the run goes on."""

from __future__ import annotations

import json
import os
import sys
import textwrap
from pathlib import Path

import pytest

import waza
from waza.adapters.sandbox.bwrap import _probe
from waza.adapters.sandbox.limits import mechanism

from .conftest import run_waza

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux") or _probe() is not None,
    reason=f"no bubblewrap sandbox here ({_probe() if sys.platform.startswith('linux') else 'not Linux'}); .ci/run installs bubblewrap",
)

#: Without a control group, the processes limit is RLIMIT_NPROC, which binds no root process.
needs_pids_bound = pytest.mark.skipif(
    not mechanism() and os.getuid() == 0, reason="no control group may be made here and RLIMIT_NPROC does not bind root"
)

HOSTILE = {
    "memory": """
        hoard = []
        for _ in range(64):
            hoard.append(bytearray(32 << 20))  # 2 GB in all, touched page by page
        print("kept", len(hoard))
    """,
    "forks": """
        import subprocess
        children = []
        for _ in range(200):
            try:
                children.append(subprocess.Popen(["sleep", "30"]))
            except OSError as exc:
                print("fork refused:", exc, file=sys.stderr)
                break
        for c in children:
            c.kill()
        print("started", len(children))
    """,
    "spin": """
        while True:
            pass
    """,
    "fill": """
        with open("filler.bin", "wb") as f:
            for _ in range(1000):
                f.write(b"x" * (1 << 20))  # 1 GB, unless stopped
        print("filled")
    """,
    "polite": """
        print("hello from", os.getcwd())
    """,
}


def _capture(tmp_path: Path, names: list[str], limits: waza.SandboxLimits) -> dict[str, waza.CaptureResult]:
    folder = tmp_path / "agent"
    folder.mkdir()
    script = folder / "agent.py"
    bodies = "".join(f"if prompt == {n!r}:\n{textwrap.indent(textwrap.dedent(HOSTILE[n]), '    ')}" for n in names)
    script.write_text("import os, sys\nprompt = sys.stdin.read().strip()\n" + bodies)
    results = waza.capture(
        [{"id": n, "input": n} for n in names],
        waza.ExecAgent(command=(sys.executable, str(script)), sandbox=waza.Sandbox(limits=limits)),
        workspace=waza.Workspace(fresh=True),
        timeouts=waza.Timeouts(prompt=120),
    )
    return {r.id: r for r in results}


@pytest.mark.skipif(not mechanism(), reason="no control group may be made here: memory is an address-space limit only")
def test_an_agent_over_its_memory_limit_is_that_prompts_error_and_the_run_goes_on(tmp_path: Path) -> None:
    got = _capture(tmp_path, ["memory", "polite"], waza.SandboxLimits(memory_mb=200))
    assert got["memory"].status == "error"
    assert any("sandbox memory limit (Sandbox.limits.memory_mb = 200)" in e for e in got["memory"].errors), got["memory"].errors
    assert got["polite"].status != "error" and "hello from" in got["polite"].output


@needs_pids_bound
def test_a_fork_bomb_stops_at_the_processes_limit(tmp_path: Path) -> None:
    got = _capture(tmp_path, ["forks", "polite"], waza.SandboxLimits(pids=24))
    assert got["forks"].status == "error"
    assert any("sandbox processes limit (Sandbox.limits.pids = 24)" in e for e in got["forks"].errors), got["forks"].errors
    started = int(got["forks"].output.split()[-1])
    assert started < 24  # every child past the limit was refused
    assert got["polite"].status != "error"


def test_a_spinning_agent_is_stopped_at_its_cpu_time(tmp_path: Path) -> None:
    got = _capture(tmp_path, ["spin", "polite"], waza.SandboxLimits(cpu_seconds=1))
    assert got["spin"].status == "error" and not got["spin"].exit.timed_out  # type: ignore[union-attr]
    assert any("sandbox CPU time limit (Sandbox.limits.cpu_seconds = 1)" in e for e in got["spin"].errors), got["spin"].errors
    assert got["polite"].status != "error"


def test_an_agent_filling_the_disk_stops_at_the_file_size_limit(tmp_path: Path) -> None:
    got = _capture(tmp_path, ["fill", "polite"], waza.SandboxLimits(disk_mb=8))
    fill = got["fill"]
    assert fill.status == "error" and "filled" not in fill.output
    assert any("sandbox disk limit (Sandbox.limits.disk_mb = 8)" in e for e in fill.errors), fill.errors
    assert got["polite"].status != "error"


def test_the_cli_maps_the_flags_and_says_the_mechanism_once(tmp_path: Path) -> None:
    agent = tmp_path / "agent" / "agent.py"
    agent.parent.mkdir()
    agent.write_text("import sys\nsys.stdin.read()\nprint('ok')\n")
    prompts = tmp_path / "prompts.jsonl"
    prompts.write_text('{"id": "a", "input": "x"}\n{"id": "b", "input": "y"}\n')
    out = tmp_path / "results.jsonl"
    flags = ["--sandbox-memory", "256", "--sandbox-pids", "64", "--sandbox-cpu-time", "30", "--sandbox-disk", "64"]
    done = run_waza(
        "capture",
        prompts,
        "-o",
        out,
        "--workspace-dir",
        tmp_path / "ws",
        "--adapter",
        "exec",
        "--sandbox",
        "bwrap",
        *flags,
        "--",
        sys.executable,
        agent,
    )
    stderr = done.stderr.decode()
    assert done.returncode == 0, stderr
    assert stderr.count("waza: sandbox limits:") == 1
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["output"] for r in rows] == ["ok", "ok"] and not any(r["errors"] for r in rows)
    refused = run_waza("capture", prompts, "-o", out, "--sandbox-pids", "64", "--", sys.executable, agent)
    assert refused.returncode == 2 and "--sandbox-pids needs --sandbox bwrap" in refused.stderr.decode()
    bad = run_waza(
        "capture",
        prompts,
        "-o",
        out,
        "--adapter",
        "exec",
        "--sandbox",
        "bwrap",
        "--sandbox-pids",
        "2",
        "--",
        sys.executable,
        agent,
    )
    assert bad.returncode == 2 and "--sandbox-pids" in bad.stderr.decode() and "at least 4" in bad.stderr.decode()
