"""Benchmark task folders (Harbor, Terminal-Bench 1.x) run under ``--env host``: the loader, the verifier as a
grader, the oracle/nop controls, an exec agent inside the environment, and the run/check/validate-tasks commands.

The fixture tasks are in tests/fixtures/benchmarks: a Harbor dataset (sh and Python verifiers, COPY and ENV in
the Dockerfile, a multi-reward task, a two-step task), broken tasks (a wrong reference solution, a verifier that
writes no reward, a verifier that installs a package at test time) and a Terminal-Bench 1.x dataset.
"""

from __future__ import annotations

import http.server
import json
import os
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import anyio
import msgspec
import pytest

from waza.adapters.specs import AcpAgent, ExecAgent
from waza.protocol import schemas
from waza.protocol.benchmark_records import BenchmarkResult
from waza.protocol.errors import ConfigError
from waza.runner.benchmarks.dockerfile import installs, parse
from waza.runner.benchmarks.loader import check_folder, load_folder, load_task
from waza.runner.benchmarks.rewards import RewardError, pytest_reward, read_reward
from waza.runner.benchmarks.trial import AgentChoice, run_trial
from waza.runner.benchmarks.validate import validate_task

from .benchmark_support import needs_bwrap

FIXTURES = Path(__file__).parent / "fixtures" / "benchmarks"
AGENT = FIXTURES / "agents" / "shell_agent.sh"
ACP_AGENT = Path(__file__).parent / "agents" / "scripted_acp_agent.py"


def _host_pytest() -> bool:
    python = shutil.which("python3", path="/usr/bin:/bin")
    return (
        python is not None and subprocess.run([python, "-c", "import pytest"], capture_output=True, check=False).returncode == 0
    )


needs_host_pytest = pytest.mark.skipif(
    not _host_pytest(),
    reason="the host's /usr/bin/python3 has no pytest (apt-get install python3-pytest): Terminal-Bench 1.x verifiers run it",
)


def _trial(task_dir: Path, agent: str, tmp_path: Path, command: tuple[str, ...] = ()) -> BenchmarkResult:
    """One trial in the host environment; every result (passed, failed, each kind of error) is also held to
    the published schema of the result line, schemas/BenchmarkResult.json."""
    task = load_task(task_dir)
    choice = AgentChoice(agent, ExecAgent(command=command) if agent == "exec" else None)
    result = anyio.run(lambda: run_trial(task, choice, env_kind="host", trial_dir=tmp_path / agent))
    assert schemas.errors("BenchmarkResult", json.loads(msgspec.json.encode(result))) == []
    return result


# --- reading the folders ---------------------------------------------------------------------------------------


def test_a_dataset_loads_every_task_with_its_timeouts_tags_and_workdir() -> None:
    tasks = {t.id: t for t in load_folder(FIXTURES / "harbor")}
    assert sorted(tasks) == ["hello-sh", "multi-reward", "py-sum", "two-steps"]
    assert tasks["hello-sh"].steps[0].agent_timeout == 60.0 and tasks["hello-sh"].network == "no-network"
    assert tasks["py-sum"].tags == ("python",) and tasks["py-sum"].steps[0].verifier_env == {"EXPECTED": "15"}
    assert tasks["multi-reward"].workdir == "/work/project"  # the Dockerfile's WORKDIR
    assert [s.name for s in tasks["two-steps"].steps] == ["create", "append"]
    assert tasks["hello-sh"].checksum.startswith("sha256:")


def test_terminal_bench_1_folders_load_with_their_yaml_timeouts() -> None:
    task = load_task(FIXTURES / "tb1" / "tb-fizz")
    assert task.format == "terminal-bench-1" and task.grading == "pytest"
    assert task.steps[0].verifier_timeout == 60 and task.steps[0].extra_tests == {"run-tests.sh": "run-tests.sh"}
    assert "fizz.py" in task.steps[0].instruction


def _copy_task(tmp_path: Path, name: str = "hello-sh") -> Path:
    target = tmp_path / name
    shutil.copytree(FIXTURES / "harbor" / name, target)
    return target


