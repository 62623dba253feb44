"""Statistics shared by the analysis commands: seeded bootstrap intervals.

Plain standard library (``random`` with a seed, ``statistics``) so results are
reproducible from ``--seed`` and need no numeric stack.
"""

from __future__ import annotations

import math
import random
from collections import Counter
from collections.abc import Callable, Sequence

import msgspec


class Interval(msgspec.Struct, frozen=True):
    """A point estimate with a percentile bootstrap interval."""

    estimate: float
    low: float
    high: float
    level: float

    def to_dict(self) -> dict[str, float]:
        return {"estimate": self.estimate, "low": self.low, "high": self.high, "level": self.level}


def mean(values: Sequence[float]) -> float:
    return math.fsum(values) / len(values)


#: A resample of the mean is drawn as counts per distinct value (one binomial draw each) instead of n
#: draws when there are at least this many values per distinct value: the same distribution, at a cost
#: that does not grow with n (pass/fail differences take three values whatever the number of prompts).
COUNTS_FACTOR = 32


def _resampled_mean(counts: list[tuple[float, int]], n: int, rng: random.Random) -> float:
    """The mean of n draws with replacement from values held ``counts`` times each (a multinomial, drawn
    as one binomial per distinct value given what is left)."""
    left, rest, total = n, 1.0, 0.0
    for value, held in counts[:-1]:
        p = held / n
        k = binomial(rng, left, min(1.0, p / rest)) if left else 0
        total += value * k
        left -= k
        rest -= p
    total += counts[-1][0] * left
    return total / n


def binomial(rng: random.Random, n: int, p: float) -> int:
    """A Binomial(n, p) draw from ``rng``: geometric skipping for a small mean, else Hörmann's BTRS
    (the algorithms of Python 3.12's ``random.binomialvariate``, here so 3.11 draws the same numbers)."""
    if n <= 0 or p <= 0.0:
        return 0
    if p >= 1.0:
        return n
    if p > 0.5:
        return n - binomial(rng, n, 1.0 - p)
    if n * p < 10.0:
        c = math.log(1.0 - p)
        if not c:
            return 0
        x = y = 0
        while True:
            y += math.floor(math.log(1.0 - rng.random()) / c) + 1
            if y > n:
                return x
            x += 1
    spq = math.sqrt(n * p * (1.0 - p))
    b = 1.15 + 2.53 * spq
    a = -0.0873 + 0.0248 * b + 0.01 * p
    c = n * p + 0.5
    vr = 0.92 - 4.2 / b
    alpha = (2.83 + 5.1 / b) * spq
    lpq = math.log(p / (1.0 - p))
    m = math.floor((n + 1) * p)
    h = math.lgamma(m + 1) + math.lgamma(n - m + 1)
    while True:
        u = rng.random() - 0.5
        v = rng.random()
        us = 0.5 - abs(u)
        k = math.floor((2.0 * a / us + b) * u + c)
        if k < 0 or k > n:
            continue
        if us >= 0.07 and v <= vr:
            return k
        v = math.log(v * alpha / (a / (us * us) + b))
        if v <= h - math.lgamma(k + 1) - math.lgamma(n - k + 1) + (k - m) * lpq:
            return k


def bootstrap_ci(
    values: Sequence[float],
    *,
    statistic: Callable[[Sequence[float]], float] = mean,
    resamples: int = 2000,
    level: float = 0.95,
    seed: int = 0,
) -> Interval | None:
    """Percentile bootstrap of ``statistic`` over ``values`` (None for no values).

    For a paired comparison pass the per-item differences: resampling items keeps
    each pair together, which is what makes the interval paired.
    """
    if not values:
        return None
    rng = random.Random(seed)
    n = len(values)
    distinct = Counter(values) if statistic is mean else None
    if distinct is not None and len(distinct) * COUNTS_FACTOR <= n:
        estimates = sorted(_resampled_mean(sorted(distinct.items()), n, rng) for _ in range(resamples))
    else:
        estimates = sorted(statistic([values[rng.randrange(n)] for _ in range(n)]) for _ in range(resamples))
    alpha = (1.0 - level) / 2.0
    low = estimates[math.floor(alpha * (resamples - 1))]
    high = estimates[math.ceil((1.0 - alpha) * (resamples - 1))]
    return Interval(estimate=statistic(values), low=low, high=high, level=level)


def wilson(successes: int, n: int, level: float = 0.95) -> tuple[float, float]:
    """The Wilson score interval on a proportion: it stays inside [0, 1] and keeps its coverage at the
    handful of trials an agent eval runs, where the normal approximation comes out too narrow."""
    if n < 1 or not 0 <= successes <= n:
        raise ValueError(f"need 0 <= successes <= n and n >= 1, got {successes} of {n}")
    from statistics import NormalDist

    z = NormalDist().inv_cdf(0.5 + level / 2)
    p = successes / n
    denominator = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denominator
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denominator
    return max(0.0, centre - half), min(1.0, centre + half)
