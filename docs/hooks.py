"""mkdocs hooks: a build refuses a reference page that is not what waza makes now.

The command-line, record and Python API references are generated into the pages by
``python docs/scripts/reference.py`` and committed, so they read the same on the
repository host as in the site. The build checks each of them against a fresh
generation (as tests/test_reference_pages.py does) and stops on a stale one.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from mkdocs.exceptions import PluginError

sys.path.insert(0, str(Path(__file__).resolve().parent / "scripts"))
import reference


def on_page_markdown(markdown: str, page: Any, **_: Any) -> str:
    if reference.regenerate(markdown) != markdown:
        raise PluginError(f"docs/manual/{page.file.src_path} is stale: run python docs/scripts/reference.py")
    return markdown