def test_a_bad_key_type_is_one_located_error(tmp_path: Path) -> None:
    task = _copy_task(tmp_path)
    (task / "task.toml").write_text('[agent]\ntimeout_sec = "soon"\n')
    with pytest.raises(ConfigError) as caught:
        load_task(task)
    assert caught.value.source == str(task / "task.toml") and caught.value.field == "agent.timeout_sec"


def test_check_reports_each_broken_task_and_unknown_keys(tmp_path: Path) -> None:
    good = _copy_task(tmp_path)
    (good / "task.toml").write_text("[verifier]\ntimeout_sec = 60\ntimout_sec = 5\n")
    missing = _copy_task(tmp_path, "py-sum")
    (missing / "tests" / "test.sh").unlink()
    tasks, problems, notices = check_folder(tmp_path)
    assert [t.id for t in tasks] == ["hello-sh"]
    assert [str(p) for p in problems] == [f"{missing / 'tests/test.sh'}: is missing"]
    assert notices == [f"{good / 'task.toml'}: field 'verifier.timout_sec': unknown key (ignored, as Harbor does)"]


def test_a_symlinked_instruction_is_refused_not_followed(tmp_path: Path) -> None:
    task = _copy_task(tmp_path)
    secret = tmp_path / "secret.txt"
    secret.write_text("do not read")
    (task / "instruction.md").unlink()
    (task / "instruction.md").symlink_to(secret)
    with pytest.raises(ConfigError) as caught:
        load_task(task)
    assert "instruction.md" in str(caught.value) and "do not read" not in str(caught.value)


def test_a_fifo_in_a_task_is_refused_before_anything_reads_it(tmp_path: Path) -> None:
    task = _copy_task(tmp_path)
    os.mkfifo(task / "tests" / "pipe")
    with pytest.raises(ConfigError, match="is not a regular file, folder or symlink"):
        load_task(task)


def test_the_dockerfile_gives_workdir_env_and_the_packages_asked_for() -> None:
    parsed = parse(
        "FROM python:3.11\nWORKDIR /srv\nWORKDIR app\nENV A=1 B=2\nRUN apt-get update && \\\n  apt-get install -y curl jq\n"
    )
    assert (parsed.base, parsed.workdir, parsed.env) == ("python:3.11", "/srv/app", {"A": "1", "B": "2"})
    assert installs(parsed.instructions[-1].args) == [("apt", "curl"), ("apt", "jq")]
    assert installs("uvx --with pytest==8.1,requests pytest /tests") == [("uv", "uv"), ("pip", "pytest"), ("pip", "requests")]
    # the tool's own package too: the first word that is no option's value, or --from's
    assert installs("uvx -p 3.13 -w pytest-json-ctrf==0.3.5 pytest==8.4.1 --ctrf x") == [
        ("uv", "uv"),
        ("pip", "pytest-json-ctrf"),
        ("pip", "pytest"),
    ]
    assert installs("uvx --from black==24.1 black --check .") == [("uv", "uv"), ("pip", "black")]


# --- rewards ---------------------------------------------------------------------------------------------------


def test_reward_json_wins_over_reward_txt_and_a_disagreement_is_a_warning(tmp_path: Path) -> None:
    (tmp_path / "reward.txt").write_text("1\n")
    (tmp_path / "reward.json").write_text('{"reward": 0.5, "style": 1}')
    reward = read_reward(tmp_path)
    assert (reward.score, reward.subscores, reward.source) == (0.5, {"reward": 0.5, "style": 1.0}, "reward.json")
    assert reward.warnings and "reward.txt" in reward.warnings[0]


@pytest.mark.parametrize(
    ("name", "content", "why"),
    [("reward.txt", "", "empty"), ("reward.txt", "high", "not a number"), ("reward.json", '{"r": "1"}', "not a finite number")],
)
def test_an_unreadable_reward_is_an_error_never_a_zero(tmp_path: Path, name: str, content: str, why: str) -> None:
    (tmp_path / name).write_text(content)
    with pytest.raises(RewardError, match=why):
        read_reward(tmp_path)


