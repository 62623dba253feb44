"""What ``waza prepare`` fetches for verifiers that install tools at test time, used offline under ``--env host``
(bubblewrap over the host's system) as under ``--env docker`` (tests/test_env_docker.py): the prepared folder shown
read-only at the same place, with the same variables pointing pip, uvx and npm at it.

The packages come from the real registries (PyPI, npm) the first time a test prepares them, into the test's own
cache folder (WAZA_CACHE_DIR, see conftest): each test fetches afresh.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from waza.runner.benchmarks.docker import engine
from waza.runner.benchmarks.dockerfile import installs

from .benchmark_support import needs_bwrap
from .conftest import read_jsonl, run_waza

FIXTURES = Path(__file__).parent / "fixtures" / "benchmarks"


def _task(tmp_path: Path, name: str, test_sh: str, files: dict[str, str] | None = None) -> Path:
    """The hello-sh task (the oracle writes /app/hello.txt) with another verifier, alone in a dataset folder."""
    task_dir = tmp_path / "dataset" / name
    shutil.copytree(FIXTURES / "harbor" / "hello-sh", task_dir)
    (task_dir / "tests" / "test.sh").write_text("#!/bin/bash\n" + test_sh)
    for rel, text in (files or {}).items():
        (task_dir / "tests" / rel).write_text(text)
    return task_dir


def _oracle(task_dir: Path, *args: str, env: str = "host") -> tuple[int, dict]:
    proc = run_waza("run", task_dir, "--adapter", "oracle", "--env", env, "--offline", *args, timeout=300)
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


#: A verifier that runs one npm package with `npx` and installs another with `npm install -g`.
NPM_VERIFIER = (
    "set -e\nnpx -y cowsay@1.6.0 moo | grep -q moo\nnpm install -g is-number@7.0.0\n"
    'test -f "$(npm root -g)/is-number/index.js"\n'
    "[ \"$(cat /app/hello.txt)\" = 'hello, world' ] && echo 1 > /logs/verifier/reward.txt\n"
)
needs_npm = pytest.mark.skipif(shutil.which("npm") is None, reason="no npm on PATH: waza prepare fetches npm packages with it")


@pytest.mark.slow  # about 60 s on a busy machine: two npm fetches, three runs of npm offline
@needs_bwrap
@needs_npm
def test_npx_and_npm_install_g_are_unsatisfied_on_the_host_until_prepared_then_pass_offline(tmp_path: Path) -> None:
    """A verifier that runs `npx PKG` and installs another with `npm install -g`: prepare fetches both (and their
    dependencies) with the host's npm; offline, each trial gets its own copy of that npm cache."""
    task_dir = _task(tmp_path, "needs-npm", NPM_VERIFIER)
    code, result = _oracle(task_dir)
    assert code == 1
    assert result["error_kind"] == "environment-unsatisfied"
    assert result["missing"] == [
        "tests: npm package 'is-number@7.0.0', and the network is none",
        "tests: npm package 'cowsay@1.6.0', and the network is none",
    ]

    prepared = run_waza("prepare", task_dir.parent, "--env", "host", timeout=600)
    assert prepared.returncode == 0, prepared.stderr
    (line,) = read_jsonl(prepared.stdout)
    assert line["packages"] == {"npm:is-number@7.0.0": "fetched", "npm:cowsay@1.6.0": "fetched"}

    for trial in (1, 2):  # the second trial gets a fresh copy: nothing the first installed is left
        code, result = _oracle(task_dir)
        assert code == 0, result
        assert (result["status"], result["score"]) == ("passed", 1.0), trial
        assert "a copy per trial at /run/waza-npm (npm_config_cache" in result["environment"]["prepared"]
    again = run_waza("prepare", task_dir.parent, "--env", "host")
    (line,) = read_jsonl(again.stdout)
    assert set(line["packages"].values()) == {"prepared before"}


def test_what_npx_and_npm_install_g_fetch_is_read_from_the_script() -> None:
    assert installs("npx -y cowsay@1.6.0 moo && npm install -g is-number@7.0.0 left-pad") == [
        ("npm", "is-number@7.0.0"),
        ("npm", "left-pad"),
        ("npm", "cowsay@1.6.0"),
    ]
    assert installs("npx --yes -p @scope/tool@^2 run-it --flag") == [("npm", "@scope/tool@^2")]
    assert installs("npx --package=a --package b cmd") == [("npm", "a"), ("npm", "b")]
    assert installs("npx $TOOL x") == []  # a variable: nothing known to fetch


NODE_IMAGE = "waza-test/debian-node:12"


@pytest.mark.slow  # builds an image, fetches from npm, runs npm in a container twice
@needs_npm
def test_npm_packages_prepared_are_installed_offline_in_a_container_with_npm(tmp_path: Path) -> None:
    """Under --env docker the container gets its own copy of the prepared npm cache too; the image's npm
    installs from it (npm packages need npm in the image: an image without it leaves them unsatisfied)."""
    program, why = engine()
    if program is None:
        pytest.skip(f"no container engine answers here: {why}")
    if subprocess.run([program, "image", "inspect", NODE_IMAGE], capture_output=True, check=False).returncode != 0:
        pytest.skip(f"{NODE_IMAGE} is not built here (tests/images/debian-node-image.sh, run by .ci/run)")
    task_dir = _task(tmp_path, "needs-npm", NPM_VERIFIER)
    mapped = ("--base-image", f"debian:12-slim={NODE_IMAGE}")
    code, result = _oracle(task_dir, *mapped, env="docker")
    assert code == 1
    assert result["error_kind"] == "environment-unsatisfied"
    assert "tests: npm package 'is-number@7.0.0' (not in the image, and the network is none)" in result["missing"]

    prepared = run_waza("prepare", task_dir.parent, *mapped, timeout=600)
    assert prepared.returncode == 0, prepared.stderr
    (line,) = read_jsonl(prepared.stdout)
    assert line["packages"] == {"npm:is-number@7.0.0": "fetched", "npm:cowsay@1.6.0": "fetched"}

    code, result = _oracle(task_dir, *mapped, env="docker")
    assert code == 0, result
    assert (result["status"], result["score"]) == ("passed", 1.0)
    assert "a copy per trial at /run/waza-npm (npm_config_cache" in result["environment"]["prepared"]
