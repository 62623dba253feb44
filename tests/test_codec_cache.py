"""The compiled-codec cache: reused between runs, never trusted when it is not a valid cache.

Each check is a fresh ``python`` whose bytecode (and so the cache) goes under its own
``PYTHONPYCACHEPREFIX``; what a user relies on is that records decode and encode the
same whatever state the cache file is in.
"""

from __future__ import annotations

import marshal
import os
import subprocess
import sys
from pathlib import Path

import orjson

SCRIPT = """
import orjson
from waza.protocol.records import CaptureResult, PromptCase
case = PromptCase.from_dict({"id": "q1", "input": "hi", "extra": 1})
result = CaptureResult.from_dict({"id": "q1", "input": "hi", "output": "ok", "trajectory": [{"type": "message", "timestamp": 1, "content": "ok"}], "timing": {"start": 0, "end": 1, "total": 1}})
print(orjson.dumps([case.to_dict(), result.to_dict()]).decode())
"""


def run(prefix: Path, **env: str) -> object:
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT],
        env={
            **{k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"},
            "PYTHONPYCACHEPREFIX": str(prefix),
            **env,
        },
        capture_output=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr.decode()
    return orjson.loads(done.stdout)


def cache_file(prefix: Path) -> Path | None:
    found = list(prefix.rglob("codec_cache.*.codecs"))
    return found[0] if found else None


def test_a_second_run_reuses_the_compiled_codecs(tmp_path: Path) -> None:
    first = run(tmp_path)
    path = cache_file(tmp_path)
    assert path is not None
    written = path.read_bytes()
    assert run(tmp_path) == first
    assert path.read_bytes() == written  # every codec found: nothing compiled, nothing rewritten


def test_a_damaged_or_foreign_cache_is_compiled_past_and_replaced(tmp_path: Path) -> None:
    expected = run(tmp_path)
    path = cache_file(tmp_path)
    assert path is not None
    good = path.read_bytes()
    for damage in (b"", b"not marshal", good[: len(good) // 2], marshal.dumps({"x": 1}), marshal.dumps([1])):
        path.write_bytes(damage)
        assert run(tmp_path) == expected
        assert path.read_bytes() == good
    path.unlink()
    os.mkfifo(path)  # not a regular file: ignored (without waiting for a writer), and the run still works
    assert run(tmp_path) == expected
    path.unlink()
    path.mkdir()
    assert run(tmp_path) == expected


def test_no_cache_is_written_when_python_writes_no_bytecode(tmp_path: Path) -> None:
    assert run(tmp_path / "off", PYTHONDONTWRITEBYTECODE="1") == run(tmp_path / "on")
    assert cache_file(tmp_path / "off") is None
    assert cache_file(tmp_path / "on") is not None
