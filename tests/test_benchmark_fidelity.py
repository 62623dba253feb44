"""Harbor task keys waza honours or names, never ignores: ``${VAR}`` templates in the env tables, ``user``,
GPUs and the other keys of task.toml that change how a task runs, and a verifier in an environment of its own
(``[verifier].environment_mode = "separate"``).

Each task is written here, small, in the test's folder. The host-environment tests need bubblewrap; the
docker ones need an engine and the offline base image ``waza-test/busybox:1`` (see tests/test_env_docker.py),
and skip, saying why, without them.
"""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import msgspec
import pytest

from waza.protocol import schemas
from waza.protocol.benchmark_records import BenchmarkResult
from waza.protocol.errors import ConfigError
from waza.runner.benchmarks.loader import check_folder, load_task
from waza.runner.benchmarks.trial import AgentChoice, run_trial
from waza.runner.benchmarks.validate import validate_task

from .benchmark_support import needs_bwrap


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


# --- keys waza honours, refuses or names ----------------------------------------------------------------------------

NAMED = """
[agent]
user = 1000
network_mode = "no-network"
[verifier]
user = "2000"
[[verifier.collect]]
command = "echo snapped > /app/snapshot"
[[verifier.collect]]
command = "true"
service = "db"
[environment]
network_mode = "allowlist"
allowed_hosts = ["pypi.org"]
skills_dir = "/skills"
memory = "2G"
mcp_servers = [{name = "search", transport = "sse", url = "http://localhost:1/sse"}]
"""
SNAPSHOT_TEST = '#!/bin/bash\n[ "$(cat /app/snapshot)" = snapped ] && echo 1 > /logs/verifier/reward.txt || echo 0 > /logs/verifier/reward.txt\n'


@needs_bwrap
def test_keys_the_host_cannot_apply_are_named_in_check_and_in_each_result_and_collect_hooks_run(tmp_path: Path) -> None:
    task = write_task(tmp_path / "named", NAMED, **{"tests/test.sh": SNAPSHOT_TEST, "solution/solve.sh": "true\n"})
    loaded = load_task(task)
    assert loaded.memory_mb == 2048  # Harbor's deprecated memory = "2G", converted as Harbor does
    not_applied = [
        "[environment].mcp_servers (search): not configured for the agent",
        "[environment].skills_dir: not copied into the agent's configuration",
        "[environment].allowed_hosts: no allowlist is enforced; the network is none, or with --sandbox-net host all of it",
        "[agent].network_mode: every phase gets the environment's network",
        "[verifier].collect[1]: service 'db' (compose services are not run)",
    ]
    assert loaded.not_applied == tuple(not_applied)
    _, problems, notices = check_folder(task)
    assert problems == [] and [n for n in notices if "not applied" in n] == [
        f"{task}/task.toml: not applied: {w}" for w in not_applied
    ]
    result = trial(task, "oracle", tmp_path)
    assert (result.status, result.score) == ("passed", 1.0), result  # the main container's collect hook ran
    assert result.environment["not_applied"] == "; ".join(not_applied)
    assert result.environment["user_not_applied"] == "oracle as '1000'; verifier as '2000'"


@needs_bwrap
def test_a_task_asking_for_a_gpu_is_environment_unsatisfied_and_validate_tasks_says_so(tmp_path: Path) -> None:
    task = write_task(
        tmp_path / "gpu",
        "[environment]\ngpus = 1\ngpu_types = ['H100']\n",
        **{"tests/test.sh": "echo 1 > /logs/verifier/reward.txt\n", "solution/solve.sh": "true\n"},
    )
    result = trial(task, "nop", tmp_path)
    assert (result.status, result.error_kind) == ("error", "environment-unsatisfied")
    assert result.missing == ["[environment].gpus = 1: waza gives no GPU to a task's environment"]
    verdict = anyio.run(lambda: validate_task(load_task(task), env_kind="host", work_dir=tmp_path / "validate"))
    assert (verdict.verdict, verdict.missing) == ("environment-unsatisfied", result.missing)


@pytest.mark.parametrize(
    ("toml", "field", "message"),
    [
        ("[environment]\nmemory = '2G'\nmemory_mb = 1000\n", "environment.memory", "'2G' (2048 MB) contradicts"),
        ("[environment]\nstorage = 'lots'\n", "environment.storage", "is not a size"),
        ("[verifier]\nenvironment_mode = 'elsewhere'\n", "verifier.environment_mode", "Invalid enum value"),
        ("[verifier]\nenvironment_mode = 'shared'\n[verifier.environment]\ncpus = 1\n", "verifier.environment", "shared"),
    ],
)
def test_contradictory_or_malformed_keys_are_located_errors(tmp_path: Path, toml: str, field: str, message: str) -> None:
    task = write_task(tmp_path / "bad", toml, **{"tests/test.sh": "true\n"})
    with pytest.raises(ConfigError) as caught:
        load_task(task)
    assert caught.value.field == field and message in caught.value.message, caught.value


# --- a verifier in an environment of its own ------------------------------------------------------------------------

SEPARATE = """
artifacts = ["out/result.txt"]
[verifier]
environment_mode = "separate"
timeout_sec = 60.0
[environment]
network_mode = "no-network"
"""
# The agent's answer reaches the verifier through /logs/artifacts and the declared artifact; nothing else of the
# agent's workspace does (the verifier's is fresh, from the environment's own files).
SEPARATE_SOLVE = "echo 42 > /logs/artifacts/answer.txt\nmkdir -p out && echo yes > out/result.txt\necho junk > /app/scratch\n"
SEPARATE_TEST = """#!/bin/bash
if [ "$(cat /logs/artifacts/answer.txt)" = 42 ] && [ "$(cat /app/out/result.txt)" = yes ] && [ ! -e /app/scratch ] && [ -e /app/seed.txt ]; then
  echo 1 > /logs/verifier/reward.txt
else
  ls -la /app /logs/artifacts; echo 0 > /logs/verifier/reward.txt
fi
"""


