"""The manual's runnable examples run: each shell block marked ``<!-- runnable -->`` in the README or
a page of the manual (docs/manual/) is executed.

Every such block runs with ``sh -e`` in a fresh directory holding links to the
repository's ``examples/`` and ``tests/`` (the files examples may name), with
this interpreter's ``waza`` and ``python3`` first on PATH and no network needed.
A failing command fails the test with the block and its output. A block that needs an extra says so in its
mark (``<!-- runnable needs=serve -->``) and is skipped, saying why, where that extra is not installed, as the
tests that need it are.
"""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
MARK = r"<!-- runnable(?: needs=([a-z,]+))? -->"
BLOCK = re.compile(r"^" + MARK + r"\n```sh\n(.*?)^```$", re.M | re.S)
#: extra -> the modules it installs that a block uses.
EXTRAS = {"serve": ("regex", "starlette", "uvicorn"), "view": ("starlette", "uvicorn")}


PAGES = [ROOT / "README.md", *sorted((ROOT / "docs" / "manual").rglob("*.md"))]


def runnable_blocks() -> list[tuple[str, str, str]]:
    """("file:line", the extras it needs, script) of every marked block, page by page."""
    found = []
    for page in PAGES:
        text = page.read_text()
        name = page.relative_to(ROOT)
        found += [(f"{name}:{text.count(chr(10), 0, m.start()) + 1}", m.group(1) or "", m.group(2)) for m in BLOCK.finditer(text)]
    return found


def test_every_mark_is_followed_by_a_shell_block() -> None:
    marks = sum(len(re.findall("^" + MARK + "$", page.read_text(), re.M)) for page in PAGES)
    assert marks == len(runnable_blocks()) >= 3
    assert {extra for _, needs, _ in runnable_blocks() for extra in needs.split(",") if extra} <= set(EXTRAS)


@pytest.mark.parametrize(("line", "needs", "script"), runnable_blocks(), ids=lambda v: v if ".md:" in v else "")
def test_example_runs(line: str, needs: str, script: str, tmp_path: Path) -> None:
    for extra in filter(None, needs.split(",")):
        missing = [m for m in EXTRAS[extra] if importlib.util.find_spec(m) is None]
        if missing:
            pytest.skip(f"{line} needs the {extra} extra (pip install '.[{extra}]' in the checkout): no {missing[0]}")
    for name in ("examples", "tests"):
        (tmp_path / name).symlink_to(ROOT / name)
    bin_dir = Path(sys.executable).parent
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}"}
    env.pop("COLUMNS", None)
    proc = subprocess.run(["sh", "-e", "-c", script], cwd=tmp_path, env=env, capture_output=True, timeout=120)
    assert proc.returncode == 0, (
        f"{line} failed (exit {proc.returncode}):\n{script}\n--- stdout\n{proc.stdout.decode()[-2000:]}"
        f"\n--- stderr\n{proc.stderr.decode()[-2000:]}"
    )


def test_every_guide_has_a_runnable_example() -> None:
    """A newcomer can run at least one block of each guide and getting-started page as written."""
    guides = sorted((ROOT / "docs" / "manual").glob("guides/*.md")) + sorted(
        (ROOT / "docs" / "manual").glob("getting-started/*.md")
    )
    without = [page.name for page in guides if not BLOCK.search(page.read_text())]
    assert without == []
