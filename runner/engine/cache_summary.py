"""The model cache's line in a run summary: hits and misses of judge and agent calls, on stderr."""

from __future__ import annotations

import sys

__all__ = ["print_cache_line"]

_MODEL_CACHE = "waza.protocol.io.model_cache"


def print_cache_line() -> None:
    """``waza: model cache: judge 3 hits, 1 miss; ...`` when this run looked anything up (in-process calls).

    A run whose judges and agent never imported the cache looked nothing up: the
    line is skipped without loading the cache module (hashlib, tempfile) for it.
    """
    model_cache = sys.modules.get(_MODEL_CACHE)
    if model_cache is None:
        return
    parts = []
    for kind in ("judge", "agent"):
        hits, misses = model_cache.STATS[f"{kind} hit"], model_cache.STATS[f"{kind} miss"]
        if hits or misses:
            parts.append(f"{kind} {hits} hit{'s' * (hits != 1)}, {misses} miss{'es' * (misses != 1)}")
    if parts:
        print(f"waza: model cache ({model_cache.cache_dir()}): {'; '.join(parts)}", file=sys.stderr)