def test_pytest_summary_all_passed_is_a_pass_and_no_summary_a_failure() -> None:
    passed = "PASSED t.py::a\nPASSED t.py::b\n==== 2 passed in 0.01s ====\n"
    assert pytest_reward(passed).score == 1.0 and pytest_reward(passed).subscores == {"t.py::a": 1.0, "t.py::b": 1.0}
    assert pytest_reward("PASSED t.py::a\nFAILED t.py::b\n=== 1 failed, 1 passed in 0.1s ===\n").score == 0.0
    assert pytest_reward("bash: pytest: command not found\n").score == 0.0


# --- trials in the host environment ----------------------------------------------------------------------------


@needs_bwrap
@pytest.mark.parametrize("name", ["hello-sh", "py-sum", "multi-reward", "two-steps"])
def test_the_oracle_passes_and_nop_fails_each_sound_task(name: str, tmp_path: Path) -> None:
    oracle = _trial(FIXTURES / "harbor" / name, "oracle", tmp_path)
    nop = _trial(FIXTURES / "harbor" / name, "nop", tmp_path)
    assert (oracle.status, oracle.score) == ("passed", 1.0), oracle
    assert (nop.status, nop.score) == ("failed", 0.0), nop
    assert oracle.environment["kind"] == "host" and oracle.checksum == load_task(FIXTURES / "harbor" / name).checksum


@needs_bwrap
def test_a_multi_reward_task_keeps_its_sub_scores(tmp_path: Path) -> None:
    result = _trial(FIXTURES / "harbor" / "multi-reward", "oracle", tmp_path)
    assert result.subscores == {"reward": 1.0, "works": 1.0, "documented": 1.0}
    assert result.environment["workdir"] == "/work/project"


@needs_bwrap
def test_a_multi_step_task_runs_its_steps_in_one_environment(tmp_path: Path) -> None:
    result = _trial(FIXTURES / "harbor" / "two-steps", "oracle", tmp_path)
    assert [(s.name, s.score) for s in result.steps] == [("create", 1.0), ("append", 1.0)]
    assert (tmp_path / "oracle" / "workspace" / "notes.txt").read_text() == "one\ntwo\n"


@needs_bwrap
def test_a_verifier_without_reward_is_an_error_with_its_output_kept(tmp_path: Path) -> None:
    result = _trial(FIXTURES / "broken" / "no-reward", "oracle", tmp_path)
    assert (result.status, result.score, result.error_kind) == ("error", None, "reward-missing")
    assert result.steps[0].verifier_exit == 0  # exit 0, yet no verdict: the exit code is not the reward


@needs_bwrap
def test_a_package_needed_at_test_time_offline_is_environment_unsatisfied(tmp_path: Path) -> None:
    result = _trial(FIXTURES / "broken" / "needs-package", "oracle", tmp_path)
    assert (result.status, result.error_kind) == ("error", "environment-unsatisfied")
    assert result.missing == ["tests: pip package 'waza-fixture-checker', and the network is none"]
    assert result.steps == []  # nothing ran


@needs_bwrap
def test_a_verifier_past_its_timeout_is_an_error(tmp_path: Path) -> None:
    task = _copy_task(tmp_path)
    (task / "task.toml").write_text("[verifier]\ntimeout_sec = 1\n")
    (task / "tests" / "test.sh").write_text("sleep 30\necho 1 > /logs/verifier/reward.txt\n")
    result = _trial(task, "nop", tmp_path)
    assert (result.status, result.error_kind, result.score) == ("error", "verifier-timeout", None)


@needs_bwrap
def test_the_agent_sees_workdir_but_neither_tests_nor_solution(tmp_path: Path) -> None:
    task = _copy_task(tmp_path)
    spy = tmp_path / "spy.sh"
    spy.write_text("#!/bin/sh\ncat >/dev/null\n{ pwd; ls /tests /solution 2>&1; ls -d /logs/*; } > seen.txt\n")
    spy.chmod(0o755)
    _trial(task, "exec", tmp_path, (str(spy),))
    seen = (tmp_path / "exec" / "workspace" / "seen.txt").read_text().splitlines()
    assert seen[0] == "/app"
    assert any("/tests" in line and "No such file" in line for line in seen)
    assert any("/solution" in line and "No such file" in line for line in seen)
    assert "/logs/verifier" not in seen and "/logs/agent" in seen


