"""The advice for a missing extra is a pip command that works for how this waza was installed.

Each installed case lays the module out as pip does (``site/waza/runner/install_hints.py`` with a
``waza-0.1.0.dist-info`` beside the package) and gives it the ``direct_url.json`` pip wrote for
that kind of install (the records below were written by pip 23.2 installing this repository:
``pip install /checkout``, ``pip install -e /checkout``, ``pip install ./dist/waza-0.1.0-py3-none-any.whl``,
and ``pip install --no-index --find-links dist waza``, which writes none, as an index install does).
The module then runs in a fresh interpreter, so it finds its own record the way it does installed.
"""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from waza.runner.install_hints import checkout, pip_install

from .conftest import run_waza

ROOT = Path(__file__).resolve().parent.parent
WHEEL = "waza-0.1.0-py3-none-any.whl"


def hint_installed(tmp_path: Path, record: dict[str, Any] | str | None, ask: str = "pip_install('view')") -> str:
    site = tmp_path / "site packages"  # a space: the command must quote the path
    package = site / "waza" / "runner"
    package.mkdir(parents=True)
    (site / "waza" / "__init__.py").write_text("")
    (package / "__init__.py").write_text("")
    (package / "install_hints.py").write_bytes((ROOT / "runner" / "install_hints.py").read_bytes())
    info = site / "waza-0.1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.4\nName: waza\nVersion: 0.1.0\n")
    if record is not None:
        (info / "direct_url.json").write_text(record if isinstance(record, str) else json.dumps(record))
    code = f"from waza.runner import install_hints as h; print(h.checkout()); print(h.{ask})"
    # -I: no user site, no PYTHONPATH, and not the current folder: only this site and the standard library.
    done = subprocess.run(
        [sys.executable, "-I", "-c", f"import sys; sys.path.insert(0, {str(site)!r}); {code}"],
        capture_output=True,
        check=True,
        timeout=60,
    )
    found, command = done.stdout.decode().splitlines()
    assert found == "None"  # not a checkout: no pyproject.toml beside the packages
    return command


def test_a_checkout_is_told_to_install_the_extra_into_itself() -> None:
    """This test runs from the source checkout (the venv's editable install): the checkout's path, editable."""
    assert checkout() == ROOT
    assert pip_install("view") == f"pip install -e {shlex.quote(f'{ROOT}[view]')}"


def test_installed_from_a_folder_names_that_folder(tmp_path: Path) -> None:
    record = {"dir_info": {}, "url": "file:///work/my%20waza"}
    assert hint_installed(tmp_path, record) == "pip install '/work/my waza[view]'"


def test_installed_editable_from_a_folder_stays_editable(tmp_path: Path) -> None:
    record = {"dir_info": {"editable": True}, "url": "file:///work/waza"}
    assert hint_installed(tmp_path, record) == "pip install -e '/work/waza[view]'"


def test_installed_from_a_wheel_file_names_that_file(tmp_path: Path) -> None:
    digest = "0dde127627598bf51f9eef3b42d862aadb2b0a423ed2766cfeafabc8a5cb3c81"
    record = {
        "archive_info": {"hash": f"sha256={digest}", "hashes": {"sha256": digest}},
        "url": f"file:///tmp/wheels/{WHEEL}",
    }
    assert hint_installed(tmp_path, record) == f"pip install '/tmp/wheels/{WHEEL}[view]'"


def test_installed_from_a_url_or_version_control_names_the_source(tmp_path: Path) -> None:
    remote = {"archive_info": {}, "url": f"https://example.org/{WHEEL}"}
    assert hint_installed(tmp_path / "a", remote) == f"pip install 'waza[view] @ https://example.org/{WHEEL}'"
    git = {"url": "https://example.org/waza.git", "vcs_info": {"vcs": "git", "commit_id": "827f602"}}
    assert hint_installed(tmp_path / "b", git) == "pip install 'waza[view] @ git+https://example.org/waza.git@827f602'"


def test_installed_from_an_index_names_the_package(tmp_path: Path) -> None:
    assert hint_installed(tmp_path, None) == "pip install 'waza[view]'"


@pytest.mark.parametrize("text", ["", "not json", "[]", "{}", '{"url": 7}'])
def test_a_record_pip_did_not_write_reads_as_an_index_install(tmp_path: Path, text: str) -> None:
    assert hint_installed(tmp_path, text) == "pip install 'waza[view]'"


def test_the_manual_is_named_where_it_is() -> None:
    """From the checkout, ``waza --help`` (both its quick form and typer's) ends naming the manual's first page."""
    page = ROOT / "docs" / "manual" / "index.md"
    assert run_waza("--help").stdout.decode().splitlines()[-1] == f"The manual: {page}"
    assert f"The manual: {page}" in " ".join(run_waza("-v", "--help").stdout.decode().split())


def test_installed_from_a_folder_the_manual_is_that_folders(tmp_path: Path) -> None:
    source = tmp_path / "src"
    (source / "docs" / "manual").mkdir(parents=True)
    (source / "docs" / "manual" / "index.md").write_text("# waza\n")
    record = {"dir_info": {}, "url": source.as_uri()}
    assert hint_installed(tmp_path / "i", record, "manual()") == str(source / "docs" / "manual" / "index.md")


def test_installed_from_a_wheel_or_an_index_the_manual_is_named_in_words(tmp_path: Path) -> None:
    wheel = {"archive_info": {}, "url": f"file:///tmp/{WHEEL}"}
    assert hint_installed(tmp_path / "w", wheel, "manual()") == "docs/manual/index.md in waza's source tree"
    assert hint_installed(tmp_path / "i", None, "manual()") == "docs/manual/index.md in waza's source tree"