@needs_bwrap
def test_a_separate_verifier_under_host_gets_a_fresh_workspace_and_the_agent_s_artifacts(tmp_path: Path) -> None:
    task = write_task(
        tmp_path / "apart",
        SEPARATE,
        dockerfile="FROM debian:12-slim\nWORKDIR /app\nCOPY seed.txt /app/\n",
        **{"environment/seed.txt": "seed\n", "tests/test.sh": SEPARATE_TEST, "solution/solve.sh": SEPARATE_SOLVE},
    )
    assert load_task(task).steps[0].verifier_environment is not None
    result = trial(task, "oracle", tmp_path)
    assert (result.status, result.score) == ("passed", 1.0), result.steps[0].verifier_output
    assert result.environment["verifier"] == "separate environment (a fresh copy of the task's environment)"
    assert result.environment["verifier kind"] == "host" and result.steps[0].artifacts == ["artifacts/out/result.txt"]
    verdict = anyio.run(lambda: validate_task(load_task(task), env_kind="host", work_dir=tmp_path / "validate"))
    assert (verdict.verdict, verdict.nop) == ("ok", {"status": "failed", "score": 0.0})


@needs_bwrap
def test_a_verifier_image_with_its_tests_inside_is_unsatisfied_under_host_before_the_agent_runs(tmp_path: Path) -> None:
    task = write_task(
        tmp_path / "bundled",
        "[verifier]\nenvironment_mode = 'separate'\n",
        **{"tests/test.sh": SEPARATE_TEST, "tests/Dockerfile": "FROM debian:12-slim\nCOPY test.sh /tests/\n"},
    )
    result = trial(task, "nop", tmp_path)
    assert (result.error_kind, result.steps) == ("environment-unsatisfied", [])
    assert result.missing == [
        "a verifier image with its tests inside (tests/Dockerfile): --env host runs no image (--env docker does)"
    ]


HIDDEN_TEST = """#!/bin/bash
# Runs in the verifier's own image: the expected answer is baked there, never shown to the agent.
if [ "$(cat /logs/artifacts/answer.txt)" = "$(cat /opt/hidden/expected)" ] && [ "$(cat /logs/artifacts/leak)" = none ] \\
   && [ "$(cat /logs/artifacts/uid)" = 1000 ] && [ "$(id -u)" = 2000 ] && [ ! -e /app/scratch ]; then
  echo 1 > /logs/verifier/reward.txt
else
  echo "answer=$(cat /logs/artifacts/answer.txt) leak=$(cat /logs/artifacts/leak) uid=$(cat /logs/artifacts/uid) me=$(id -u)"
  echo 0 > /logs/verifier/reward.txt
fi
"""
HIDDEN_SOLVE = """echo 42 > /logs/artifacts/answer.txt
cat /opt/hidden/expected > /logs/artifacts/leak 2>/dev/null || echo none > /logs/artifacts/leak
id -u > /logs/artifacts/uid
echo junk > /tmp/scratch
"""


def test_a_separate_verifier_under_docker_runs_in_the_image_built_from_tests_as_the_task_s_users(
    tmp_path: Path, base_image: str
) -> None:
    """tests/Dockerfile bakes a hidden answer and the tests; the agent (as uid 1000) only leaves an artifact;
    the verifier (as uid 2000) sees it in its own container. validate-tasks classifies the task ok."""
    task = write_task(
        tmp_path / "hidden",
        "[agent]\nuser = 1000\n[verifier]\nuser = 2000\nenvironment_mode = 'separate'\n",
        dockerfile="FROM ubuntu:24.04\nWORKDIR /app\n",
        **{
            "tests/test.sh": HIDDEN_TEST,
            "tests/Dockerfile": "FROM ubuntu:24.04\nRUN mkdir -p /opt/hidden /app && echo 42 > /opt/hidden/expected\n"
            "COPY test.sh /tests/test.sh\nWORKDIR /app\n",
            "solution/solve.sh": HIDDEN_SOLVE,
        },
    )
    images = {"ubuntu:24.04": base_image}
    verdict = anyio.run(lambda: validate_task(load_task(task), env_kind="docker", work_dir=tmp_path / "v", base_images=images))
    assert (verdict.verdict, verdict.oracle, verdict.nop) == (
        "ok",
        {"status": "passed", "score": 1.0},
        {"status": "failed", "score": 0.0},
    ), verdict
    oracle = tmp_path / "v" / "oracle"
    assert (oracle / "logs" / "artifacts" / "answer.txt").read_text() == "42\n"  # kept as evidence
    assert (oracle / "verifier-env" / "logs" / "verifier" / "reward.txt").read_text() == "1\n"


@needs_bwrap
def test_an_artifact_s_exclude_patterns_leave_entries_out(tmp_path: Path) -> None:
    task = write_task(
        tmp_path / "exclude",
        'artifacts = [{source = "out", exclude = ["*.tmp", "cache"]}]\n',
        **{
            "tests/test.sh": "echo 1 > /logs/verifier/reward.txt\n",
            "solution/solve.sh": "mkdir -p out/cache out/keep && touch out/a.txt out/b.tmp out/cache/x out/keep/c.tmp\n",
        },
    )
    result = trial(task, "oracle", tmp_path)
    kept = tmp_path / "oracle-host" / "artifacts" / "out"
    assert result.status == "passed" and sorted(p.relative_to(kept).as_posix() for p in kept.rglob("*")) == ["a.txt", "keep"]