@needs_bwrap
def test_an_exec_agent_runs_inside_the_environment_and_is_graded(tmp_path: Path) -> None:
    result = _trial(FIXTURES / "harbor" / "py-sum", "exec", tmp_path, (str(AGENT),))
    assert (result.status, result.steps[0].agent_exit) == ("passed", 0)
    assert result.steps[0].output == "working in /app"  # its answer, recorded as its trajectory
    assert [s.type for s in result.steps[0].trajectory] == ["message", "message"]


@needs_bwrap
def test_an_agent_that_fails_to_start_leaves_its_stderr_in_the_result(tmp_path: Path) -> None:
    """What the agent said on stderr is the evidence of why it failed (a read-only config folder, say)."""
    agent = tmp_path / "failing.sh"
    agent.write_text("#!/bin/sh\necho 'cannot write my config: Read-only file system' >&2\nexit 3\n")
    agent.chmod(0o755)
    result = _trial(FIXTURES / "harbor" / "hello-sh", "exec", tmp_path, (str(agent),))
    assert (result.status, result.steps[0].agent_exit) == ("failed", 3)
    assert "cannot write my config: Read-only file system" in (result.steps[0].agent_stderr or "")


@needs_bwrap
def test_an_acp_agent_and_the_terminals_it_asks_for_run_inside_the_environment(tmp_path: Path) -> None:
    task_dir = _copy_task(tmp_path)
    (task_dir / "instruction.md").write_text('run sh -c "pwd > where.txt; echo hello, world > hello.txt"\n')
    agent = AgentChoice("acp", AcpAgent(command=("/usr/bin/python3", str(ACP_AGENT)), permission="allow"))
    result = anyio.run(lambda: run_trial(load_task(task_dir), agent, env_kind="host", trial_dir=tmp_path / "t"))
    assert result.status == "passed", result.steps
    assert (tmp_path / "t" / "workspace" / "where.txt").read_text() == "/app\n"  # the terminal ran in WORKDIR


@needs_bwrap
def test_a_loopback_port_of_the_host_is_reachable_from_inside_as_serve_model_is(tmp_path: Path) -> None:
    class Hello(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.end_headers()
            self.wfile.write(b"hello, world")

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.HTTPServer(("127.0.0.1", 0), Hello)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    port = server.server_address[1]
    agent = tmp_path / "agent.py"
    agent.write_text(
        "#!/usr/bin/python3\nimport sys, urllib.request\nsys.stdin.read()\n"
        f"body = urllib.request.urlopen('http://127.0.0.1:{port}/', timeout=30).read().decode()\n"
        "open('hello.txt', 'w').write(body + '\\n')\n"
    )
    agent.chmod(0o755)
    task = load_task(FIXTURES / "harbor" / "hello-sh")
    try:
        result = anyio.run(
            lambda: run_trial(
                task,
                AgentChoice("exec", ExecAgent(command=(str(agent),))),
                env_kind="host",
                trial_dir=tmp_path / "t",
                ports=(port,),
            )
        )
    finally:
        server.shutdown()
    assert result.status == "passed", result.steps
    assert result.environment["kind"] == "host"


@needs_bwrap
@needs_host_pytest
def test_terminal_bench_1_tasks_are_graded_by_pytest(tmp_path: Path) -> None:
    fizz = anyio.run(lambda: validate_task(load_task(FIXTURES / "tb1" / "tb-fizz"), env_kind="host", work_dir=tmp_path / "a"))
    half = anyio.run(lambda: validate_task(load_task(FIXTURES / "tb1" / "tb-half"), env_kind="host", work_dir=tmp_path / "b"))
    assert (fizz.verdict, half.verdict) == ("ok", "oracle-fails")


# --- the commands ------------------------------------------------------------------------------------------------


def _waza(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "waza", *map(str, args)], capture_output=True, text=True, timeout=300, check=False
    )


@needs_bwrap
def test_validate_tasks_prints_one_verdict_per_broken_task_and_exits_1() -> None:
    done = _waza("validate-tasks", FIXTURES / "broken", "--env", "host")
    verdicts = {r["task"]: r["verdict"] for r in map(json.loads, done.stdout.splitlines())}
    assert verdicts == {"needs-package": "environment-unsatisfied", "no-reward": "oracle-fails", "wrong-solution": "oracle-fails"}
    assert done.returncode == 1, done.stderr


