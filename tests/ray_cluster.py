"""A real Ray cluster of one or more nodes on this host: ``ray start`` subprocesses, token authentication on.

Each node is a ``ray start --block`` process leading a session of its own, with its own temporary
directory and ports, so a node is removed the way a machine fails: SIGKILL to its whole process group
(raylet, workers, agents), and stopping the cluster touches no other Ray on the machine (``ray stop``
would). The nodes register the host's interface address: Ray (2.60) turns 127.0.0.1 given to
``ray start --address`` into that address and refuses a second node in its loopback mode, so a
multi-node cluster cannot be kept on loopback; the token (a random one per cluster) is what keeps
anyone else off it.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

RAY = str(Path(sys.executable).with_name("ray"))


def free_ports(n: int, taken: set[int]) -> list[int]:
    """``n`` ports that are free now, distinct from each other and from ``taken`` (which gets them).

    Each number is the kernel's choice for a socket bound to port 0, and every socket stays open until
    all are chosen: a socket closed at once frees its port, and the kernel may choose it again for the
    next one, so two of a node's components would be given one port. ``taken`` keeps a cluster from
    giving a port twice, also to a component that has not bound its port yet.
    """
    with contextlib.ExitStack() as held:
        ports: list[int] = []
        while len(ports) < n:
            s = held.enter_context(socket.socket())
            s.bind(("127.0.0.1", 0))
            port = int(s.getsockname()[1])
            if port not in taken:
                ports.append(port)
                taken.add(port)
        return ports


class Node:
    def __init__(self, proc: subprocess.Popen[bytes], temp_dir: str, log: Path, ports: dict[str, int]) -> None:
        self.proc, self.temp_dir, self.log = proc, temp_dir, log
        #: The ports it was given, by ``ray start`` flag.
        self.ports = ports

    def kill(self) -> None:
        if (
            self.proc.returncode is None
        ):  # not reaped yet, so the group's id is still its own (a second kill must not hit a reuse)
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout=30)
        # Workers that left the group (Ray puts some in sessions of their own) still carry the temp dir in argv.
        for pid in _pids_mentioning(self.temp_dir):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        shutil.rmtree(self.temp_dir, ignore_errors=True)


class Cluster:
    """``env``: what every node and every driver of this cluster gets (the token settings)."""

    def __init__(self, env: dict[str, str]) -> None:
        self.env = {**os.environ, **env}
        self.nodes: list[Node] = []
        self.address = ""
        #: Every port given to a node of this cluster.
        self.ports: set[int] = set()

    def _start(self, args: list[str], extra_env: dict[str, str], head: bool = False) -> Node:
        """Start a node; the head's GCS port (``--port``) is chosen with the node's other ports."""
        temp_dir = tempfile.mkdtemp(prefix="wzr", dir="/tmp")  # short: Ray's unix socket paths must fit 107 bytes
        log = Path(temp_dir) / "ray-start.log"
        flags = ["--node-manager-port", "--object-manager-port", "--dashboard-agent-listen-port"]
        flags += ["--dashboard-agent-grpc-port", "--runtime-env-agent-port", "--metrics-export-port"]
        argv = [RAY, "start", "--block", "--temp-dir", temp_dir, "--disable-usage-stats", *args]
        if head:
            flags.append("--port")
        ports = dict(zip(flags, free_ports(len(flags), self.ports), strict=True))
        for flag, number in ports.items():
            argv += [flag, str(number)]
        with log.open("wb") as out:
            proc = subprocess.Popen(
                argv, stdout=out, stderr=subprocess.STDOUT, env={**self.env, **extra_env}, start_new_session=True
            )
        node = Node(proc, temp_dir, log, ports)
        self.nodes.append(node)
        return node

    def start_head(self, num_cpus: int, **env: str) -> str:
        node = self._start(["--head", "--num-cpus", str(num_cpus), "--include-dashboard", "false"], env, head=True)
        port = node.ports["--port"]
        self.address = f"127.0.0.1:{port}"
        self._wait(node, lambda: _connectable(port), "the head's GCS")
        self.wait_for_nodes(1)
        return self.address

    def add_node(self, num_cpus: int, **env: str) -> Node:
        node = self._start(["--address", self.address, "--num-cpus", str(num_cpus)], env)
        self.wait_for_nodes(sum(1 for n in self.nodes if n.proc.poll() is None))
        return node

    def alive_nodes(self) -> int:
        proc = subprocess.run([sys.executable, "-c", _COUNT_NODES, self.address], capture_output=True, env=self.env, timeout=90)
        return int(proc.stdout) if proc.returncode == 0 else -1

    def wait_for_nodes(self, n: int, limit: float = 90) -> None:
        self._wait(self.nodes[0], lambda: self.alive_nodes() == n, f"{n} alive nodes", limit)

    def _wait(self, node: Node, ready: object, what: str, limit: float = 90) -> None:
        deadline = time.monotonic() + limit
        while not ready():  # type: ignore[operator]
            if node.proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"no {what} after {limit}s: {node.log.read_text(errors='replace')[-3000:]}")
            time.sleep(0.5)

    def stop(self) -> None:
        for node in reversed(self.nodes):
            node.kill()


_COUNT_NODES = """
import logging, sys, ray
ray.init(address=sys.argv[1], log_to_driver=False, configure_logging=False, logging_level=logging.ERROR)
print(sum(1 for node in ray.nodes() if node["Alive"]))
"""


def _connectable(port: int) -> bool:
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) == 0


def _pids_mentioning(text: str) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            with contextlib.suppress(OSError):
                if text.encode() in Path(f"/proc/{entry}/cmdline").read_bytes():
                    found.append(int(entry))
    return found
