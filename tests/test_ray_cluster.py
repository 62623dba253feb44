"""``--executor ray`` on a real cluster of two raylets on this host: a bad node, a growing cluster, a lost node.

Each test starts its own cluster (``ray start`` subprocesses, see ``ray_cluster``), a
head and a second node with their own temporary directories and ports, and changes it
while a ``waza capture`` runs against it. Slow (a node takes seconds to start and a
dead one seconds to be noticed), so marked ``slow``; skipped without the ``ray`` extra.
"""

from __future__ import annotations

import re
import secrets
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest

from .conftest import ROOT, read_jsonl, run_waza, write_jsonl
from .ray_cluster import Cluster

pytest.importorskip("ray", reason="the ray extra is not installed (pip install '.[ray]' in the checkout)")
pytestmark = pytest.mark.slow

AGENT = [sys.executable, str(Path(__file__).parent / "agents" / "ray_agent.py")]


@pytest.fixture
def cluster() -> Iterator[Cluster]:
    cluster = Cluster({"RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": secrets.token_hex(16)})
    try:
        yield cluster
    finally:
        cluster.stop()


def prompts(path: Path, n: int, **spec: Any) -> Path:
    return write_jsonl(path, [{"id": f"p{i:02d}", "input": orjson.dumps(spec).decode(), "hint": "ok-answer"} for i in range(n)])


def capture_args(cluster: Cluster, prompts: Path, out: Path, *extra: str) -> list[str]:
    args = ["capture", prompts, "--adapter", "exec", "-g", "builtin:hint", "-o", out, "--executor", "ray"]
    return [*map(str, [*args, "--ray-address", cluster.address, *extra]), "--", *AGENT]


def spans(path: Path) -> list[tuple[float, float]]:
    return [(float(a), float(b)) for _, a, b in (line.split() for line in path.read_text().splitlines())]


def most_at_once(found: list[tuple[float, float]]) -> int:
    edges = sorted([(start, 1) for start, _ in found] + [(end, -1) for _, end in found])
    running = best = 0
    for _, step in edges:
        running += step
        best = max(best, running)
    return best


@pytest.mark.parametrize("warm", [[], ["--ray-warm-agents"]], ids=["tasks", "warm-agents"])
def test_a_bad_node_gets_no_more_tasks_after_the_error_limit(tmp_path, cluster, warm):
    cluster.start_head(num_cpus=1)
    cluster.add_node(num_cpus=1, WAZA_BROKEN_NODE="1")  # its agents fail at once: a missing binary, a full disk
    out = tmp_path / "out.jsonl"
    rows = prompts(tmp_path / "p.jsonl", 20, sleep=0.3, fail_if_env="WAZA_BROKEN_NODE")
    proc = run_waza(*capture_args(cluster, rows, out, "--ray-node-error-limit", "2", *warm), env=cluster.env, timeout=300)
    assert proc.returncode == 1, proc.stderr  # the bad node's records are errors
    records = read_jsonl(out)
    assert sorted(r["id"] for r in records) == [f"p{i:02d}" for i in range(20)]  # each once
    errors = [r for r in records if r["status"] == "error"]
    bad = {r["metadata"]["ray"]["node_id"] for r in errors}
    assert len(bad) == 1 and all(r["metadata"]["ray"]["host"] for r in records)
    # The limit, plus what was already queued there when the second error came back (window: 2 × 2 slots).
    assert 2 <= len(errors) <= 2 + 4, [r["id"] for r in errors]
    assert all(r["status"] == "passed" and r["metadata"]["ray"]["node_id"] not in bad for r in records if r not in errors)
    said = [line for line in proc.stderr.decode().splitlines() if "no more tasks go to it" in line]
    assert len(said) == 1 and "2 tasks in a row as errors" in said[0] and "agent exited with code 1" in said[0]


