"""Running a command: the event loop, signals, and the exit codes users script against.

Exit codes (every command):
  0    done, and nothing errored
  1    done, but a gate failed (--fail-under, --min-kappa, ...) or a result errored;
       or the agent or a grader could not be started (AgentError, GraderError)
  2    usage or configuration error, found before anything ran (or a bad input line on stdin)
  130  interrupted by SIGINT; 143 interrupted by SIGTERM. Every line already
       written is complete; in-flight agents and graders were stopped.
"""

from __future__ import annotations

import signal
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

    anyio is imported here, when a command runs: ``--help`` and usage errors do without it.
    """
    import anyio

    interrupt = Interrupt()

    async def main() -> int:
        code = EXIT_OK
        async with anyio.create_task_group() as tg:

            async def watch() -> None:
                with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
                    async for received in signals:
                        interrupt.received = received
                        tg.cancel_scope.cancel()
                        return

            tg.start_soon(watch)
            code = await body(interrupt)
            tg.cancel_scope.cancel()
        return code

    try:
        code = anyio.run(main)
    except BaseException as exc:  # every exception: sorted below; anything else re-raised
        found = find_cause(exc, WazaError)
        if found is None:
            raise
        return fail(found)
    if interrupt.received is not None:
        name = signal.Signals(interrupt.received).name
        done = interrupt.summary() if interrupt.summary else ""
        print(f"waza: interrupted by {name}" + (f"; {done}" if done else ""), file=sys.stderr)
        return EXIT_SIGNAL_BASE + interrupt.received
    return code


def configure_logging(verbose: int) -> None:
    """Logs to stderr (structlog, loaded on the first line logged); warnings by default, -v info, -vv debug."""
    configure(verbose, Redactor().text)
