"""``--executor ray`` leaves nothing behind and loses nothing a local run writes (real embedded Ray, no mocks).

What a local run writes besides its results (the agent's raw log, the human graders' review queue) comes
back from the tasks to the driver's paths; Ray's own lines stay off stderr unless -v; the embedded
instance's processes are gone soon after the driver, however it ends (SIGKILL included); fresh
workspaces are removed on the node. Skipped when the ``ray`` extra is not installed.
"""

from __future__ import annotations

import re
import secrets
import signal
import socket
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import orjson
import pytest

from .conftest import ROOT, read_jsonl, run_waza, write_jsonl
from .ray_cluster import Cluster
from .test_ray import descendants

pytest.importorskip("ray", reason="the ray extra is not installed (pip install '.[ray]' in the checkout)")

ACP_AGENT = [sys.executable, str(Path(__file__).parent / "agents" / "scripted_acp_agent.py")]
RAY_AGENT = [sys.executable, str(Path(__file__).parent / "agents" / "ray_agent.py")]


def messages_per_prompt(raw: Path) -> Counter[tuple[str, str]]:
    """The prompt turns' messages in a raw log, by prompt (a Ray task starts its own agent: more initialize lines)."""
    turns = ("session/prompt", "session/update")
    return Counter(
        (line["promptId"], line["message"]["method"]) for line in read_jsonl(raw) if line["message"].get("method") in turns
    )


def test_raw_log_review_queue_and_stderr_come_back_as_from_a_local_run(tmp_path):
    rows = [{"id": f"p{i}", "input": f"say answer {i}\nflood 1"} for i in range(4)]
    prompts = write_jsonl(tmp_path / "p.jsonl", rows)
    runs: dict[str, dict[str, Any]] = {}
    for name, extra in [("local", ["-j", "2"]), ("ray", ["-j", "2", "--executor", "ray"])]:
        here = tmp_path / name  # the run's current directory: a relative review queue lands here
        here.mkdir()
        args = ["capture", prompts, "--raw-log", "raw.jsonl", "-g", "builtin:human", "-o", "out.jsonl", *extra]
        proc = run_waza(*args, "--", *ACP_AGENT, cwd=here)
        assert proc.returncode == 0, proc.stderr
        records = {r["id"]: r for r in read_jsonl(here / "out.jsonl")}
        runs[name] = {"records": records, "raw": messages_per_prompt(here / "raw.jsonl"), "queue": here / "waza-review.jsonl"}
    local, ray = runs["local"], runs["ray"]
    # The raw log: every prompt's messages, as many as locally (each task's lines appended whole, none emptied).
    assert ray["raw"] == local["raw"] and {pid for pid, _ in ray["raw"]} == {r["id"] for r in rows}
    # The review queue: one item per prompt in the driver's directory, as locally.
    queued = sorted((item["id"], item["outputPreview"]) for item in read_jsonl(ray["queue"]))
    assert queued == sorted((item["id"], item["outputPreview"]) for item in read_jsonl(local["queue"]))
    assert [i for i, _ in queued] == ["p0", "p1", "p2", "p3"]
    for pid, record in ray["records"].items():
        grade = {k: v for k, v in record["grades"][0].items() if k != "duration"}
        assert grade == {k: v for k, v in local["records"][pid]["grades"][0].items() if k != "duration"}
        assert (
            grade["status"] == "pending" and grade["details"]["queue"] == "waza-review.jsonl"
        )  # as configured, not the node's copy
        assert len(record["stderr"]) == len(local["records"][pid]["stderr"]) > 1000  # the agent's stderr tail: in the record
    # Nothing was written in the workers' own directories, and their private copies are gone.
    assert sorted(p.name for p in (tmp_path / "ray").iterdir()) == ["out.jsonl", "raw.jsonl", "waza-review.jsonl"]


