"""Where an analysis command writes: a file, or stdout for ``-``.

A file is written under a temporary name and renamed into place when the
command finishes, so a report that failed half-way never replaces a good one
and a reader never sees half a file; stdout is written through and flushed.
What is not a regular file (``/dev/null``, a FIFO, ``/dev/stdout``) is written
through as a shell redirection would: renaming over it would replace the device
or pipe with a file. A symlink is followed, and the file it names is replaced.
``durable``: the new file is on disk (file and folder synced) before
``output_stream`` returns, for a file that replaces data a crash must not lose.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import IO

from waza.protocol.errors import ConfigError
from waza.protocol.io.stdout import stdout_bytes


@contextlib.contextmanager
def output_stream(path: str, *, durable: bool = False) -> Iterator[IO[bytes]]:
    if path == "-":
        out = stdout_bytes()  # a notebook's or redirect_stdout's text stream has no byte buffer
        yield out
        out.flush()
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
            if durable:
                stream.flush()
                os.fsync(stream.fileno())
        os.replace(tmp, target)
        if durable:
            _sync_folder(directory)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def _sync_folder(directory: Path) -> None:
    """Make a rename in ``directory`` durable (a filesystem that cannot sync a folder is left to its own order)."""
    fd = os.open(directory, os.O_RDONLY)
    try:
        with contextlib.suppress(OSError):
            os.fsync(fd)
    finally:
        os.close(fd)
