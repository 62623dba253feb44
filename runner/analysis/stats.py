"""Statistics shared by the analysis commands: seeded bootstrap intervals.

Plain standard library (``random`` with a seed, ``statistics``) so results are
reproducible from ``--seed`` and need no numeric stack.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Interval:
    """A point estimate with a percentile bootstrap interval."""

    estimate: float
    low: float
    high: float
    level: float

    def to_dict(self) -> dict[str, float]:
        return {"estimate": self.estimate, "low": self.low, "high": self.high, "level": self.level}


def mean(values: Sequence[float]) -> float:
    return math.fsum(values) / len(values)


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
    estimates = sorted(statistic([values[rng.randrange(n)] for _ in range(n)]) for _ in range(resamples))
    alpha = (1.0 - level) / 2.0
    low = estimates[int(math.floor(alpha * (resamples - 1)))]
    high = estimates[int(math.ceil((1.0 - alpha) * (resamples - 1)))]
    return Interval(estimate=statistic(values), low=low, high=high, level=level)
