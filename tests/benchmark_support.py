"""What the benchmark tests share: the bubblewrap mark (``--env host``) and the offline base image's name and
script (``--env docker``; the ``base_image`` fixture in conftest.py builds it as ``.ci/run`` does)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from waza.adapters.sandbox.bwrap import _probe

__all__ = ["BASE", "IMAGES", "needs_bwrap"]

BASE = "waza-test/busybox:1"
IMAGES = Path(__file__).parent / "images"

needs_bwrap = pytest.mark.skipif(
    not sys.platform.startswith("linux") or _probe() is not None,
    reason=f"no bubblewrap sandbox here ({_probe() if sys.platform.startswith('linux') else 'not Linux'}); .ci/run installs bubblewrap",
)