def test_a_growing_cluster_gets_used_and_an_empty_one_is_waited_for(tmp_path, cluster):
    cluster.start_head(num_cpus=0)  # nothing can run yet: an autoscaler's cluster before its first node
    out, log = tmp_path / "out.jsonl", tmp_path / "spans.log"
    rows = prompts(tmp_path / "p.jsonl", 24, sleep=1.5, span=str(log))
    args = capture_args(cluster, rows, out, "--ray-capacity-timeout", "120")
    proc = subprocess.Popen([sys.executable, "-m", "waza", *args], stderr=subprocess.PIPE, cwd=ROOT, env=cluster.env)
    said: list[bytes] = []
    reader = threading.Thread(target=lambda: said.extend(proc.stderr), daemon=True)  # type: ignore[arg-type]
    reader.start()
    try:
        deadline = time.monotonic() + 120
        while not any(b"waza: waiting up to 120 s for room on the Ray cluster" in line for line in said):
            assert proc.poll() is None and time.monotonic() < deadline, b"".join(said)  # it waits: nothing can run yet
            time.sleep(0.2)
        cluster.add_node(num_cpus=1)
        while not log.exists() or len(log.read_text().splitlines()) < 2:  # the one-CPU node runs them one at a time
            assert proc.poll() is None and time.monotonic() < deadline + 120, b"".join(said)
            time.sleep(0.2)
        before = time.time()
        cluster.add_node(num_cpus=2)
        joined = time.time()
        proc.wait(timeout=300)
        reader.join(60)
        stderr = b"".join(said)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert b"waza: waiting up to 120 s for room on the Ray cluster" in stderr
    assert sorted(r["id"] for r in read_jsonl(out)) == [f"p{i:02d}" for i in range(24)]
    found = spans(log)
    assert most_at_once([s for s in found if s[1] <= before]) == 1
    assert most_at_once([s for s in found if s[0] >= joined]) == 3  # the window grew with the cluster: 3 CPUs, 3 at once


def lose_a_node(tmp_path: Path, cluster: Cluster, n: int, sleep: float, *extra: str) -> tuple[int, bytes, Path]:
    """A capture of ``n`` prompts on a head and a second node (one CPU each) that is SIGKILLed once each
    node runs one: (exit code, stderr, the agents' start log)."""
    cluster.start_head(num_cpus=1)
    node = cluster.add_node(num_cpus=1)
    log = tmp_path / "started.log"
    rows = prompts(tmp_path / "p.jsonl", n, sleep=sleep, log=str(log))
    args = capture_args(cluster, rows, tmp_path / "out.jsonl", *extra)
    proc = subprocess.Popen([sys.executable, "-m", "waza", *args], stderr=subprocess.PIPE, cwd=ROOT, env=cluster.env)
    try:
        deadline = time.monotonic() + 120
        while not log.exists() or len(log.read_text().splitlines()) < 2:  # one task on each node
            assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
            time.sleep(0.2)
        node.kill()
        _, stderr = proc.communicate(timeout=300)
    finally:
        if proc.poll() is None:
            proc.kill()
    return proc.returncode, stderr, log


@pytest.mark.parametrize("warm", [[], ["--ray-warm-agents"]], ids=["tasks", "warm-agents"])
def test_a_lost_node_s_tasks_run_again_on_the_survivor(tmp_path, cluster, warm):
    returncode, stderr, log = lose_a_node(tmp_path, cluster, 6, 4, *warm)
    assert returncode == 0, stderr
    records = read_jsonl(tmp_path / "out.jsonl")
    assert sorted(r["id"] for r in records) == [f"p{i:02d}" for i in range(6)]  # each once
    assert all(r["status"] == "passed" for r in records)
    started = [line.split()[0] for line in log.read_text().splitlines()]
    assert len(started) > 6  # what was in flight on the lost node ran again (at least once for agents)


def test_a_record_lost_with_its_node_names_the_node(tmp_path, cluster):
    returncode, stderr, log = lose_a_node(tmp_path, cluster, 2, 30, "--ray-max-retries", "0")  # no rerun
    assert returncode == 1, stderr  # the lost one ends as an error
    (error,) = [r for r in read_jsonl(tmp_path / "out.jsonl") if r["status"] == "error"]
    assert re.fullmatch(
        r"Ray could not finish this task in 1 try: the node running it was lost each time; "
        r"last on node [0-9a-f]{56} \(\S+\): the node died or became unreachable",
        error["errors"][0],
    ), error["errors"]
    assert error["metadata"]["ray"]["node_id"] in error["errors"][0]
    assert len(log.read_text().splitlines()) == 2  # nothing ran again
