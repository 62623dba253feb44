"""Ray executor against the local one: ``python bench/ray_throughput.py [--prompts N] [-j J]``.

Three agents: an exec agent that sleeps 50 ms and one that sleeps 1 s per
prompt (then answers; a trivial built-in grader), and the in-process mock
agent (no process at all: the ceiling of the Ray path's own per-task cost).
Each runs ``waza capture`` on N and 2N prompts, locally with ``-j J`` and with
``--executor ray`` joined to one Ray instance with J CPUs that this script
starts once (its start-up is printed, not charged to the runs). From the two
sizes it derives the cost per task (the slope) and the fixed cost per run
(start-up, joining, the first worker processes importing waza), so the
ray/local ratio for a long run is the ratio of the slopes. It also prints the
size of one record as JSON and as the pickle a task returns through Ray's
object store.

Not a test: nothing here asserts, and CI does not run it.
"""

from __future__ import annotations

import argparse
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
    parser.add_argument("--prompts", type=int, default=20, help="N for the 50 ms agent (1 s agent: N/5, mock agent: 10 N)")
    parser.add_argument("-j", type=int, default=2, help="prompts at once (local) and the Ray instance's CPUs")
    options = parser.parse_args()
    import ray

    started = time.perf_counter()
    ray.init(num_cpus=options.j, include_dashboard=False, log_to_driver=False, configure_logging=False, logging_level="ERROR")
    print(f"Ray start-up (embedded instance, {options.j} CPUs): {time.perf_counter() - started:.1f} s")
    address = ray.get_runtime_context().gcs_address
    n = options.prompts
    try:
        with tempfile.TemporaryDirectory() as tmp:
            root = Path(tmp)
            for label, seconds, count in (("50 ms", 0.05, n), ("1 s", 1.0, max(2, n // 5)), ("mock", None, 10 * n)):
                if seconds is None:
                    agent = ["--adapter", "mock"]
                else:
                    script = root / f"agent-{seconds}.py"
                    script.write_text(AGENT.format(seconds=seconds))
                    agent = ["--adapter", "exec", "--", sys.executable, str(script)]
                times: dict[str, list[float]] = {"local": [], "ray": []}
                for size in (count, 2 * count):
                    prompts = root / f"prompts-{size}.jsonl"
                    rows = (orjson.dumps({"id": f"p{i}", "input": "q", "hint": "ok"}) + b"\n" for i in range(size))
                    prompts.write_bytes(b"".join(rows))
                    head = ["capture", str(prompts), "-g", "builtin:hint"]
                    out = root / f"out-{size}.jsonl"
                    # Options before the agent's "--".
                    times["local"].append(timed([*head, "-j", str(options.j), "-o", str(out), *agent]))
                    times["ray"].append(timed([*head, "--executor", "ray", "--ray-address", address, "-o", str(out), *agent]))
                line = max(out.read_bytes().splitlines(), key=len)
                pickled = len(pickle.dumps(CaptureResult.from_dict(orjson.loads(line))))
                slope = {k: (v[1] - v[0]) / count for k, v in times.items()}
                fixed = {k: v[0] - slope[k] * count for k, v in times.items()}
                print(
                    f"agent {label}, {count} and {2 * count} prompts, -j {options.j}: "
                    f"local {1 / slope['local']:.1f}/s (fixed {fixed['local']:.1f} s), "
                    f"ray {1 / slope['ray']:.1f}/s (fixed {fixed['ray']:.1f} s); "
                    f"ray/local throughput {slope['local'] / slope['ray']:.2f}; "
                    f"Ray's extra cost per task {(slope['ray'] - slope['local']) * options.j * 1000:.0f} ms of a slot; "
                    f"record {len(line)} B as JSON, {pickled} B pickled"
                )
    finally:
        ray.shutdown()


if __name__ == "__main__":
    main()
