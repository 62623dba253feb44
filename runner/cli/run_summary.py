"""The closing lines of a command that ran prompts, and its exit code: the command line's, not the engine's.

The engine counts (a run's ``Tally``, its ``ErrorDigest``); what a ``waza`` command prints about them on stderr,
the ``--fail-under`` gate and the exit code it ends with are decided here.
"""

from __future__ import annotations

import sys

from waza.runner.analysis.error_digest import ErrorDigest
from waza.runner.analysis.pass_rate import describe_pass_rate
from waza.runner.engine.cache_summary import print_cache_line
from waza.runner.engine.outputs import Tally

#: Every result passed or failed, and every gate was met.
OK = 0
#: A ``--fail-under`` gate was missed, or a result ended as an error.
FAILED = 1


def finish_run(tally: Tally, gates: dict[str, float], *, skipped: int = 0, errors: ErrorDigest | None = None) -> int:
    """Print a run's summary (and why results errored) on stderr; its exit code (1: a gate missed or a result errored)."""
    line = tally.describe()
    if skipped:
        line += f" ({skipped} already done, skipped)"
    rate = describe_pass_rate(tally.statuses["passed"], tally.statuses["failed"], tally.statuses["error"])
    if rate:
        line += f"; {rate}"
    score = tally.mean_score()
    if score is not None:
        line += f"; mean score {score:.3f}"
    print(f"waza: {line}", file=sys.stderr)
    print_cache_line()
    if errors is not None:
        errors.print()
    missed = tally.missed_gates(gates)
    if missed:
        print(f"waza: --fail-under not met: {'; '.join(missed)}", file=sys.stderr)
        return FAILED
    return FAILED if tally.statuses["error"] else OK


__all__ = ["FAILED", "OK", "finish_run"]
