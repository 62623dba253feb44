"""The compiled-code cache (codecs, and the methods dataclasses writes for waza's classes): reused between runs, never trusted when it is not a valid cache.

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
from types import CodeType

import orjson

SCRIPT = """
import dataclasses
import orjson
from waza.protocol.records import CaptureResult, PromptCase

@dataclasses.dataclass(frozen=True)
class Mine:  # not waza's: built by the builtin exec, never cached
    users_own_field: int = 1

assert Mine() == Mine() and Mine(2).users_own_field == 2
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
    found = list(prefix.rglob("code_cache.*.code"))
    return found[0] if found else None


def valid_entries(data: bytes) -> set[str]:
    """The sources a cache file holds, each checked to load as compiled code."""
    entries = marshal.loads(data)
    assert all(type(marshal.loads(blob)) is CodeType for blob in entries.values())
    return set(entries)


def test_a_second_run_reuses_the_compiled_codecs_and_methods(tmp_path: Path) -> None:
    first = run(tmp_path)
    path = cache_file(tmp_path)
    assert path is not None
    written = path.read_bytes()
    assert run(tmp_path) == first
    assert path.read_bytes() == written  # every codec and method found: nothing compiled, nothing rewritten
    sources = list(marshal.loads(written))
    assert any("def __init__(self" in s and "reference" in s for s in sources)  # PromptCase's generated __init__
    assert not any("users_own_field" in s for s in sources)  # a class outside waza and anyio is not cached


def test_runs_that_create_different_classes_add_to_one_cache(tmp_path: Path) -> None:
    run(tmp_path)
    path = cache_file(tmp_path)
    assert path is not None
    before = set(marshal.loads(path.read_bytes()))
    subprocess.run(
        [sys.executable, "-c", "import waza.runner.engine.specs"],
        env={**{k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}, "PYTHONPYCACHEPREFIX": str(tmp_path)},
        check=True,
    )
    after = set(marshal.loads(path.read_bytes()))
    assert before < after  # the specs' methods were added; the records' kept


def test_a_damaged_or_foreign_cache_is_compiled_past_and_replaced(tmp_path: Path) -> None:
    expected = run(tmp_path)
    path = cache_file(tmp_path)
    assert path is not None
    good = path.read_bytes()
    junk_entries = marshal.dumps(dict.fromkeys(marshal.loads(good), b"not marshal"))
    for damage in (b"", b"not marshal", good[: len(good) // 2], marshal.dumps({"x": 1}), marshal.dumps([1]), junk_entries):
        path.write_bytes(damage)
        assert run(tmp_path) == expected
        assert valid_entries(path.read_bytes()) == valid_entries(good)
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
