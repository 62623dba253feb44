"""What ``-o`` names is written as a shell redirection would write it, whatever kind of file it is.

An analysis command (summarize, compare, report, export, balance) writes a regular
file under a temporary name and renames it into place; a device, a FIFO or a
symlink must not be replaced by that rename (``-o /dev/null`` once turned the
machine's /dev/null into a regular file).
"""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import threading
from pathlib import Path

RESULT = '{"id":"a","input":"q","output":"answer","status":"passed"}\n'


def _summarize(tmp_path: Path, target: str) -> subprocess.CompletedProcess[str]:
    (tmp_path / "results.jsonl").write_text(RESULT)
    return subprocess.run(
        [sys.executable, "-m", "waza", "summarize", "results.jsonl", "-o", target],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_dev_null_stays_a_device() -> None:
    import tempfile

    with tempfile.TemporaryDirectory() as folder:
        done = _summarize(Path(folder), os.devnull)
    assert done.returncode == 0, done.stderr
    assert stat.S_ISCHR(os.stat(os.devnull).st_mode)


def test_a_fifo_is_written_through_and_stays_a_fifo(tmp_path: Path) -> None:
    fifo = tmp_path / "out.fifo"
    os.mkfifo(fifo)
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_bytes()), daemon=True)
    reader.start()
    done = _summarize(tmp_path, str(fifo))
    reader.join(60)
    assert done.returncode == 0, done.stderr
    assert b'"id":"a"' in got[0]
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)


def test_a_symlink_is_followed_and_kept(tmp_path: Path) -> None:
    (tmp_path / "real.json").write_text("old")
    (tmp_path / "link.json").symlink_to("real.json")
    done = _summarize(tmp_path, "link.json")
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "link.json").is_symlink()
    assert '"id":"a"' in (tmp_path / "real.json").read_text()
