"""The one pass rate waza shows: passed / (passed + failed), errors left out and counted apart.

The definition ``waza compare`` uses by default (``--errors exclude``): an
errored result says nothing about the agent (the agent would not start, a
grader crashed), so it is neither a pass nor a fail; it is counted and shown
beside the rate instead. The mean score leaves errors out the same way. The terminal summary, ``--fail-under pass_rate``,
``waza report`` and ``waza view`` all use this module, and say so beside the
figure. (A run with an errored result still exits 1.)
"""

from __future__ import annotations

__all__ = ["DEFINITION", "describe_pass_rate", "describe_trials_pass_rate", "pass_rate", "trials_pass_rate"]

#: What the figure means, written beside it wherever it is shown.
DEFINITION = "passed / (passed + failed), errors counted apart"


def pass_rate(passed: int, failed: int) -> float | None:
    """passed / (passed + failed); None when nothing was judged."""
    judged = passed + failed
    return passed / judged if judged else None


def trials_pass_rate(statuses: list[str]) -> float | None:
    """One prompt's trials by the same count (whatever ``--errors`` policy the trials file was written with)."""
    return pass_rate(statuses.count("passed"), statuses.count("failed"))


def describe_pass_rate(passed: int, failed: int, errors: int) -> str:
    """``pass rate 0.833 (5/6 = passed / (passed + failed); 2 errors counted apart)``; "" when nothing was judged."""
    rate = pass_rate(passed, failed)
    if rate is None:
        return ""
    apart = f"; {errors} error{'s' if errors != 1 else ''} counted apart" if errors else ""
    return f"pass rate {rate:.3f} ({passed}/{passed + failed} = passed / (passed + failed){apart})"


def describe_trials_pass_rate(rates: list[float], errors: int) -> str:
    """Trials files: the mean over prompts of each prompt's pass rate over its trials, said so; "" when none was judged."""
    if not rates:
        return ""
    apart = f"; {errors} errored trial{'s' if errors != 1 else ''} counted apart" if errors else ""
    return f"pass rate {sum(rates) / len(rates):.3f} (mean over {len(rates)} prompts of passed / (passed + failed) trials{apart})"