def test_a_file_over_the_limit_comes_back_cut_at_a_line_end_and_is_said(tmp_path, capsys):
    from waza.runner.ray_cluster.collect import COLLECT_LIMIT, _gather, deliver

    node_copy = tmp_path / "node-raw.jsonl"  # what a task's agent wrote on its node
    line = b'{"ts": 1, "line": "' + b"x" * 1000 + b'"}\n'
    node_copy.write_bytes(line * (COLLECT_LIMIT // len(line) + 3))
    driver_file = tmp_path / "raw.jsonl"
    driver_file.write_bytes(line)  # what earlier tasks brought back: appended to, never replaced
    deliver(_gather({node_copy: str(driver_file)}), "p0 (trial 2)")
    data = driver_file.read_bytes()
    assert len(data) - len(line) <= COLLECT_LIMIT and data.endswith(b"\n") and data == line * (len(data) // len(line))
    dropped = node_copy.stat().st_size - (len(data) - len(line))
    assert capsys.readouterr().err == (
        f"waza: p0 (trial 2): {dropped} bytes of {driver_file} were not brought back from the Ray node (at most 32 MB a file per task)\n"
    )


def alive(pid: int) -> bool:
    """Whether ``pid`` still runs (a zombie, dead but not yet reaped by its new parent, does not)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc/self/fd").exists(), reason="reads the process tree from Linux's /proc")
@pytest.mark.parametrize("how", ["end", signal.SIGTERM, signal.SIGKILL])
def test_the_embedded_instance_ends_with_its_driver_however_the_driver_ends(tmp_path, how):
    go, log = tmp_path / "go", tmp_path / "started.log"
    spec = orjson.dumps({"wait_for": str(go), "log": str(log)}).decode()
    prompts = write_jsonl(tmp_path / "p.jsonl", [{"id": "a", "input": spec}])
    args = ["capture", prompts, "--adapter", "exec", "-o", tmp_path / "out.jsonl", "--executor", "ray"]
    proc = subprocess.Popen([sys.executable, "-m", "waza", *map(str, args), "--", *RAY_AGENT], stderr=subprocess.PIPE, cwd=ROOT)
    try:
        deadline = time.monotonic() + 90
        while not log.exists():  # the agent runs: GCS, raylet, its agents, a worker and the task's agent are all up
            assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
            time.sleep(0.1)
        tree = descendants(proc.pid) - {proc.pid}
        if how == "end":
            go.touch()  # the agent answers and the run ends as usual
        else:
            proc.send_signal(how)
        _, stderr = proc.communicate(timeout=60)
        assert proc.returncode == {"end": 0, signal.SIGTERM: 128 + signal.SIGTERM, signal.SIGKILL: -signal.SIGKILL}[how], stderr
        # Ray's own helpers outlive a SIGKILLed driver by a minute when nothing stops them (a 60 s timeout of
        # theirs); the watchdog's sweep takes seconds: 30 s tells the two apart on a busy machine.
        deadline = time.monotonic() + 30
        while any(alive(pid) for pid in tree) and time.monotonic() < deadline:
            time.sleep(0.2)
        left = {pid: Path(f"/proc/{pid}/cmdline").read_bytes()[:80] for pid in tree if alive(pid)}
    finally:
        go.touch()  # the task's agent, were it left, ends at once
    assert len(tree) >= 5, tree  # GCS, raylet, dashboard and runtime-env agents, a worker (and the task's agent)
    assert left == {}


def killed_and_fine(tmp_path: Path) -> list[str | Path]:
    """A run whose worker is killed every time: Ray reports each death ("(raylet) A worker died ...") to the driver."""
    rows = [{"id": "killed", "input": orjson.dumps({"kill_always": True}).decode()}, {"id": "fine", "input": "{}"}]
    prompts = write_jsonl(tmp_path / "p.jsonl", rows)
    return ["capture", prompts, "--adapter", "exec", "-o", "-", "--executor", "ray", "--ray-max-retries", "1", "--", *RAY_AGENT]


def test_ray_lines_stay_off_stderr_and_stdout(tmp_path):
    quiet = run_waza(*killed_and_fine(tmp_path))
    assert quiet.returncode == 1, quiet.stderr
    assert sorted(r["id"] for r in read_jsonl(quiet.stdout)) == ["fine", "killed"]  # stdout: the records, nothing else
    assert all(line.startswith(b"waza: ") for line in quiet.stderr.splitlines()), quiet.stderr  # stderr: waza's own lines


@pytest.mark.slow
def test_ray_lines_go_to_stderr_with_verbose(tmp_path):
    verbose = run_waza("-v", *killed_and_fine(tmp_path))
    assert verbose.returncode == 1, verbose.stderr
    assert b"Started a local Ray instance" in verbose.stderr  # Ray's logging, on stderr
    assert sorted(r["id"] for r in read_jsonl(verbose.stdout)) == ["fine", "killed"]  # still nothing else on stdout


@pytest.mark.slow
def test_on_a_node_of_its_own_workspaces_are_removed_and_files_come_back(tmp_path):
    # A head without CPUs and one node with its own temporary directory: every task runs there.
    cluster = Cluster({"RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": secrets.token_hex(16)})
    node_tmp = tmp_path / "node-tmp"
    node_tmp.mkdir()
    driver = tmp_path / "driver"
    driver.mkdir()
    kills = tmp_path / "kills.log"
    rows = [{"id": f"p{i}", "input": f"cwd\nsay answer {i}\nflood 1"} for i in range(3)]
    rows.append({"id": "killer", "input": f"cwd\nkillparent {kills}"})  # kills its worker in its fresh workspace, each time
    try:
        cluster.start_head(num_cpus=0)
        cluster.add_node(num_cpus=2, TMPDIR=str(node_tmp))
        prompts = write_jsonl(tmp_path / "p.jsonl", rows)
        args = ["trials", prompts, "-k", "2", "--raw-log", "raw.jsonl", "-g", "builtin:human", "-o", "out.jsonl"]
        args += ["--executor", "ray", "--ray-address", cluster.address]
        proc = run_waza(*args, "--", *ACP_AGENT, cwd=driver, env=cluster.env)
    finally:
        cluster.stop()
    assert proc.returncode == 1, proc.stderr  # the killer's trials are errors
    by_id = {r["id"]: r for r in read_jsonl(driver / "out.jsonl")}
    trials = [t for pid in ("p0", "p1", "p2") for t in by_id[pid]["trials"]]
    assert len(trials) == 6 and all(str(node_tmp) in t["output"] for t in trials)  # the agent's cwd: a fresh workspace there
    # Each killer trial ran twice (its worker died each time) and its error names the node, host and dead worker.
    killed = [int(line.split()[1]) for line in kills.read_text().splitlines()]
    assert len(set(killed)) == 4
    for trial in by_id["killer"]["trials"]:
        said = re.search(r"last on node [0-9a-f]{56} \((\S+)\), worker pid (\d+): the worker process exited", trial["error"])
        assert trial["status"] == "error" and said, trial
        assert said[1] == socket.gethostname() and int(said[2]) in killed
    # Removed after grading, with the tasks' private copies, and what the killer's dead workers left too.
    assert [p.name for p in node_tmp.iterdir()] == []
    pairs = {(i["id"], i["trial"]) for i in read_jsonl(driver / "waza-review.jsonl")}
    assert pairs == {(f"p{i}", t) for i in range(3) for t in (1, 2)}  # every trial's item, in the driver's directory
    prompted = Counter(
        line["promptId"] for line in read_jsonl(driver / "raw.jsonl") if line["message"].get("method") == "session/prompt"
    )
    assert prompted == {"p0": 2, "p1": 2, "p2": 2}  # what a task whose worker died wrote does not come back
