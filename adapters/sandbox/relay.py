"""The relay inside a sandbox whose network is ``loopback``: run as a script, standard library only.

Usage (waza builds it): ``python -I -S relay.py SOCKET_DIR PORT[,PORT...] -- AGENT ARGV...``.
The sandbox has a network of its own, with nothing on its loopback; for each
listed port this listens on ``127.0.0.1:PORT`` inside it and passes each
connection through the Unix socket ``SOCKET_DIR/PORT``, which waza relays to the
same port of the host's loopback. A port something already listens on in this
network namespace is left to it: in a container, every command of a trial
shares one loopback, and a terminal the agent starts (a second relay) reaches
the host through the agent's relay. Then it runs the agent with the same
standard streams, passes on the signals that stop it, and exits as the agent did.
"""

import errno
import os
import signal
import socket
import subprocess
import sys
import threading
import time


def _pipe(source: socket.socket, sink: socket.socket, done: threading.Semaphore, pair: tuple[socket.socket, ...]) -> None:
    try:
        while data := source.recv(1 << 16):
            sink.sendall(data)
        sink.shutdown(socket.SHUT_WR)
    except OSError:
        pass
    if not done.acquire(blocking=False):  # the second direction to end closes both
        for s in pair:
            s.close()


#: Out of these, wait and try again: the process (or the system) has no descriptor or memory to spare now.
_SCARCE = (errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM)


def _serve(listener: socket.socket, path: str) -> None:
    """Relay each connection; short of descriptors, back off (up to a second) or refuse that one connection,
    never end: the agent's other connections, and the run, go on."""
    pause = 0.01
    while True:
        try:
            conn, _ = listener.accept()
        except OSError as exc:
            if exc.errno not in _SCARCE:
                raise
            time.sleep(pause)
            pause = min(pause * 2, 1.0)
            continue
        pause = 0.01
        try:
            upstream = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        except OSError:
            conn.close()  # refused: this connection only
            continue
        try:
            upstream.connect(path)
            done = threading.Semaphore(1)
            for a, b in ((conn, upstream), (upstream, conn)):
                threading.Thread(target=_pipe, args=(a, b, done, (conn, upstream)), daemon=True).start()
        except (OSError, RuntimeError):  # RuntimeError: no thread can be started now
            conn.close()
            upstream.close()


def main(argv: list[str]) -> int:
    if len(argv) < 4 or argv[2] != "--":
        print("usage: relay.py SOCKET_DIR PORT[,PORT...] -- COMMAND...", file=sys.stderr)
        return 2
    folder, ports, command = argv[0], argv[1].split(","), argv[3:]
    for port in ports:
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            listener.bind(("127.0.0.1", int(port)))
        except OSError as exc:
            if exc.errno != errno.EADDRINUSE:
                raise
            listener.close()  # an earlier relay in this network namespace serves the port: the command uses it
            continue
        listener.listen(64)
        threading.Thread(target=_serve, args=(listener, os.path.join(folder, port)), daemon=True).start()
    try:
        child = subprocess.Popen(command)
    except OSError as exc:
        print(f"cannot start {command[0]!r}: {exc.strerror or exc}", file=sys.stderr)
        return 127
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, lambda number, _frame: child.send_signal(number))
    code = child.wait()
    return code if code >= 0 else 128 - code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
