"""The reference pages committed in docs/manual are what waza makes now, and read right as Markdown.

They are generated (docs/scripts/reference.py) and committed so that they read the same on the
repository host as in the built site; this regenerates them and compares.
"""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path
from types import ModuleType

import waza

ROOT = Path(__file__).resolve().parent.parent
MANUAL = ROOT / "docs" / "manual"


def load_generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("waza_docs_reference", ROOT / "docs" / "scripts" / "reference.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def test_the_committed_reference_pages_are_current() -> None:
    """A change to a command, a schema or the API comes with its reference text: run python docs/scripts/reference.py."""
    assert load_generator().stale() == []


def test_the_api_reference_lists_exactly_waza_all_under_their_public_names() -> None:
    page = (MANUAL / "reference" / "python-api.md").read_text(encoding="utf-8")
    headings = re.findall(r"^### `waza\.(\w+)`$", page, re.M)
    assert sorted(headings) == sorted(waza.__all__)
    assert len(headings) == len(set(headings))
    assert "waza.runner." not in page.replace("waza.runner.ray_cluster", "")  # no internal path as a name


def test_every_public_callable_has_its_parameters_documented() -> None:
    page = (MANUAL / "reference" / "python-api.md").read_text(encoding="utf-8")
    section = page.split("### `waza.capture`\n", 1)[1].split("\n### ", 1)[0]
    rows = re.findall(r"^\| `(\w+)` \|.*\| (.+) \|$", section, re.M)
    assert [name for name, _ in rows] == [
        "prompts",
        "agent",
        "graders",
        "timeouts",
        "concurrency",
        "workspace",
        "output",
        "limits",
    ]
    assert all(meaning.strip() for _, meaning in rows)


def test_the_pages_read_right_on_github_and_in_mkdocs() -> None:
    """No code span in a table holds a ``|`` (GitHub splits the cell there; escaped, mkdocs shows ``\\|``), no reST
    role is left raw, and a usage line reads as ``--help`` conventions do (``PROMPTS [AGENT]...``)."""
    for page in sorted(MANUAL.rglob("*.md")):
        text = page.read_text(encoding="utf-8")
        name = page.relative_to(MANUAL)
        assert not re.search(r":(func|class|meth|mod|attr):`", text), name
        for line in text.splitlines():
            if line.startswith("|"):
                spans = re.findall(r"`([^`]*)`", line.replace("\\|", "\u2502"))
                assert not [s for s in spans if "\u2502" in s or "|" in s], (name, line)
    cli = (MANUAL / "reference" / "cli.md").read_text(encoding="utf-8")
    usages = re.findall(r"^waza [a-z -]+\[OPTIONS\].*$", cli, re.M)
    assert "waza capture [OPTIONS] PROMPTS [AGENT]..." in usages
    assert not [u for u in usages if "...." in u or "{" in u]
