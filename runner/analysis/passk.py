"""Unbiased pass@k and pass^k from n trials with c passes.

pass@k (Chen et al. 2021) is the probability that at least one of k trials
drawn without replacement from the n observed passes:
``1 - C(n-c, k) / C(n, k)``. pass^k (Yao et al. 2024) is the probability that
all k pass: ``C(c, k) / C(n, k)``. The plug-in forms ``1 - (1 - c/n)^k`` and
``(c/n)^k`` are biased (with n=5, c=2 the plug-in pass@5 is 0.92 although every
draw of 5 from 5 includes a pass, so the estimate is 1.0).

Both are computed in exact integer arithmetic and divided once: Python's
int / int is correctly rounded, so the value is the float nearest the true
fraction (pass^3 with n=5, c=3 is 0.1, not 0.09999999999999999) and no
binomial ever has to fit a float, however large n is.
With k > n there is no draw of k trials to estimate from: the value is
``None`` (null in JSON), never a number.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

from waza.protocol.errors import ConfigError


def _check(n: int, c: int, k: int) -> None:
    if n < 0 or not 0 <= c <= n:
        raise ValueError(f"need 0 <= c <= n, got n={n}, c={c}")
    if k < 1:
        raise ValueError(f"k must be at least 1, got {k}")


def pass_at_k(n: int, c: int, k: int) -> float | None:
    """1 - C(n-c, k)/C(n, k), as one correctly rounded division; None when k > n."""
    _check(n, c, k)
    if k > n:
        return None
    if n - c < k:
        return 1.0  # every draw of k holds a pass
    total = math.comb(n, k)
    return (total - math.comb(n - c, k)) / total


def pass_hat_k(n: int, c: int, k: int) -> float | None:
    """C(c, k)/C(n, k), as one correctly rounded division; None when k > n."""
    _check(n, c, k)
    if k > n:
        return None
    if c < k:
        return 0.0
    return math.comb(c, k) / math.comb(n, k)


def by_k(n: int, c: int, ks: Iterable[int]) -> tuple[dict[str, float | None], dict[str, float | None]]:
    """(pass@k, pass^k) for each k, keyed by str(k) as the records store them."""
    ks = list(ks)
    return {str(k): pass_at_k(n, c, k) for k in ks}, {str(k): pass_hat_k(n, c, k) for k in ks}


#: The most trials a prompt may have: a prompt's trials are held until its last one is in, so the
#: number of trials bounds the memory of each prompt in flight (and a count that could never finish is refused).
MAX_TRIALS = 10_000


def check_trials(trials: int) -> int:
    """``trials`` when it is from 1 to MAX_TRIALS, else a ConfigError."""
    if not 1 <= trials <= MAX_TRIALS:
        shown = str(trials) if len(str(trials)) <= 20 else f"{str(trials)[:20]}..."
        raise ConfigError(f"must be from 1 to {MAX_TRIALS} trials per prompt, got {shown}", field="k")
    return trials


def parse_k_values(text: str | None, trials: int) -> list[int]:
    """``--k-values 1,3,5`` (default 1..trials); a k above -k could never be estimated, so it is refused."""
    check_trials(trials)
    if not text:
        return list(range(1, trials + 1))
    ks: list[int] = []
    for part in text.split(","):
        part = part.strip()
        try:
            k = int(part)
        except ValueError:
            raise ConfigError(f"k_values= takes whole numbers, got {part!r}") from None
        if k < 1:
            raise ConfigError(f"k_values= must be at least 1, got {k}")
        if k > trials:
            raise ConfigError(f"k_values={k} exceeds k={trials}: pass@{k} needs at least {k} trials per prompt")
        if k not in ks:
            ks.append(k)
    return sorted(ks)
