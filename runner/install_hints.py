"""How to install one of waza's extras, said so that the command works where this waza came from.

waza is not on a package index yet, so ``pip install 'waza[view]'`` fails for
everyone who installed it from a checkout. The advice follows the install:

- running from a source checkout (an editable install): ``pip install -e '/checkout[view]'``;
- installed by pip from a folder, a wheel or sdist file, a URL or version control:
  pip's record of where it came from (``direct_url.json``, PEP 610, in the
  ``.dist-info`` beside the package) gives the same source with the extra;
- installed from a package index (no such record): ``pip install 'waza[view]'``.
"""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

__all__ = ["checkout", "manual", "pip_install", "pip_install_from"]

#: A direct_url.json is a few hundred bytes; a larger one is not pip's and is not read.
MAX_RECORD = 64 * 1024


def checkout() -> Path | None:
    """The root of the source checkout this waza runs from, or None for an installed package."""
    root = Path(__file__).resolve().parent.parent  # runner/ in a checkout, waza/ in site-packages
    if (root / "pyproject.toml").is_file() and (root / "runner" / "_waza").is_dir():
        return root
    return None


def _direct_url() -> dict[str, Any] | None:
    """pip's record of where the installed waza came from, read beside this package; None when there is none."""
    import importlib.metadata  # here: ``waza --help`` names the manual without paying for these imports
    import json

    site = Path(__file__).resolve().parent.parent.parent  # site-packages/waza/runner/install_hints.py
    for dist in importlib.metadata.distributions(name="waza", path=[str(site)]):
        text = dist.read_text("direct_url.json")
        if text is None or len(text) > MAX_RECORD:
            return None
        try:
            record = json.loads(text)
        except ValueError:
            return None
        return record if isinstance(record, dict) else None
    return None


def pip_install_from(extra: str, record: dict[str, Any] | None) -> str:
    """The pip command that adds ``extra`` to a waza installed as ``record`` (a direct_url.json) says."""
    url = record.get("url") if record else None
    if record is None or not isinstance(url, str):  # installed from an index (pip writes no record then)
        return f"pip install {shlex.quote(f'waza[{extra}]')}"
    vcs = record.get("vcs_info")
    if isinstance(vcs, dict):
        commit = vcs.get("commit_id")
        source = f"{vcs.get('vcs', 'git')}+{url}" + (f"@{commit}" if isinstance(commit, str) else "")
        return f"pip install {shlex.quote(f'waza[{extra}] @ {source}')}"
    parts = urlsplit(url)
    if parts.scheme != "file":  # an archive fetched from a URL
        return f"pip install {shlex.quote(f'waza[{extra}] @ {url}')}"
    path = unquote(parts.path)
    dir_info = record.get("dir_info")
    editable = isinstance(dir_info, dict) and dir_info.get("editable") is True
    return f"pip install {'-e ' if editable else ''}{shlex.quote(f'{path}[{extra}]')}"


def pip_install(extra: str) -> str:
    """The pip command that adds ``extra`` to this waza: the checkout's, the folder or file it was installed from,
    or the published package's."""
    root = checkout()
    if root is not None:
        return f"pip install -e {shlex.quote(f'{root}[{extra}]')}"
    return pip_install_from(extra, _direct_url())


def manual() -> str:
    """Where this waza's manual is: ``docs/manual/index.md`` of the checkout or folder it was installed from.

    The manual is Markdown in the source tree (it reads as is; mkdocs builds it as a site): a
    wheel does not carry it, so an install from anything but a folder gets the path in words.
    """
    root = checkout()
    if root is None:
        record = _direct_url() or {}
        url = record.get("url")
        if isinstance(url, str) and "dir_info" in record and urlsplit(url).scheme == "file":
            root = Path(unquote(urlsplit(url).path))
    page = root / "docs" / "manual" / "index.md" if root is not None else None
    return str(page) if page is not None and page.is_file() else "docs/manual/index.md in waza's source tree"
