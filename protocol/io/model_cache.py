"""An on-disk cache of model answers: the same question to the same model is paid for once.

A key is the SHA-256 of everything that decides an answer, as canonical JSON
(keys sorted): the endpoint URL (or, for a server waza starts itself on a new
port each run, the model it serves), or the judge command with the content of
the program it runs (:func:`file_identity`: the same command line in another
project, or after the script was edited, is another key); the request body
(model, messages, temperature, max_tokens, response_format, seed) or the
command's stdin, and for agent calls in trials the trial number. Only answers
that were used are stored: an HTTP error, a failed command or a reply that did
not parse is never written, so it is asked again next time; an entry that is
read back and does not hold a usable answer is asked again and overwritten.

Secrets are masked (``waza.protocol.io.secrets``) before an answer is written: a
judge that quotes back a key the agent printed, or a server that echoes the
Authorization header, leaves ``[REDACTED]`` in the cache, as in the records.

Each entry is one small JSON file, ``<dir>/calls/<2 hex>/<64 hex>.json``,
written to a temporary file in the same folder and renamed into place, so
concurrent writers (``-j``, several waza processes) never leave a torn entry:
the last rename wins and both answers were valid. An entry that cannot be read
(truncated by a full disk, a symlink, not a regular file, too large) is a
miss; nothing in the folder is opened in a way that could block (a FIFO) or
follow a symlink. The folder is ``$WAZA_CACHE_DIR``, else ``$XDG_CACHE_HOME/waza``, else
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

from .secrets import Redactor

__all__ = ["STATS", "cache_dir", "clear", "count", "file_identity", "key_of", "load", "store"]

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


def load(key: str) -> dict[str, Any] | None:
    """The stored entry for ``key``, or None; the caller checks it holds a usable answer, then :func:`count`."""
    return _read(_entry(key))


def count(kind: str, hit: bool) -> None:
    """Count one ``kind`` lookup (``judge`` or ``agent``) as a hit or a miss, for the run summary."""
    STATS[f"{kind} {'hit' if hit else 'miss'}"] += 1


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


_redactor: Redactor | None = None


def store(key: str, value: dict[str, Any]) -> None:
    """Write an answer, its secrets masked, atomically (temp file + rename); a cache that cannot be written is skipped."""
    global _redactor
    if _redactor is None:
        _redactor = Redactor()
    value = _redactor.mask_json(value)
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
    """Remove every cached answer; returns how many there were.

    ``calls`` is looked at without following it: a symlink or anything else
    that is not a folder (a FIFO a test or a user left there) is unlinked, never
    opened, so clearing cannot block and never removes what a link points to."""
    calls = cache_dir() / "calls"
    try:
        info = os.lstat(calls)
    except FileNotFoundError:
        return 0
    if not stat.S_ISDIR(info.st_mode):
        calls.unlink()
        return 0
    found = sum(1 for _, _, files in os.walk(calls) for name in files if name.endswith(".json") and not name.startswith("."))
    shutil.rmtree(calls, ignore_errors=True)
    return found


#: Identities already computed in this process, by (path, device, inode, size, mtime): a file is hashed once.
_identities: dict[tuple[str, int, int, int, int], str] = {}
#: A program file larger than this is known by its size and mtime (hashing it would cost more than a judge call).
MAX_HASHED = 256 * 1024 * 1024


def file_identity(path: str) -> str | None:
    """What a program file is, for a cache key: its real path and the SHA-256 of its bytes (None: no such file).

    Opened without blocking and read only when it is a regular file, so a FIFO
    among a command's arguments is not read."""
    real = os.path.realpath(path)
    try:
        fd = os.open(real, os.O_RDONLY | os.O_NONBLOCK)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as f:
        info = os.fstat(f.fileno())
        if not stat.S_ISREG(info.st_mode):
            return None
        memo = (real, info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns)
        known = _identities.get(memo)
        if known is None:
            if info.st_size > MAX_HASHED:
                known = f"{real} size={info.st_size} mtime={info.st_mtime_ns}"
            else:
                known = f"{real} sha256={hashlib.file_digest(f, 'sha256').hexdigest()}"
            _identities[memo] = known
        return known
