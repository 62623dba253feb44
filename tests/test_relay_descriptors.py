"""The loopback relay out of file descriptors: both halves (waza's, on the host, and the script inside the sandbox)
back off or refuse one connection and keep relaying. Each runs as a real process under a low RLIMIT_NOFILE,
relaying to a real TCP server on loopback, with real clients that hold connections open until it runs out."""

from __future__ import annotations

import socket
import subprocess
import sys
import textwrap
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from waza.adapters.sandbox import relay as sandbox_relay


@pytest.fixture
def tcp_server() -> Iterator[int]:
    """A TCP server on loopback that answers every connection with one line and closes it."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(64)

    def serve() -> None:
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            with conn:
                conn.sendall(b"hello\n")

    threading.Thread(target=serve, daemon=True).start()
    yield listener.getsockname()[1]
    listener.close()


def _limited(limit: int) -> str:
    return f"import resource; resource.setrlimit(resource.RLIMIT_NOFILE, ({limit}, {limit}))\n"


def test_waza_s_relay_keeps_relaying_after_running_out_of_descriptors(tcp_server: int) -> None:
    program = _limited(40) + textwrap.dedent(
        f"""
        import anyio, socket, waza
        from waza.adapters.sandbox.bwrap import relayed

        async def main():
            async with relayed(waza.Sandbox(network="loopback", ports=({tcp_server},))) as folder:
                path = str(folder / "{tcp_server}")
                held = []
                for _ in range(60):  # more than the limit: the relay and this client run out
                    try:
                        s = socket.socket(socket.AF_UNIX)
                        s.setblocking(False)
                        s.connect(path)
                        held.append(s)
                    except OSError:
                        break
                await anyio.sleep(1)
                for s in held:
                    s.close()
                def ask():
                    with socket.socket(socket.AF_UNIX) as s:
                        s.settimeout(30)
                        s.connect(path)
                        return s.makefile().readline().strip()
                print("held", len(held), "then", await anyio.to_thread.run_sync(ask), flush=True)

        anyio.run(main)
        """
    )
    proc = subprocess.run([sys.executable, "-c", program], capture_output=True, timeout=120)
    assert proc.returncode == 0, proc.stderr.decode()[-2000:]
    assert proc.stdout.decode().strip().endswith("then hello"), proc.stdout


def test_the_relay_in_the_sandbox_keeps_relaying_after_running_out_of_descriptors(tmp_path: Path, tcp_server: int) -> None:
    # The host half stand-in: a Unix socket that forwards to the TCP server (one thread a connection).
    folder = tmp_path / "relay"
    folder.mkdir()
    unix = socket.socket(socket.AF_UNIX)
    unix.bind(str(folder / "9"))
    unix.listen(128)

    def forward() -> None:
        while True:
            try:
                conn, _ = unix.accept()
            except OSError:
                return
            with conn, socket.create_connection(("127.0.0.1", tcp_server)) as up:
                conn.sendall(up.makefile("rb").readline())

    threading.Thread(target=forward, daemon=True).start()
    free = socket.socket()
    free.bind(("127.0.0.1", 0))
    port = free.getsockname()[1]
    free.close()
    folder.joinpath(str(port)).symlink_to(folder / "9")
    client = tmp_path / "client.py"
    client.write_text(
        textwrap.dedent(
            f"""
            import socket, time
            held = []
            for _ in range(80):  # the relay has 24 descriptors: it runs out long before these are done
                try:
                    held.append(socket.create_connection(("127.0.0.1", {port}), timeout=5))
                except OSError:
                    break
            time.sleep(1)
            for s in held:
                s.close()
            time.sleep(0.5)
            with socket.create_connection(("127.0.0.1", {port}), timeout=30) as s:
                s.settimeout(30)
                print("then", s.makefile().readline().strip(), flush=True)
            """
        )
    )
    relay = [sys.executable, "-I", "-S", sandbox_relay.__file__, str(folder), str(port), "--", sys.executable, str(client)]
    proc = subprocess.run(
        [sys.executable, "-c", _limited(24) + "import os, sys; os.execv(sys.argv[1], sys.argv[1:])", *relay],
        capture_output=True,
        timeout=120,
    )
    unix.close()
    assert proc.returncode == 0, proc.stderr.decode()[-2000:]
    assert proc.stdout.decode().strip() == "then hello", proc.stderr.decode()[-2000:]
