"""Ray executor against the local one: ``python bench/ray_throughput.py [--prompts N] [-j J]``.

For an agent that takes 50 ms and one that takes 1 s per prompt (an exec
agent that sleeps, then answers; a trivial built-in grader), runs the same
prompts through ``waza capture -j J`` (local) and ``--executor ray`` joined to
one Ray instance with J CPUs that this script starts once, so Ray's start-up
(printed separately) is not charged to each run. Prints prompts per second,
the ratio ray/local, the overhead per task, and the size of one record (what
each task returns through Ray's object store).

Not a test: nothing here asserts, and CI does not run it.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import orjson

AGENT = """import sys, time
sys.stdin.read()
time.sleep({seconds})
print("ok-answer")
"""


def run(args: list[str]) -> float:
    started = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "waza", *args], capture_output=True)
    elapsed = time.perf_counter() - started
    if proc.returncode != 0:
        raise SystemExit(f"waza failed ({proc.returncode}): {proc.stderr.decode()[-2000:]}")
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--prompts", type=int, default=40, help="prompts for the 50 ms agent (the 1 s agent gets a fifth)")
    parser.add_argument("-j", type=int, default=2, help="prompts at once (local) and the Ray instance's CPUs")
    options = parser.parse_args()
    import ray

    started = time.perf_counter()
    ray.init(num_cpus=options.j, include_dashboard=False, log_to_driver=False, configure_logging=False, logging_level="ERROR")
    print(f"Ray start-up (embedded instance, {options.j} CPUs): {time.perf_counter() - started:.1f} s")
    address = ray.get_runtime_context().gcs_address
    try:
        with tempfile.TemporaryDirectory() as tmp:
            root = Path(tmp)
            for seconds, count in ((0.05, options.prompts), (1.0, max(2, options.prompts // 5))):
                agent = root / f"agent-{seconds}.py"
                agent.write_text(AGENT.format(seconds=seconds))
                prompts = root / f"prompts-{seconds}.jsonl"
                prompts.write_bytes(b"".join(orjson.dumps({"id": f"p{i}", "input": "q", "hint": "ok"}) + b"\n" for i in range(count)))
                common = ["capture", str(prompts), "--adapter", "exec", "-g", "builtin:hint"]
                command = ["--", sys.executable, str(agent)]
                local_out, ray_out = root / "local.jsonl", root / "ray.jsonl"
                local = run([*common, "-j", str(options.j), "-o", str(local_out), *command])
                remote = run([*common, "--executor", "ray", "--ray-address", address, "-o", str(ray_out), *command])
                size = max(len(line) for line in ray_out.read_bytes().splitlines())
                overhead = (remote - local) / count * options.j
                print(
                    f"agent {seconds * 1000:.0f} ms, {count} prompts, -j {options.j}: local {count / local:.1f}/s ({local:.2f} s), "
                    f"ray {count / remote:.1f}/s ({remote:.2f} s); ray/local throughput {local / remote:.2f}; "
                    f"overhead per task ~{overhead * 1000:.0f} ms (incl. the driver joining the cluster); record {size} bytes"
                )
    finally:
        ray.shutdown()


if __name__ == "__main__":
    main()
