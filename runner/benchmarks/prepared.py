"""The packages ``waza prepare`` fetched for verifiers that install them at test time, and where they are.

Many tasks' ``test.sh`` runs ``pip install pytest`` (or ``uvx --with X``) when
it starts: online, a failed download silently scores 0; offline, it cannot
work at all. ``waza prepare`` fetches each such pip package (and what it
depends on) from the package index once, into ``pip/`` of this folder; under
``--env docker`` the folder is shown read-only in the container at
:data:`MOUNT` and, with no network, the verifier's pip is pointed at it
(``PIP_FIND_LINKS``, ``PIP_NO_INDEX``), so the same ``pip install`` works
offline. Only pip packages are fetched: apt packages, npm packages and ``uv``
itself must be in the image (a missing one is named, and the trial is
``environment-unsatisfied``). Wheels are fetched for the host's Python and
platform: pure-Python packages (most test tools) fit any image; a compiled one
fits only an image with the same Python.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

from waza.protocol.io.model_cache import cache_dir
from waza.protocol.io.process import run_once

__all__ = ["MOUNT", "fetch_pip", "has_pip", "pip_env", "prepared_dir"]

#: Where the prepared folder appears inside a container.
MOUNT = "/opt/waza-prepared"
#: Seconds one ``pip download`` may take.
FETCH_TIMEOUT = 600.0


def prepared_dir() -> Path:
    """The prepared packages' folder: ``benchmarks/`` of waza's cache folder (``$WAZA_CACHE_DIR``, ...)."""
    return cache_dir() / "benchmarks"


def _normal(name: str) -> str:
    return re.sub(r"[-_.]+", "_", name).lower()


def has_pip(name: str, root: Path | None = None) -> bool:
    """Whether a distribution of ``name`` (a wheel or an sdist) was fetched into ``root``'s ``pip/``."""
    folder = (root or prepared_dir()) / "pip"
    if not folder.is_dir():
        return False
    wanted = _normal(name) + "-"
    return any(_normal(p.name.split("-")[0]) + "-" == wanted for p in folder.iterdir() if p.is_file())


async def fetch_pip(name: str, root: Path | None = None) -> str | None:
    """Fetch ``name`` and its dependencies into ``root``'s ``pip/``; why it failed, or None."""
    folder = (root or prepared_dir()) / "pip"
    folder.mkdir(parents=True, exist_ok=True)
    argv = [sys.executable, "-m", "pip", "download", "-q", "--disable-pip-version-check", "-d", str(folder), name]
    done = await run_once(argv, timeout=FETCH_TIMEOUT)
    if done.code == 0:
        return None
    return "timed out" if done.timed_out else done.stderr_tail.strip()[-500:] or f"pip exited {done.code}"


def pip_env() -> dict[str, str]:
    """The verifier's environment that makes ``pip install`` take the prepared packages, offline."""
    return {"PIP_FIND_LINKS": f"{MOUNT}/pip", "PIP_NO_INDEX": "1"}
