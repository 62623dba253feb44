"""Compiled record codecs kept between runs, beside this package's bytecode.

A codec's generated source is short, but compiling it was most of what building a
codec cost, and every run built the same ones again: a few percent of a one-prompt
capture. Entries are keyed by the whole generated source text, so an entry is only
ever used for exactly the code it was compiled from; when a record class changes,
its new source misses and is compiled (the old entry is merely unused).

The file sits where Python keeps this module's bytecode (``__pycache__``, or under
``PYTHONPYCACHEPREFIX``), with its version tag in the name, and is trusted as that
bytecode is. It is written only when Python writes bytecode; a file that is missing,
not a regular file, too large or not a valid cache is compiled past and replaced,
and a place that cannot be written costs the saving, never the run.
"""

from __future__ import annotations

import marshal
import os
import stat
import sys
from types import CodeType

__all__ = ["compiled"]

#: Bounds on what is read back: a cache that outgrows them (code of many past versions) starts again.
_MAX_BYTES = 4 << 20
_MAX_ENTRIES = 500

_cached = getattr(sys.modules[__name__], "__cached__", None)
_PATH: str | None = _cached[: -len(".pyc")] + ".codecs" if _cached and _cached.endswith(".pyc") else None
_entries: dict[str, CodeType] | None = None


def compiled(source: str) -> CodeType:
    """The code object of ``source`` (as ``compile(source, "<string>", "exec")``), from the cache when there."""
    global _entries
    if _entries is None:
        _entries = _read(_PATH) if _PATH else {}
    code = _entries.get(source)
    if code is None:
        code = compile(source, "<string>", "exec")
        _entries[source] = code
        if _PATH and not sys.dont_write_bytecode:
            _write(_PATH, _entries)
    return code


def _read(path: str) -> dict[str, CodeType]:
    try:  # non-blocking, so that a FIFO put in its place cannot stall the run
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
    except OSError:
        return {}
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_size > _MAX_BYTES:
            return {}
        with open(fd, "rb", closefd=False) as f:
            data = f.read(_MAX_BYTES + 1)
    except OSError:
        return {}
    finally:
        os.close(fd)
    try:
        entries = marshal.loads(data)
    except (EOFError, ValueError, TypeError):
        return {}
    if type(entries) is not dict or len(entries) > _MAX_ENTRIES:
        return {}
    if not all(type(k) is str and type(v) is CodeType for k, v in entries.items()):
        return {}
    return entries


def _write(path: str, entries: dict[str, CodeType]) -> None:
    """Replace the file whole (a concurrent run reads the old or the new one, never half of one)."""
    part = f"{path}.{os.getpid()}.part"
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(part, "wb") as f:
            f.write(marshal.dumps(entries))
        os.replace(part, path)
    except OSError:
        try:
            os.unlink(part)
        except OSError:
            pass
