"""The manual's viewer screenshots can be made again: docs/scripts/screenshots.py runs end to end.

It makes two real captures, starts ``waza view`` and drives the system's Chromium through
Playwright; here it writes into a scratch directory, and each picture must be a real page
(not a blank or an error page) of the size the manual can carry.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM = next((p for name in ("chromium", "chromium-browser") if (p := shutil.which(name))), None)


@pytest.mark.slow  # a maintainer's script; the pages it pictures are driven in a browser by tests/test_view.py
def test_the_screenshot_script_makes_the_three_pictures(tmp_path: Path) -> None:
    if CHROMIUM is None:
        pytest.skip("chromium is not installed (apt-get install chromium; .ci/run installs it)")
    pytest.importorskip("playwright.sync_api", reason="playwright is not installed (pip install playwright)")
    pytest.importorskip("starlette", reason="the view extra is not installed (pip install '.[view]')")
    script = ROOT / "docs" / "scripts" / "screenshots.py"
    proc = subprocess.run(
        [sys.executable, str(script), "--chromium", CHROMIUM, "--out", str(tmp_path)], capture_output=True, timeout=240
    )
    assert proc.returncode == 0, proc.stderr.decode()[-3000:]
    for name in ("run", "prompt-stderr", "compare"):
        size = (tmp_path / f"{name}.png").stat().st_size
        assert 20_000 < size < 200_000, f"{name}.png is {size} bytes"
