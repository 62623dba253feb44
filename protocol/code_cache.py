"""Generated code compiled once and kept between runs, beside this package's bytecode.

waza generates Python source at import and on first use: the methods
``dataclasses`` writes for each of waza's record and spec classes, and the
record codecs. Compiling that source was the largest part of what creating those
classes cost, every run, for the same text: a tenth of a one-prompt capture's
instructions. Entries are keyed by the whole generated source text, so an entry
is only ever used for exactly the code it was compiled from; when a class
changes, its new source misses and is compiled (the old entry is merely unused).

The file sits where Python keeps this module's bytecode (``__pycache__``, or
under ``PYTHONPYCACHEPREFIX``), with its version tag in the name, and is trusted
as that bytecode is. Each entry stays marshalled until it is used, so reading the
file costs little however many classes other commands created. New entries are
written once, at exit, merged with what other runs wrote meanwhile, and only when
Python writes bytecode; a file that is missing, not a regular file, too large or
not a valid cache is compiled past and replaced, and a place that cannot be
written costs the saving, never the run.
"""

from __future__ import annotations

import atexit
import dataclasses
import marshal
import os
import stat
import sys
from types import CodeType
from typing import Any

__all__ = ["cache_dataclass_methods", "compiled"]

#: Bounds on what is read back: a cache that outgrows them (code of many past versions) starts again.
_MAX_BYTES = 8 << 20
_MAX_ENTRIES = 2000

_cached = getattr(sys.modules[__name__], "__cached__", None)
_PATH: str | None = _cached[: -len(".pyc")] + ".code" if _cached and _cached.endswith(".pyc") else None
#: Whose classes' methods are cached: waza's own, and anyio's, which every run imports (68 methods, 3 % of a
#: one-prompt capture when compiled each time).
_CACHED_MODULES = ("waza.", "anyio.")
_entries: dict[str, bytes] | None = None
_new: dict[str, bytes] = {}


def compiled(source: str) -> CodeType:
    """The code object of ``source`` (as ``compile(source, "<string>", "exec")``), from the cache when there."""
    global _entries
    if _entries is None:
        _entries = _read(_PATH) if _PATH else {}
    blob = _entries.get(source)
    if blob is not None:
        try:
            code = marshal.loads(blob)
        except (EOFError, ValueError, TypeError):
            code = None
        if type(code) is CodeType:
            return code
    code = compile(source, "<string>", "exec")
    if _PATH and not sys.dont_write_bytecode:
        if not _new:
            atexit.register(_save, _PATH)
        _entries[source] = _new[source] = marshal.dumps(code)
    return code


def cache_dataclass_methods() -> None:
    """Have ``dataclasses`` compile the methods of waza's (and anyio's) classes through this cache.

    ``dataclasses`` builds each method by calling ``exec`` on generated source; a
    module-level ``exec`` in its namespace takes the place of the builtin. Ours
    hands the source of classes defined in the modules of ``_CACHED_MODULES`` to
    :func:`compiled` and everything else to the builtin unchanged, so other
    classes in the process (a user's own, with the Python API) are built exactly
    as before. Should a Python version stop calling ``exec`` by name, this does
    nothing.
    """
    if getattr(dataclasses, "exec", None) is None:
        setattr(dataclasses, "exec", _dataclass_exec)  # noqa: B010 - mypy knows no such attribute


def _dataclass_exec(source: Any, globals: dict[str, Any] | None = None, locals: Any = None) -> None:  # noqa: A002
    if type(source) is str and globals is not None and str(globals.get("__name__", "")).startswith(_CACHED_MODULES):
        source = compiled(source)
    exec(source, globals, locals)  # noqa: S102 - the generated source dataclasses asked to run


def _read(path: str) -> dict[str, bytes]:
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
    if not all(type(k) is str and type(v) is bytes for k, v in entries.items()):
        return {}
    return entries


def _save(path: str) -> None:
    """Add this run's new entries to the file, replacing it whole (a concurrent reader sees old or new, never half)."""
    entries = {**_read(path), **_new}
    if len(entries) > _MAX_ENTRIES:
        entries = dict(_new)
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
