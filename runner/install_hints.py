"""How to install one of waza's extras, said so that the command works where this waza came from.

``pip install 'waza[view]'`` installs the published package; in a source checkout
(an editable install, the only way a checkout runs) it would fetch a second waza
from the index instead of adding the extra to the code being run. A checkout is
recognised by the repository's ``pyproject.toml`` beside the package folders.
"""

from __future__ import annotations

import shlex
from pathlib import Path

__all__ = ["checkout", "pip_install"]


def checkout() -> Path | None:
    """The root of the source checkout this waza runs from, or None for an installed package."""
    root = Path(__file__).resolve().parent.parent  # runner/ in a checkout, waza/ in site-packages
    if (root / "pyproject.toml").is_file() and (root / "runner" / "_waza").is_dir():
        return root
    return None


def pip_install(extra: str) -> str:
    """The pip command that adds ``extra`` to this waza: the published package's, or the checkout's."""
    root = checkout()
    if root is None:
        return f"pip install 'waza[{extra}]'"
    return f"pip install -e {shlex.quote(f'{root}[{extra}]')}"
