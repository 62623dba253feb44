"""Ray executor against the local one: ``python bench/ray_throughput.py [--prompts N] [-j J]``.

Three agents: an exec agent that sleeps 50 ms and one that sleeps 1 s per
prompt (then answers; a trivial built-in grader), and the in-process mock
agent (no process at all: the ceiling of the Ray path's own per-task cost).
Each runs ``waza capture`` on the same prompts, locally with ``-j J`` and with
``--executor ray`` joined to one Ray instance with J CPUs that this script
starts once (its start-up is printed, not charged to the runs). The rate while
running comes from the records' own timings (first start to last end), which
is what a long run converges to; the whole command's wall time adds the fixed
costs (start-up, joining the cluster, the first worker processes importing
waza). It also prints the size of one record as JSON and as the pickle a task
returns through Ray's object store.

Not a test: nothing here asserts, and CI does not run it.
"""

from __future__ import annotations

import argparse
import logging
import pickle
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import orjson

from waza.protocol.records import CaptureResult

AGENT = """import sys, time
sys.stdin.read()
time.sleep({seconds})
print("ok-answer")
"""


def timed(args: list[str]) -> float:
    started = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "waza", *args], capture_output=True)
    elapsed = time.perf_counter() - started
    if proc.returncode != 0:
        raise SystemExit(f"waza failed ({proc.returncode}): {proc.stderr.decode()[-2000:]}")
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--prompts", type=int, default=20, help="prompts for the 50 ms agent (1 s agent: N/5, mock agent: 10 N)")
    parser.add_argument("-j", type=int, default=2, help="prompts at once (local) and the Ray instance's CPUs")
    parser.add_argument("--agents", default="50ms,1s,mock", help="which agents to run, of 50ms, 1s and mock")
    options = parser.parse_args()
    import os

    import ray

    from waza.runner.ray_cluster.executor import WORKER_NICENESS

    os.environ.setdefault(WORKER_NICENESS, "0")  # as waza's embedded instance: workers at the local engine's priority
    started = time.perf_counter()
    ray.init(
        num_cpus=options.j, include_dashboard=False, log_to_driver=False, configure_logging=False, logging_level=logging.ERROR
    )
    print(f"Ray start-up (embedded instance, {options.j} CPUs): {time.perf_counter() - started:.1f} s")
    address = ray.get_runtime_context().gcs_address
    n = options.prompts
    try:
        with tempfile.TemporaryDirectory() as tmp:
            root = Path(tmp)
            agents = {"50ms": ("50 ms", 0.05, n), "1s": ("1 s", 1.0, max(2, n // 5)), "mock": ("mock", None, 10 * n)}
            for label, seconds, count in (agents[name] for name in options.agents.split(",")):
                if seconds is None:
                    agent = ["--adapter", "mock"]
                else:
                    script = root / f"agent-{seconds}.py"
                    script.write_text(AGENT.format(seconds=seconds))
                    agent = ["--adapter", "exec", "--", sys.executable, str(script)]
                prompts = root / f"prompts-{count}.jsonl"
                rows = (orjson.dumps({"id": f"p{i}", "input": "q", "hint": "ok"}) + b"\n" for i in range(count))
                prompts.write_bytes(b"".join(rows))
                head = ["capture", str(prompts), "-g", "builtin:hint"]
                rate, wall = {}, {}
                for name, how in (("local", ["-j", str(options.j)]), ("ray", ["--executor", "ray", "--ray-address", address])):
                    out = root / f"out-{name}.jsonl"  # options before the agent's "--"
                    wall[name] = timed([*head, *how, "-o", str(out), *agent])
                    records = [orjson.loads(line) for line in out.read_bytes().splitlines()]
                    span = (max(r["timing"]["end"] for r in records) - min(r["timing"]["start"] for r in records)) / 1000
                    rate[name] = count / span
                line = max(out.read_bytes().splitlines(), key=len)
                pickled = len(pickle.dumps(CaptureResult.from_dict(orjson.loads(line))))
                extra = (1 / rate["ray"] - 1 / rate["local"]) * options.j * 1000
                print(
                    f"agent {label}, {count} prompts, -j {options.j}: while running local {rate['local']:.1f}/s, "
                    f"ray {rate['ray']:.1f}/s, ray/local {rate['ray'] / rate['local']:.2f} ({extra:+.0f} ms a task per slot); "
                    f"whole command local {wall['local']:.1f} s, ray {wall['ray']:.1f} s; "
                    f"record {len(line)} B as JSON, {pickled} B pickled"
                )
    finally:
        ray.shutdown()


if __name__ == "__main__":
    main()
