"""The model cache's line in a run summary: hits and misses of judge and agent calls, on stderr."""

from __future__ import annotations

import sys

from waza.protocol.model_cache import STATS, cache_dir

__all__ = ["print_cache_line"]


def print_cache_line() -> None:
    """``waza: model cache: judge 3 hits, 1 miss; ...`` when this run looked anything up (in-process calls)."""
    parts = []
    for kind in ("judge", "agent"):
        hits, misses = STATS[f"{kind} hit"], STATS[f"{kind} miss"]
        if hits or misses:
            parts.append(f"{kind} {hits} hit{'s' * (hits != 1)}, {misses} miss{'es' * (misses != 1)}")
    if parts:
        print(f"waza: model cache ({cache_dir()}): {'; '.join(parts)}", file=sys.stderr)
