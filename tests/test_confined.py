"""The confined open on real files, through openat2 and through the per-component fallback for older kernels."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from waza.protocol.io import confined
from waza.protocol.io.confined import Refused, open_regular, relative_parts, replace_file


@pytest.fixture(params=["openat2", "component walk"])
def mode(request: pytest.FixtureRequest) -> Iterator[str]:
    saved = confined._have_openat2
    if request.param == "openat2" and not saved:
        pytest.skip("this kernel has no openat2")
    confined._have_openat2 = request.param == "openat2"
    yield request.param
    confined._have_openat2 = saved


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    (tmp_path / "outside.txt").write_text("secret\n")
    ws = tmp_path / "ws"
    (ws / "sub").mkdir(parents=True)
    (ws / "sub" / "a.txt").write_text("inside\n")
    (ws / "out").symlink_to(tmp_path)
    (ws / "link.txt").symlink_to(tmp_path / "outside.txt")
    (ws / "near").symlink_to("sub")
    os.mkfifo(ws / "pipe")
    return ws


def read(ws: Path, raw: str) -> bytes:
    with os.fdopen(open_regular(ws, relative_parts(ws, raw)), "rb") as f:
        return f.read()


def test_regular_files_inside_are_read(mode: str, tree: Path) -> None:
    assert read(tree, "sub/a.txt") == b"inside\n"
    assert read(tree, str(tree / "sub" / "x" / ".." / "a.txt")) == b"inside\n"


@pytest.mark.parametrize("raw", ["out/outside.txt", "link.txt", "near/a.txt", "../outside.txt", "/etc/hostname", "pipe", "sub"])
def test_symlinks_escapes_and_non_regular_files_are_refused(mode: str, tree: Path, raw: str) -> None:
    with pytest.raises(Refused):
        read(tree, raw)


def test_a_write_replaces_the_entry_and_never_writes_through(mode: str, tree: Path) -> None:
    replace_file(tree, ["new", "deep", "b.txt"], b"made\n")
    assert (tree / "new" / "deep" / "b.txt").read_bytes() == b"made\n"
    for parts in (["link.txt"], ["out", "evil.txt"], ["near", "a.txt"]):
        with pytest.raises(Refused):
            replace_file(tree, parts, b"hacked\n")
    os.link(tree.parent / "outside.txt", tree / "hard.txt")
    replace_file(tree, ["hard.txt"], b"replaced\n")
    assert (tree.parent / "outside.txt").read_text() == "secret\n"
    assert (tree / "hard.txt").read_text() == "replaced\n"
    assert not (tree.parent / "evil.txt").exists()
