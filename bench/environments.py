"""Per-trial overhead of ``--env host`` and ``--env docker`` over the same work run unsandboxed.

The work is one trial of the ``hello-sh`` fixture task with the oracle: its
``solve.sh`` and then its ``test.sh``. Unsandboxed, the two scripts run as plain
processes in a fresh folder (with ``/logs/verifier`` and ``/app`` rewritten to
folders of it): the floor. ``host`` and ``docker`` run the whole trial through
waza's engine (``run_trial``): environment start, oracle, verifier, reward,
stop. ``docker`` is measured twice: the first trial after the task's image was
removed (it builds) and then trials on the cached image (a prepared task builds
nothing). With ``--relay-image`` (an image with ``python3``), an exec agent
(the fixtures' shell agent) runs the task in ``host`` and ``docker`` without
and with a host loopback port relayed in, as ``--serve-model`` does: the
relay's cost per trial. Medians of N trials, in seconds; run it on a quiet
machine.

    python bench/environments.py [-n 5] [--base-image waza-test/busybox:1] [--relay-image waza-test/debian-pip:12]
"""

from __future__ import annotations

import argparse
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import anyio

from waza.runner.benchmarks.docker import engine
from waza.runner.benchmarks.environment import ENVIRONMENTS
from waza.runner.benchmarks.loader import load_task
from waza.runner.benchmarks.trial import AgentChoice, run_trial

TASK = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "benchmarks" / "harbor" / "hello-sh"


def unsandboxed() -> float:
    """solve.sh then test.sh as plain processes, their absolute paths pointed into a fresh folder."""
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "app").mkdir()
        (root / "logs").mkdir()
        test = (TASK / "tests" / "test.sh").read_text().replace("/logs/verifier", str(root / "logs"))
        test = test.replace("/app", str(root / "app"))
        clock = time.perf_counter()
        subprocess.run(["bash", str(TASK / "solution" / "solve.sh")], cwd=root / "app", check=True)
        subprocess.run(["bash", "-c", test], cwd=root / "app", check=True, stdout=subprocess.DEVNULL)
        seconds = time.perf_counter() - clock
        assert (root / "logs" / "reward.txt").read_text().strip() == "1"
    return seconds


ORACLE = AgentChoice("oracle")
AGENT = AgentChoice("exec", (str(TASK.parent.parent / "agents" / "shell_agent.sh"),))


def trial(
    kind: str, base_images: dict[str, str], agent: AgentChoice = ORACLE, ports: tuple[int, ...] = ()
) -> tuple[float, dict[str, str]]:
    task = load_task(TASK)
    with tempfile.TemporaryDirectory() as tmp:
        clock = time.perf_counter()
        result = anyio.run(
            lambda: run_trial(task, agent, env_kind=kind, trial_dir=Path(tmp), base_images=base_images, ports=ports)
        )
        seconds = time.perf_counter() - clock
    if result.status != "passed":
        sys.exit(f"bench: the {kind} trial did not pass: {result.error_kind} {result.error}")
    return seconds, result.environment


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", type=int, default=5, help="trials per row (default 5)")
    parser.add_argument("--base-image", default="waza-test/busybox:1", help="the local image debian:12-slim is built on")
    parser.add_argument("--relay-image", help="an image with python3 to measure the loopback relay on (docker rows)")
    args = parser.parse_args()
    base_images = {"debian:12-slim": args.base_image}
    rows: list[tuple[str, list[float]]] = [("unsandboxed (floor)", [unsandboxed() for _ in range(args.n)])]
    if ENVIRONMENTS["host"].available() is None:
        rows.append(("host (bubblewrap)", [trial("host", base_images)[0] for _ in range(args.n)]))
    if engine()[0] is not None:
        _, facts = trial("docker", base_images)
        subprocess.run([str(engine()[0]), "rmi", facts["image"]], capture_output=True, check=False)
        first, facts = trial("docker", base_images)
        assert facts["image_built"] == "yes", facts
        rows.append(("docker, first trial (builds the image)", [first]))
        cached = [trial("docker", base_images) for _ in range(args.n)]
        assert all(f["image_built"] == "no (cached)" for _, f in cached)
        rows.append((f"docker, image cached ({engine()[1]})", [s for s, _ in cached]))
    if args.relay_image:
        with socket.socket() as probe:  # a free port of the host's loopback: what the relay is asked for
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        relay_images = {"debian:12-slim": args.relay_image}
        for kind in ("host", "docker"):
            if ENVIRONMENTS[kind].available() is None:
                for ports, how in (((), "exec agent"), ((port,), "exec agent, a port relayed in")):
                    rows.append((f"{kind}, {how}", [trial(kind, relay_images, AGENT, ports)[0] for _ in range(args.n)]))
    floor = statistics.median(rows[0][1])
    print("| run | trials | median s | overhead over the floor, s |")
    print("|---|---:|---:|---:|")
    for name, times in rows:
        median = statistics.median(times)
        print(f"| {name} | {len(times)} | {median:.3f} | {median - floor:+.3f} |")


if __name__ == "__main__":
    main()
