"""The Ray executor on a real two-raylet cluster on this host, the figures of the manual's
"Running on a cluster" (docs/manual/guides/cluster.md).

    python bench/ray_cluster_cases.py bad-node [--prompts 100] [--limit 5]
    python bench/ray_cluster_cases.py growing [--prompts 24] [--early]
    python bench/ray_cluster_cases.py warm [--prompts 40] [--startup 2]

``bad-node``: a head and a second node with one CPU each; the second node's agents
fail at once (``WAZA_BROKEN_NODE`` set in its environment). Prints how many of the
prompts ended as errors on it with ``--ray-node-error-limit LIMIT`` (a large limit:
no limit). ``growing``: a one-CPU head; a two-CPU node joins once two prompts have
finished (with ``--early`` it is there from the start); prints the
tasks in flight before and after it joined (from the agents' own start and end
times) and the whole run's wall time. Each prompt's agent sleeps (0.3 s for
bad-node, 1.5 s for growing) and answers. ``warm``: a head and a second node
with one CPU each; the tests' scripted ACP agent, made to take STARTUP seconds
to start, answers PROMPTS prompts, once with a Ray task per prompt and once
with ``--ray-warm-agents``; prints each run's wall time and agent starts.

Uses the tests' cluster helper (``tests/ray_cluster.py``: ``ray start`` processes
with their own temporary directories and ports, a random token). Not a test:
nothing here asserts, and CI does not run it. Run from the repository root.
"""

from __future__ import annotations

import argparse
import secrets
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.ray_cluster import Cluster
from tests.test_ray_cluster import capture_args, most_at_once, prompts, spans


def bad_node(cluster: Cluster, tmp: Path, n: int, limit: int) -> None:
    cluster.start_head(num_cpus=1)
    cluster.add_node(num_cpus=1, WAZA_BROKEN_NODE="1")
    rows = prompts(tmp / "p.jsonl", n, sleep=0.3, fail_if_env="WAZA_BROKEN_NODE")
    out = tmp / "out.jsonl"
    started = time.monotonic()
    args = capture_args(cluster, rows, out, "--ray-node-error-limit", str(limit))
    proc = subprocess.run([sys.executable, "-m", "waza", *args], env=cluster.env, capture_output=True)
    records = [orjson.loads(line) for line in out.read_bytes().splitlines()]
    errors = sum(r["status"] == "error" for r in records)
    print(
        f"limit {limit}: the bad node took {errors} of {len(records)} prompts; exit {proc.returncode}, {time.monotonic() - started:.1f} s"
    )


def growing(cluster: Cluster, tmp: Path, n: int, late: bool) -> None:
    cluster.start_head(num_cpus=1)
    if not late:
        cluster.add_node(num_cpus=2)
    log, out = tmp / "spans.log", tmp / "out.jsonl"
    rows = prompts(tmp / "p.jsonl", n, sleep=1.5, span=str(log))
    started = time.monotonic()
    proc = subprocess.Popen([sys.executable, "-m", "waza", *capture_args(cluster, rows, out)], env=cluster.env)
    if late:
        while not log.exists() or len(log.read_text().splitlines()) < 2:
            time.sleep(0.2)
        adding = time.time()
        cluster.add_node(num_cpus=2)
        joined = time.time()
    proc.wait()
    found = spans(log)
    line = f"{'late' if late else 'early'} node: exit {proc.returncode}, {time.monotonic() - started:.1f} s for {n} prompts"
    if late:
        before = most_at_once([s for s in found if s[1] <= adding])
        after = most_at_once([s for s in found if s[0] >= joined])
        line += f"; at once: {before} before it joined, {after} after (joining took {joined - adding:.1f} s)"
    else:
        line += f"; at once: {most_at_once(found)}"
    print(line)


def warm(cluster: Cluster, tmp: Path, n: int, startup: float) -> None:
    cluster.start_head(num_cpus=1)
    cluster.add_node(num_cpus=1)
    rows = tmp / "p.jsonl"
    rows.write_bytes(b"".join(orjson.dumps({"id": f"p{i:03d}", "input": f"say answer {i}"}) + b"\n" for i in range(n)))
    agent = [sys.executable, str(Path(__file__).resolve().parent.parent / "tests" / "agents" / "scripted_acp_agent.py")]
    for extra in ([], ["--ray-warm-agents"]):
        out, starts = tmp / f"out{len(extra)}.jsonl", tmp / f"starts{len(extra)}.log"
        args = ["capture", str(rows), "--adapter", "acp", "-o", str(out), "--executor", "ray", "--ray-address", cluster.address]
        args += [*extra, "--", *agent, "--startup", str(startup), "--starts", str(starts)]
        started = time.monotonic()
        proc = subprocess.run([sys.executable, "-m", "waza", *args], env=cluster.env, capture_output=True)
        took = time.monotonic() - started
        records = [orjson.loads(line) for line in out.read_bytes().splitlines()]
        ok = sum(not r["errors"] for r in records)
        print(
            f"{'warm agents' if extra else 'a task per prompt'}: {n} prompts, agent start-up {startup:g} s: "
            f"{took:.1f} s, {len(starts.read_text().splitlines())} agent starts, {ok} records without errors, exit {proc.returncode}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("case", choices=["bad-node", "growing", "warm"])
    parser.add_argument("--prompts", type=int)
    parser.add_argument("--limit", type=int, default=5)
    parser.add_argument("--early", action="store_true", help="growing: the second node is there from the start")
    parser.add_argument("--startup", type=float, default=2.0, help="warm: seconds the agent takes to start")
    args = parser.parse_args()
    cluster = Cluster({"RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": secrets.token_hex(16)})
    with tempfile.TemporaryDirectory(prefix="waza-ray-bench-") as tmp:
        try:
            if args.case == "bad-node":
                bad_node(cluster, Path(tmp), args.prompts or 100, args.limit)
            elif args.case == "warm":
                warm(cluster, Path(tmp), args.prompts or 40, args.startup)
            else:
                growing(cluster, Path(tmp), args.prompts or 24, late=not args.early)
        finally:
            cluster.stop()


if __name__ == "__main__":
    main()