@needs_bwrap
def test_run_writes_a_result_per_trial_and_resume_skips_them(tmp_path: Path) -> None:
    out = tmp_path / "results.jsonl"
    first = _waza("run", FIXTURES / "harbor", "--adapter", "oracle", "--tags", "python", "--trials", "2", "-j", "2", "-o", out)
    assert first.returncode == 0, first.stderr
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert sorted((r["task"], r["trial"]) for r in rows) == [
        ("multi-reward", 1),
        ("multi-reward", 2),
        ("py-sum", 1),
        ("py-sum", 2),
    ]
    assert all(r["timeouts"]["verifier"] == 60.0 and r["environment"]["kind"] == "host" for r in rows)
    keep = tmp_path / "kept" / "trials"  # a folder that does not exist yet is made
    again = _waza(
        "run", FIXTURES / "harbor", "--adapter", "oracle", "--tags", "python", "--trials", "3", "-o", out, "--resume",
        "--workspace-dir", keep,
    )  # fmt: skip
    assert again.returncode == 0, again.stderr
    assert len(out.read_text().splitlines()) == 6  # only the third trials ran
    assert [p.name.startswith("run-") for p in keep.iterdir()] == [True]


def test_run_refuses_options_a_benchmark_does_not_use(tmp_path: Path) -> None:
    done = _waza("run", FIXTURES / "harbor", "--adapter", "oracle", "--grader", "builtin:x", "-o", tmp_path / "r.jsonl")
    assert done.returncode == 2 and "--grader: not used with benchmark task folders" in done.stderr
    assert not (tmp_path / "r.jsonl").exists()


def test_an_unknown_environment_is_a_usage_error_naming_the_known_ones(tmp_path: Path) -> None:
    done = _waza("run", FIXTURES / "harbor", "--adapter", "nop", "--env", "vm", "-o", tmp_path / "r.jsonl")
    assert done.returncode == 2 and "unknown environment 'vm' (known: host" in done.stderr


def test_check_exits_2_with_one_line_per_problem(tmp_path: Path) -> None:
    task = _copy_task(tmp_path)
    (task / "task.toml").write_text("[environment]\ncpus = 'many'\n")
    done = _waza("check", tmp_path)
    assert done.returncode == 2
    assert done.stdout.strip() == f"{task / 'task.toml'}: field 'environment.cpus': Expected `float | null`, got `str`"


# --- multi-step details: min_reward, healthcheck, artifacts -------------------------------------------------------

GATED = FIXTURES / "steps" / "gated-steps"


@needs_bwrap
def test_steps_run_in_order_with_their_healthchecks_and_artifacts_kept(tmp_path: Path) -> None:
    result = _trial(GATED, "oracle", tmp_path)
    assert (result.status, result.score, result.stopped) == ("passed", 1.0, None), result
    assert [(s.name, s.artifacts) for s in result.steps] == [
        ("create", ["steps/create/artifacts/reward.txt", "steps/create/artifacts/notes.txt"]),
        ("append", ["steps/append/artifacts/reward.txt"]),
    ]
    trial_dir = tmp_path / "oracle"
    assert (trial_dir / "steps/create/artifacts/notes.txt").read_text() == "one\n"  # as it was after step 1
    assert (trial_dir / "steps/append/artifacts/reward.txt").read_text().strip() == "1"


@needs_bwrap
def test_a_step_below_its_min_reward_stops_the_later_steps(tmp_path: Path) -> None:
    result = _trial(GATED, "nop", tmp_path)
    assert (result.status, result.score) == ("failed", 0.0)
    assert [s.name for s in result.steps] == ["create"]  # "append" never ran
    assert result.stopped == "step 'create': reward=0 below min_reward 1; the 1 later step(s) did not run"


