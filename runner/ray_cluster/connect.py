"""Starting or joining Ray for one run: the embedded instance on loopback, a failed join said in one line.

Joining a cluster can fail three ways a person can fix: nothing listens at the
address, the cluster wants a token this driver does not have (or has another),
or the cluster runs another Ray or Python. Ray reports each as pages of its
own retry lines on stderr and, for some, a traceback; waza reaches the address
first (``reach``, before the run opens its output: a refused or silent port
is said at once instead of after Ray's minutes of retries), keeps Ray's lines off stderr while it joins, and turns
what they say into one line naming the cause and the fix.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import socket
import sys
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from waza.protocol.errors import ConfigError
from waza.runner.install_hints import pip_install
from waza.runner.ray_cluster.watchdog import start_watchdog, stop_watchdog

INSTALL_HINT = f"RayOptions (the Ray executor) needs Ray: {pip_install('ray')}"
#: The environment variable the Ray workers started by a raylet take their niceness from (Ray's default: 15).
WORKER_NICENESS = "RAY_worker_niceness"
#: Read by Ray when it is imported: "0" makes its own address for this machine 127.0.0.1 rather than the
#: interface's, and a GCS or raylet whose node address is 127.0.0.1 listens on loopback only.
LOOPBACK_ONLY = "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"
#: Seconds to reach a cluster's address before Ray is asked to join it.
REACH_TIMEOUT = 10.0
#: Seconds to wait for Ray's error-printing thread to end.
_JOIN_LIMIT = 10.0
#: How much of what Ray wrote while joining is kept to find the cause in.
_CAPTURE_LIMIT = 64 * 1024
_AUTH_FIX = (
    "set RAY_AUTH_MODE=token and the cluster's token in RAY_AUTH_TOKEN, a file named by RAY_AUTH_TOKEN_PATH, or ~/.ray/auth_token"
)


def import_ray(*, loopback: bool = False) -> Any:
    """The ``ray`` module, or a ConfigError naming the extra to install.

    ``loopback``: the embedded instance this process will start is to listen on 127.0.0.1 only. Ray
    decides that from the node address it finds when it is imported (``ray.init`` turns an explicit
    127.0.0.1 back into the interface's address), so the setting is made around the first import and
    the environment given back afterwards; a process that imported Ray before keeps what it chose.
    """
    if loopback and "ray" not in sys.modules and LOOPBACK_ONLY not in os.environ:
        os.environ[LOOPBACK_ONLY] = "0"
        try:
            return import_ray()
        finally:
            os.environ.pop(LOOPBACK_ONLY, None)
    try:
        import ray
    except ImportError:
        raise ConfigError(INSTALL_HINT) from None
    return ray


@contextlib.contextmanager
def connected(address: str | None, cpus: int | None, *, verbose: bool = False) -> Iterator[Any]:
    """Ray, initialised for this run: joined to ``address`` or an embedded instance with ``cpus`` CPUs,
    shut down after on every way out (unless the caller had already initialised it: then it is theirs).

    ``verbose``: Ray's Python logging (from INFO) and what it writes while joining reach stderr.
    Otherwise its logging is held at errors and its join lines are only read for the cause of a failure.
    Either way the workers' output is not forwarded (Ray prints their stdout lines on the driver's
    stdout, where ``-o -`` writes records) and stays in each node's session directory.
    """
    ray = import_ray(loopback=address is None)
    if ray.is_initialized():
        yield ray
        return
    level = logging.INFO if verbose else logging.ERROR
    options: dict[str, Any] = {"log_to_driver": False, "configure_logging": verbose, "logging_level": level}
    with _ProcessSettings() as settings:
        # Ray's Python side logs through the standard logging module; without a handler of its own a
        # warning (the token notice) would reach stderr through logging's last resort.
        logging.getLogger("ray").setLevel(level)
        # ray.init installs its own SIGTERM handler (exit at once); the run's handler (cancel cleanly) is put back.
        sigterm = signal.getsignal(signal.SIGTERM)
        watchdog = None
        try:
            if address is None:  # "local": a new instance even when RAY_ADDRESS is set
                # Ray runs its workers at nice 15; the local engine's agents run at the user's priority, and so
                # do the embedded instance's (a cluster's nodes choose theirs when they are started).
                os.environ.setdefault(WORKER_NICENESS, "0")
                try:
                    context = ray.init(address="local", num_cpus=cpus, include_dashboard=False, **options)
                except (ConnectionError, RuntimeError, ValueError) as exc:
                    raise ConfigError(f"cannot start an embedded Ray instance: {_first_line(exc)}") from None
                # Whatever ends this process, even SIGKILL, the instance's processes end with it.
                watchdog = start_watchdog(context.address_info["session_dir"])
            else:
                _join(ray, address, options, verbose)
        finally:
            settings.note_changes()
            if threading.current_thread() is threading.main_thread():
                signal.signal(signal.SIGTERM, sigterm)
        _stop_error_printer(ray)
        try:
            yield ray
        finally:
            try:
                ray.shutdown()
            finally:
                stop_watchdog(watchdog)


class _ProcessSettings:
    """What starting Ray sets in the process, given back as it was when the run ends: the variables of
    ``os.environ`` that waza (the workers' niceness) and ``ray.init`` (``PYTHONBREAKPOINT``, the usage-stats
    and auth settings) changed, and the level of Ray's logger. A notebook or service that runs waza keeps its
    own. Variables the caller changes while the run goes on are theirs and are left as they are."""

    def __init__(self) -> None:
        self.environ = dict(os.environ)
        self.logger = logging.getLogger("ray")
        self.level = self.logger.level
        self.changed: set[str] = set()

    def __enter__(self) -> _ProcessSettings:
        return self

    def note_changes(self) -> None:
        """Called once Ray is started (or failed to start): the variables changed since the run began."""
        keys = set(self.environ) | set(os.environ)
        self.changed = {k for k in keys if os.environ.get(k) != self.environ.get(k)}

    def __exit__(self, *exc: object) -> None:
        self.logger.setLevel(self.level)
        for key in self.changed:
            value = self.environ.get(key)
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def _stop_error_printer(ray: Any) -> None:
    """Stop the driver thread through which Ray prints its nodes' error reports (``(raylet) A worker
    died...``) to this process's *stdout*, where ``-o -`` writes the records.

    Ray starts that thread in every driver with no setting to leave it out (``log_to_driver``,
    ``logging_level`` and ``configure_logging`` govern the workers' output and Ray's logging, not this
    thread, up to Ray 2.60 at least), and it prints with ``print`` to ``sys.stdout``, even with -v;
    this is the sequence Ray's own disconnect runs for it (stop flag, close the subscription, join, clear the flag for the other
    uses). Waza reports what those messages say in the records themselves. Leaves everything as it
    is if this Ray has no such thread.
    """
    worker = getattr(getattr(ray, "_private", None), "worker", None)
    worker = getattr(worker, "global_worker", None)
    thread = getattr(worker, "listener_thread", None)
    subscriber = getattr(worker, "gcs_error_subscriber", None)
    stopped = getattr(worker, "threads_stopped", None)
    if not (isinstance(thread, threading.Thread) and subscriber is not None and isinstance(stopped, threading.Event)):
        return
    stopped.set()
    try:
        with contextlib.suppress(Exception):
            subscriber.close()
        thread.join(timeout=_JOIN_LIMIT)
    finally:
        stopped.clear()


def _join(ray: Any, address: str, options: dict[str, Any], verbose: bool) -> None:
    with _stderr_kept(shown=verbose) as said:
        try:
            ray.init(address=address, **options)
            return
        except (ConnectionError, RuntimeError, ValueError, ray.exceptions.RayError) as exc:
            why = diagnose(exc, said())
    raise ConfigError(f"cannot join the Ray cluster at {address}: {why}")


def reach(address: str) -> None:
    """A ConfigError unless something accepts a TCP connection at ``address`` (``host:port``) in time.

    Addresses that are not a plain ``host:port`` (``auto``, ``ray://``) are left to Ray.
    """
    host, sep, port = address.rpartition(":")
    if not sep or "://" in address or not port.isdigit():
        return
    host = host.strip("[]")
    try:
        socket.create_connection((host, int(port)), timeout=REACH_TIMEOUT).close()
    except OSError as exc:
        why = "nothing answered in time" if isinstance(exc, TimeoutError) else exc.strerror or str(exc)
        raise ConfigError(
            f"cannot join the Ray cluster at {address}: cannot reach it ({why}); give the head node's "
            "address and GCS port (`ray start --head --port PORT` prints it)"
        ) from None


def diagnose(exc: BaseException, said: str) -> str:
    """The cause of a failed join in one line, from the exception and what Ray wrote while it tried."""
    text = f"{exc}\n{said}"
    if type(exc).__name__ == "AuthenticationError" or "InvalidAuthToken" in text or "Unauthenticated" in text:
        mine = _token_source()
        if mine is None:
            return f"authentication: the cluster wants a token and this driver has none ({_AUTH_FIX})"
        return f"authentication: the cluster refused the token from {mine} (give the driver the cluster's token: {_AUTH_FIX})"
    if "version mismatch" in text.lower():
        return f"version mismatch: {_first_line(exc)} (install the cluster's Ray and Python versions on the driver)"
    return _first_line(exc)


def _token_source() -> str | None:
    """Where Ray would take this driver's token from, or None when it has none."""
    if os.environ.get("RAY_AUTH_TOKEN"):
        return "RAY_AUTH_TOKEN"
    named = os.environ.get("RAY_AUTH_TOKEN_PATH")
    if named and Path(named).is_file():
        return named
    default = Path.home() / ".ray" / "auth_token"
    return str(default) if default.is_file() else None


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


@contextlib.contextmanager
def _stderr_kept(*, shown: bool = False) -> Iterator[Any]:
    """While joining, this process's stderr (Ray's C++ core writes to the descriptor, not to ``sys.stderr``)
    goes to a temporary file; yields a function giving the last of what was written there.
    ``shown``: that last part is written to stderr afterwards."""
    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile() as sink:
        os.dup2(sink.fileno(), 2)
        try:
            yield lambda: _tail(sink)
        finally:
            sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)
            if shown:
                sys.stderr.write(_tail(sink))
                sys.stderr.flush()


def _tail(sink: Any) -> str:
    size = os.fstat(sink.fileno()).st_size
    sink.seek(max(0, size - _CAPTURE_LIMIT))
    return str(sink.read().decode(errors="replace"))


__all__ = ["INSTALL_HINT", "LOOPBACK_ONLY", "WORKER_NICENESS", "connected", "diagnose", "import_ray", "reach"]
