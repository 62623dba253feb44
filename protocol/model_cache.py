"""An on-disk cache of model answers: the same question to the same model is paid for once.

A key is the SHA-256 of everything that decides an answer, as canonical JSON
(keys sorted): the endpoint URL or the judge command, the request body (model,
messages, temperature, max_tokens, response_format, seed) or the command's
stdin, and for agent calls in trials the trial number. Only answers that were
used are stored: an HTTP error, a failed command or a reply that did not parse
is never written, so it is asked again next time.

Each entry is one small JSON file, ``<dir>/calls/<2 hex>/<64 hex>.json``,
written to a temporary file in the same folder and renamed into place, so
concurrent writers (``-j``, several waza processes) never leave a torn entry:
the last rename wins and both answers were valid. An entry that cannot be read
(truncated by a full disk, a symlink, not a regular file, too large) is a
miss. The folder is ``$WAZA_CACHE_DIR``, else ``$XDG_CACHE_HOME/waza``, else
``~/.cache/waza``; ``waza cache clear`` empties it.

Hits and misses are counted per process (:data:`STATS`) for the run summary.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import stat
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

import orjson

__all__ = ["STATS", "cache_dir", "clear", "key_of", "load", "store"]

#: An entry larger than this is not read (a cache file is a few KiB; this is a bound, not a size).
MAX_ENTRY = 16 * 1024 * 1024
#: Counts of this process's lookups: ``judge hit``, ``judge miss``, ``agent hit``, ``agent miss``.
STATS: Counter[str] = Counter()


def cache_dir() -> Path:
    """Where the cache lives: $WAZA_CACHE_DIR, else $XDG_CACHE_HOME/waza, else ~/.cache/waza."""
    explicit = os.environ.get("WAZA_CACHE_DIR")
    if explicit:
        return Path(explicit)
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "waza"


def key_of(parts: dict[str, Any]) -> str:
    """The cache key of a call: a hash of its canonical JSON (so key order never matters)."""
    return hashlib.sha256(orjson.dumps(parts, option=orjson.OPT_SORT_KEYS)).hexdigest()


def _entry(key: str) -> Path:
    return cache_dir() / "calls" / key[:2] / f"{key}.json"


def load(key: str, kind: str) -> dict[str, Any] | None:
    """The stored answer for ``key``, or None (counted as a ``kind`` hit or miss)."""
    value = _read(_entry(key))
    STATS[f"{kind} {'hit' if value is not None else 'miss'}"] += 1
    return value


def _read(path: Path) -> dict[str, Any] | None:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as f:
        info = os.fstat(f.fileno())
        if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_ENTRY:
            return None
        data = f.read(MAX_ENTRY + 1)
    try:
        value = orjson.loads(data)
    except orjson.JSONDecodeError:
        return None
    return value if isinstance(value, dict) else None


def store(key: str, value: dict[str, Any]) -> None:
    """Write an answer atomically (temp file + rename); a cache that cannot be written is skipped."""
    path = _entry(key)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, temp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=".json")
    except OSError:
        return
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(orjson.dumps(value))
        os.replace(temp, path)
    except OSError:
        Path(temp).unlink(missing_ok=True)


def clear() -> int:
    """Remove every cached answer; returns how many there were."""
    calls = cache_dir() / "calls"
    count = sum(1 for _ in calls.glob("*/*.json")) if calls.is_dir() else 0
    shutil.rmtree(calls, ignore_errors=True)
    return count
