"""What ``waza prepare`` fetches for verifiers that install tools at test time, used offline under ``--env host``
(bubblewrap over the host's system) as under ``--env docker`` (tests/test_env_docker.py): the prepared folder shown
read-only at the same place, with the same variables pointing pip, uvx and npm at it.

The packages come from the real registries (PyPI, npm) the first time a test prepares them, into the test's own
cache folder (WAZA_CACHE_DIR, see conftest): each test fetches afresh.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

from waza.adapters.sandbox.bwrap import _probe

from .conftest import read_jsonl, run_waza

FIXTURES = Path(__file__).parent / "fixtures" / "benchmarks"

needs_bwrap = pytest.mark.skipif(
    not sys.platform.startswith("linux") or _probe() is not None,
    reason=f"no bubblewrap sandbox here ({_probe() if sys.platform.startswith('linux') else 'not Linux'}); .ci/run installs bubblewrap",
)


def _task(tmp_path: Path, name: str, test_sh: str, files: dict[str, str] | None = None) -> Path:
    """The hello-sh task (the oracle writes /app/hello.txt) with another verifier, alone in a dataset folder."""
    task_dir = tmp_path / "dataset" / name
    shutil.copytree(FIXTURES / "harbor" / "hello-sh", task_dir)
    (task_dir / "tests" / "test.sh").write_text("#!/bin/bash\n" + test_sh)
    for rel, text in (files or {}).items():
        (task_dir / "tests" / rel).write_text(text)
    return task_dir


def _oracle(task_dir: Path, *args: str) -> tuple[int, dict]:
    proc = run_waza("run", task_dir, "--adapter", "oracle", "--env", "host", "--offline", *args, timeout=300)
    (result,) = read_jsonl(proc.stdout)
    return proc.returncode, result


@needs_bwrap
def test_a_test_time_uvx_is_unsatisfied_on_the_host_until_prepared_then_passes_offline(tmp_path: Path) -> None:
    """Harbor's usual verifier, `uvx --with X pytest ...`: on the host, offline, it is named as unsatisfied;
    once `waza prepare` fetched uv and the packages, the same offline run passes on the host's own Python."""
    task_dir = _task(
        tmp_path,
        "needs-uvx",
        "uvx --with iniconfig pytest -q /tests/test_hello.py && echo 1 > /logs/verifier/reward.txt"
        " || echo 0 > /logs/verifier/reward.txt\n",
        {
            "test_hello.py": "import iniconfig  # noqa: F401\n\n\ndef test_hello():\n    assert open('/app/hello.txt').read() == 'hello, world\\n'\n"
        },
    )
    code, result = _oracle(task_dir)
    assert code == 1
    assert result["error_kind"] == "environment-unsatisfied"
    assert result["missing"] == ["tests: uvx (fetches its tools at test time), and the network is none"]

    prepared = run_waza("prepare", task_dir.parent, "--env", "host", timeout=600)
    assert prepared.returncode == 0, prepared.stderr
    (line,) = read_jsonl(prepared.stdout)
    assert line["packages"] == {"uv:uv": "fetched", "pip:iniconfig": "fetched", "pip:pytest": "fetched"}

    code, result = _oracle(task_dir)
    assert code == 0, result
    assert (result["status"], result["score"]) == ("passed", 1.0)
    assert "at /run/waza-prepared (PIP_FIND_LINKS, PIP_NO_INDEX, UV_OFFLINE" in result["environment"]["prepared"]
    assert "1 passed" in result["steps"][0]["verifier_output"]


def test_prepare_for_the_host_refuses_a_base_image_map_and_an_unknown_environment(tmp_path: Path) -> None:
    task_dir = _task(tmp_path, "plain", "echo 1 > /logs/verifier/reward.txt\n")
    mapped = run_waza("prepare", task_dir.parent, "--env", "host", "--base-image", "debian:12-slim=local/debian:12")
    assert mapped.returncode == 2
    assert b"--base-image applies to --env docker" in mapped.stderr
    unknown = run_waza("prepare", task_dir.parent, "--env", "cloud")
    assert unknown.returncode == 2
    assert b"unknown environment 'cloud'" in unknown.stderr
