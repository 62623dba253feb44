"""Where an analysis command writes: a file, or stdout for ``-``.

A file is written under a temporary name and renamed into place when the
command finishes, so a report that failed half-way never replaces a good one
and a reader never sees half a file; stdout is written through and flushed.
What is not a regular file (``/dev/null``, a FIFO, ``/dev/stdout``) is written
through as a shell redirection would: renaming over it would replace the device
or pipe with a file. A symlink is followed, and the file it names is replaced.
"""

from __future__ import annotations

import contextlib
import os
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import IO

from waza.protocol.errors import ConfigError


@contextlib.contextmanager
def output_stream(path: str) -> Iterator[IO[bytes]]:
    if path == "-":
        yield sys.stdout.buffer
        sys.stdout.buffer.flush()
        return
    target = Path(os.path.realpath(path))
    if target.is_dir():
        raise ConfigError(f"-o {path} is a directory")
    if target.exists() and not target.is_file():
        with open(target, "wb") as through:
            yield through
        return
    directory = target.parent if str(target.parent) else Path(".")
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", dir=directory)
    except OSError as exc:
        raise ConfigError(f"-o {path}: cannot write there ({exc.strerror or exc})") from None
    mask = os.umask(0)
    os.umask(mask)
    os.fchmod(fd, 0o666 & ~mask)
    try:
        with os.fdopen(fd, "wb") as stream:
            yield stream
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