@needs_bwrap
def test_a_failing_healthcheck_is_an_environment_error_not_a_score(tmp_path: Path) -> None:
    task = tmp_path / "task"
    shutil.copytree(GATED, task)
    toml = (task / "task.toml").read_text().replace('"test -d /logs/agent"', '"echo not ready; exit 1"')
    (task / "task.toml").write_text(toml)
    result = _trial(task, "oracle", tmp_path)
    assert (result.status, result.score, result.error_kind) == ("error", None, "environment-failed")
    assert result.error == "the environment's healthcheck failed 2 times in a row: 'echo not ready; exit 1' (not ready)"
    assert result.steps == []


def test_an_artifact_leaving_its_folder_or_naming_a_compose_service_is_refused(tmp_path: Path) -> None:
    for artifact, why in (('"../x"', "leaves its folder"), ('{ source = "/x", service = "db" }', "compose")):
        task = tmp_path / why.split()[0]
        shutil.copytree(GATED, task)
        toml = (task / "task.toml").read_text().replace('artifacts = ["notes.txt"]', f"artifacts = [{artifact}]")
        (task / "task.toml").write_text(toml)
        with pytest.raises(ConfigError) as caught:
            load_task(task)
        assert caught.value.field == "steps[0].artifacts[0]" and why in caught.value.message


# --- the Python API ---------------------------------------------------------------------------------------------


@needs_bwrap
def test_run_benchmark_from_python_with_an_agent_spec_and_the_control_agents(tmp_path: Path) -> None:
    import waza

    agent = waza.ExecAgent(command=[str(FIXTURES / "agents" / "shell_agent.sh")])
    out = tmp_path / "results.jsonl"
    results = waza.run_benchmark(FIXTURES / "harbor", agent, env="host", tasks=["hello-*", "py-*"], output=out, work_dir=tmp_path)
    assert sorted((r.task, r.status, r.score) for r in results) == [("hello-sh", "passed", 1.0), ("py-sum", "passed", 1.0)]
    assert all(isinstance(r, waza.BenchmarkResult) for r in results)
    assert len(out.read_text().splitlines()) == 2
    again = waza.run_benchmark(FIXTURES / "harbor", "nop", env="host", tasks=["hello-*"], output=out, resume=True)
    assert [(r.agent, r.status) for r in again] == [("nop", "failed")]  # another agent: not skipped

    async def first() -> waza.BenchmarkResult:
        async for result in waza.arun_benchmark(GATED, "oracle", env="host"):
            return result
        raise AssertionError("no result")

    assert anyio.run(first).score == 1.0
    with pytest.raises(ConfigError, match="sandbox: a benchmark's agent always runs in the task's environment"):
        waza.run_benchmark(GATED, waza.ExecAgent(command=["true"], sandbox=waza.Sandbox()), env="host")
    with pytest.raises(ConfigError, match="offline=True refuses allow_network=True"):
        waza.run_benchmark(GATED, "oracle", offline=True, allow_network=True)


@needs_bwrap
def test_a_compose_environment_is_unsatisfied_and_a_compose_file_beside_a_dockerfile_is_said_unused(
    tmp_path: Path,
) -> None:
    task = tmp_path / "with-compose"
    shutil.copytree(FIXTURES / "harbor" / "hello-sh", task)
    (task / "environment" / "docker-compose.yaml").write_text("services:\n  main:\n    build: .\n  db:\n    image: postgres\n")
    both = _trial(task, "oracle", tmp_path / "both")
    assert both.status == "passed"
    assert both.warnings == [
        "environment/docker-compose.yaml not used: only the Dockerfile's container runs (no compose services)"
    ]
    (task / "environment" / "Dockerfile").unlink()
    only = _trial(task, "oracle", tmp_path / "only")
    assert (only.status, only.score, only.error_kind) == ("error", None, "environment-unsatisfied")
    assert only.missing == [
        "environment/docker-compose.yaml: a compose environment (several services): "
        "waza runs single-container tasks only (a Dockerfile in environment/)"
    ]


def test_check_names_a_compose_file_it_will_not_run(tmp_path: Path) -> None:
    task = _copy_task(tmp_path)
    (task / "environment" / "docker-compose.yaml").write_text("services:\n  main:\n    build: .\n")
    done = _waza("check", task)
    assert done.returncode == 0, done.stderr
    assert f"{task}/environment/docker-compose.yaml: compose is not run (only the Dockerfile's container runs)" in done.stderr
