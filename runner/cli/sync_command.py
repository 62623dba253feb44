"""Running a synchronous analysis command to an exit code.

The analysis commands (summarize, balance, compare, report) read files and
compute; they have no agents or graders to cancel, so they need no event loop.
They still owe the user waza's exit codes: a bad input is one line on stderr
and exit 2, an interrupt is 130/143 with no half-written output file left
behind (the ``finally`` blocks of :mod:`.sink` run), and a closed pipe
(``waza summarize | head``) ends quietly instead of with a traceback.
"""

from __future__ import annotations

import signal
import sys
from collections.abc import Callable

from waza.protocol.errors import WazaError
from waza.runner.cli.runtime import EXIT_SIGNAL_BASE, fail, reader_went_away


class _Terminated(BaseException):
    """SIGTERM turned into an exception so cleanup runs."""


def _on_term(signum: int, frame: object) -> None:
    raise _Terminated()


def run_sync(body: Callable[[], int]) -> int:
    previous = signal.signal(signal.SIGTERM, _on_term)
    try:
        return body()
    except WazaError as exc:
        return fail(exc)
    except KeyboardInterrupt:
        print("waza: interrupted by SIGINT", file=sys.stderr)
        return EXIT_SIGNAL_BASE + signal.SIGINT
    except _Terminated:
        print("waza: interrupted by SIGTERM", file=sys.stderr)
        return EXIT_SIGNAL_BASE + signal.SIGTERM
    except BrokenPipeError:
        return reader_went_away()
    finally:
        signal.signal(signal.SIGTERM, previous)
