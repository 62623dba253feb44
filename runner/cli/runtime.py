"""Running a command: the event loop, signals, and the exit codes users script against.

Exit codes (every command):
  0    done, and nothing errored
  1    done, but a gate failed (--fail-under, --min-kappa, ...) or a result errored;
       or the agent or a grader could not be started (AgentError, GraderError)
  2    usage or configuration error, found before anything ran (or a bad input line on stdin)
  130  interrupted by SIGINT; 143 interrupted by SIGTERM. Every line already
       written is complete; in-flight agents and graders were stopped. A second
       signal while stopping is ignored.
"""

from __future__ import annotations

import os
import signal
import socket
import sys
from collections.abc import Awaitable, Callable

import msgspec

from waza.protocol.errors import AgentError, GraderError, UsageError, WazaError, find_cause
from waza.protocol.io.logs import configure
from waza.protocol.io.secrets import Redactor

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2
EXIT_SIGNAL_BASE = 128


class Interrupt(msgspec.Struct):
    """Filled in by a command so an interrupt can say what was done and what is missing."""

    summary: Callable[[], str] | None = None
    received: int | None = None


#: The one place errors become exit codes (the first matching class wins).
EXIT_CODES: tuple[tuple[type[WazaError], int], ...] = (
    (UsageError, EXIT_USAGE),  # ConfigError and JsonlError included
    (AgentError, EXIT_FAILED),
    (GraderError, EXIT_FAILED),
    (WazaError, EXIT_FAILED),
)


def fail(error: WazaError | str) -> int:
    """Print the error as one line on stderr, in the command line's terms; its exit code (a plain message is a
    usage error)."""
    from waza.runner.cli.api_terms import cli_message

    print(f"waza: {cli_message(error)}", file=sys.stderr)
    if isinstance(error, str):
        return EXIT_USAGE
    return next(code for cls, code in EXIT_CODES if isinstance(error, cls))


def run(body: Callable[[Interrupt], Awaitable[int]]) -> int:
    """Run ``body`` to an exit code; SIGINT/SIGTERM cancel it cleanly (processes reaped, lines whole).

    The handlers stay in place from before the event loop starts until after it is closed, and a
    second signal (Ctrl-C again, ``timeout -s INT`` after a Ctrl-C) is noted and otherwise ignored: the
    run is already stopping. A handler that came and went with the first signal (an anyio signal
    receiver) left Python's default one for the rest of the shutdown, whose ``KeyboardInterrupt``
    broke it off part-way (an asyncio traceback, or exit 130 without the summary line).
    anyio is imported here, when a command runs: ``--help`` and usage errors do without it.
    """
    import asyncio

    import anyio

    interrupt = Interrupt()
    stop: list[Callable[[], None]] = []  # while the body runs: cancels it from the event loop

    def on_signal(received: int, _frame: object) -> None:
        if interrupt.received is not None:
            return  # already stopping
        interrupt.received = received
        for cancel in stop:
            cancel()

    async def main() -> int:
        loop = asyncio.get_running_loop()
        code = EXIT_OK
        # A signal wakes the event loop at once (a byte on this pair), wherever the kernel delivered it,
        # so the handler runs without waiting for the loop's next event.
        wake, woken = socket.socketpair()
        wake.setblocking(False)
        woken.setblocking(False)
        loop.add_reader(woken.fileno(), woken.recv, 4096)
        previous_fd = signal.set_wakeup_fd(wake.fileno(), warn_on_full_buffer=False)
        try:
            with anyio.CancelScope() as scope:

                def cancel() -> None:
                    loop.call_soon_threadsafe(scope.cancel)

                stop.append(cancel)
                if interrupt.received is None:  # not signalled before the loop started
                    code = await body(interrupt)
        finally:
            stop.clear()
            signal.set_wakeup_fd(previous_fd)
            loop.remove_reader(woken.fileno())
            wake.close()
            woken.close()
        return code

    watched = (signal.SIGINT, signal.SIGTERM)
    previous = {s: signal.signal(s, on_signal) for s in watched}
    try:
        code = anyio.run(main)
    except BaseException as exc:  # every exception: sorted below; anything else re-raised
        found = find_cause(exc, WazaError)
        if found is not None:
            return fail(found)
        if find_cause(exc, BrokenPipeError) is not None:
            return reader_went_away()
        raise
    finally:
        for s, handler in previous.items():
            # An interrupted command ends now: a late signal is ignored to the end (SIG_IGN, which Python's
            # finalisation keeps, where it resets a Python handler to the default and a signal would kill it).
            signal.signal(s, signal.SIG_IGN if interrupt.received is not None else handler)
    if interrupt.received is not None:
        name = signal.Signals(interrupt.received).name
        done = interrupt.summary() if interrupt.summary else ""
        print(f"waza: interrupted by {name}" + (f"; {done}" if done else ""), file=sys.stderr)
        return EXIT_SIGNAL_BASE + interrupt.received
    return code


def reader_went_away() -> int:
    """The reader of stdout went away (``waza ... | head -1``): 141, as a shell reports SIGPIPE, with stdout
    pointed at /dev/null so the interpreter's final flush is silent."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    return EXIT_SIGNAL_BASE + signal.SIGPIPE


def configure_logging(verbose: int) -> None:
    """Logs to stderr (structlog, loaded on the first line logged); warnings by default, -v info, -vv debug."""
    configure(verbose, Redactor().text)
