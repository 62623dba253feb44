"""Paired statistics for comparing two runs over the same prompts.

Two runs of one prompt set are not independent samples: the same hard prompt
is hard in both. Pairing on the prompt id and working on per-prompt
differences removes that shared difficulty, which is why the interval here is
a bootstrap over *differences* and the pass/fail test is McNemar's, which looks
only at the prompts whose verdict changed.
"""

from __future__ import annotations

from collections.abc import Sequence

from waza.protocol.analysis_records import Difference, McNemar
from waza.runner.analysis.stats import bootstrap_ci, mean


def mcnemar_exact(b: int, c: int) -> float:
    """Two-sided exact McNemar p-value from the discordant counts b and c.

    Under the null hypothesis each discordant pair is equally likely to go
    either way, so min(b, c) is Binomial(b + c, 1/2); the p-value doubles its
    lower tail (capped at 1). Integer arithmetic keeps it exact for any n.
    """
    if b < 0 or c < 0:
        raise ValueError("discordant counts must be non-negative")
    n = b + c
    if n == 0:
        return 1.0
    term = tail = 1  # C(n, 0); each next term from the last, exactly: C(n, i + 1) = C(n, i) * (n - i) / (i + 1)
    for i in range(min(b, c)):
        term = term * (n - i) // (i + 1)
        tail += term
    return min(1.0, 2 * tail / (1 << n))


def mcnemar_table(pairs: Sequence[tuple[bool, bool]]) -> McNemar:
    """The 2x2 table of (baseline pass, candidate pass) pairs and its exact p-value."""
    both_pass = sum(1 for a, b in pairs if a and b)
    baseline_only = sum(1 for a, b in pairs if a and not b)
    candidate_only = sum(1 for a, b in pairs if b and not a)
    both_fail = len(pairs) - both_pass - baseline_only - candidate_only
    return McNemar(
        both_pass=both_pass,
        baseline_only=baseline_only,
        candidate_only=candidate_only,
        both_fail=both_fail,
        p_value=mcnemar_exact(baseline_only, candidate_only),
    )


def paired_difference(pairs: Sequence[tuple[float, float]], *, seed: int, resamples: int, level: float) -> Difference | None:
    """Mean of (candidate - baseline) with a bootstrap interval over prompts; None without pairs."""
    if not pairs:
        return None
    diffs = [b - a for a, b in pairs]
    interval = bootstrap_ci(diffs, seed=seed, resamples=resamples, level=level)
    assert interval is not None
    return Difference(
        pairs=len(pairs),
        baseline=mean([a for a, _ in pairs]),
        candidate=mean([b for _, b in pairs]),
        difference=interval.estimate,
        low=interval.low,
        high=interval.high,
        level=level,
    )
