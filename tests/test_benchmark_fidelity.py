"""Harbor task keys waza honours or names, never ignores: ``${VAR}`` templates in the env tables, ``user``,
GPUs and the other keys of task.toml that change how a task runs, and a verifier in an environment of its own
(``[verifier].environment_mode = "separate"``).

Each task is written here, small, in the test's folder. The host-environment tests need bubblewrap; the
docker ones need an engine and the offline base image ``waza-test/busybox:1`` (see tests/test_env_docker.py),
and skip, saying why, without them.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import anyio
import msgspec
import pytest

from waza.adapters.sandbox.bwrap import _probe
from waza.protocol import schemas
from waza.protocol.benchmark_records import BenchmarkResult
from waza.protocol.errors import ConfigError
from waza.runner.benchmarks.docker import engine
from waza.runner.benchmarks.loader import check_folder, load_task
from waza.runner.benchmarks.trial import AgentChoice, run_trial
from waza.runner.benchmarks.validate import validate_task

BASE = "waza-test/busybox:1"
IMAGES = Path(__file__).parent / "images"

needs_bwrap = pytest.mark.skipif(
    not sys.platform.startswith("linux") or _probe() is not None,
    reason=f"no bubblewrap sandbox here ({_probe() if sys.platform.startswith('linux') else 'not Linux'}); .ci/run installs bubblewrap",
)


@pytest.fixture(scope="module")
def base_image() -> str:
    program, why = engine()
    if program is None:
        pytest.skip(f"no container engine answers here: {why}")
    done = subprocess.run(
        ["sh", str(IMAGES / "busybox-image.sh"), BASE],
        capture_output=True,
        timeout=300,
        check=False,
        env={"PATH": "/usr/local/bin:/usr/bin:/bin", "ENGINE": Path(program).name},
    )
    if done.returncode != 0:
        pytest.skip(f"the offline base image {BASE} cannot be built here: {done.stderr.decode(errors='replace')[-300:]}")
    return BASE


def write_task(root: Path, toml: str, *, dockerfile: str = "FROM debian:12-slim\nWORKDIR /app\n", **files: str) -> Path:
    """A Harbor task folder: task.toml, instruction.md, environment/Dockerfile, and ``files`` by relative path
    (``tests/test.sh``, ``solution/solve.sh``, ...)."""
    root.mkdir(parents=True)
    (root / "task.toml").write_text(toml)
    (root / "instruction.md").write_text("Do the task.\n")
    (root / "environment").mkdir()
    (root / "environment" / "Dockerfile").write_text(dockerfile)
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


def trial(task_dir: Path, agent: str, tmp_path: Path, env: str = "host") -> BenchmarkResult:
    """One trial; every result is held to the published schema of the result line."""
    task = load_task(task_dir)
    result = anyio.run(lambda: run_trial(task, AgentChoice(agent), env_kind=env, trial_dir=tmp_path / f"{agent}-{env}"))
    assert schemas.errors("BenchmarkResult", json.loads(msgspec.json.encode(result))) == []
    return result


# --- ${VAR} templates ---------------------------------------------------------------------------------------------

TEMPLATED = """
[verifier]
timeout_sec = 60.0
[verifier.env]
JUDGE_KEY = "${WAZA_TEST_JUDGE_KEY}"
MODE = "${WAZA_TEST_MODE:-strict}"
LITERAL = "a${B}"
[environment]
network_mode = "no-network"
"""
# The verifier passes only when it got the key, the default and the literal, and the agent saw no key.
TEMPLATED_TEST = """#!/bin/bash
if [ "$JUDGE_KEY" = sk-test-1234 ] && [ "$MODE" = strict ] && [ "$LITERAL" = 'a${B}' ] && [ "$(cat /app/seen)" = none ]; then
  echo 1 > /logs/verifier/reward.txt
else
  echo "key=${#JUDGE_KEY} mode=$MODE literal=$LITERAL seen=$(cat /app/seen)"; echo 0 > /logs/verifier/reward.txt
fi
"""


@needs_bwrap
def test_verifier_env_templates_take_waza_s_variables_for_the_verifier_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    task = write_task(
        tmp_path / "judge",
        TEMPLATED,
        **{"tests/test.sh": TEMPLATED_TEST, "solution/solve.sh": 'echo "${JUDGE_KEY:-none}" > /app/seen\n'},
    )
    monkeypatch.setenv("WAZA_TEST_JUDGE_KEY", "sk-test-1234")
    monkeypatch.delenv("WAZA_TEST_MODE", raising=False)
    result = trial(task, "oracle", tmp_path)
    assert (result.status, result.score) == ("passed", 1.0), result.steps[0].verifier_output
    assert result.environment["host_variables"] == "WAZA_TEST_JUDGE_KEY"  # the name, never the value
    assert b"sk-test-1234" not in msgspec.json.encode(result)


@needs_bwrap
def test_an_unset_variable_without_default_is_unsatisfied_naming_it_and_check_lists_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    task = write_task(tmp_path / "judge", TEMPLATED, **{"tests/test.sh": TEMPLATED_TEST})
    monkeypatch.delenv("WAZA_TEST_JUDGE_KEY", raising=False)
    result = trial(task, "nop", tmp_path)
    assert (result.status, result.score, result.error_kind) == ("error", None, "environment-unsatisfied")
    assert result.missing == [
        "the variable WAZA_TEST_JUDGE_KEY in waza's environment ([verifier.env].JUDGE_KEY = ${WAZA_TEST_JUDGE_KEY})"
    ]
    assert result.steps == []  # nothing ran
    _, problems, notices = check_folder(task)
    assert problems == []
    assert (
        f"{task}/task.toml: field 'verifier.env.JUDGE_KEY': takes the variable WAZA_TEST_JUDGE_KEY from waza's environment (no default: a trial is unsatisfied without it); unset now"
        in notices
    )
    assert any("WAZA_TEST_MODE from waza's environment (default 'strict')" in n for n in notices)
