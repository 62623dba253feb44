"""``--env docker``: a task's image built by the real engine (cached by content), a container per trial,
the phases' mounts, limits, no network, and nothing of the agent's left running when the verifier starts.

Needs a Docker (or podman) engine and the small offline base image ``waza-test/busybox:1``, which
tests/images/busybox-image.sh builds with ``docker import`` (``.ci/run`` runs it; so does the fixture
when the engine is there and the image is not). Skips, saying why, where there is no engine.
"""

from __future__ import annotations

import functools
import http.server
import os
import shutil
import subprocess
import threading
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TypeVar

import anyio
import pytest

from waza.adapters.specs import AcpAgent
from waza.protocol.errors import ConfigError
from waza.runner.benchmarks.docker import DockerEnvironment
from waza.runner.benchmarks.environment import ENVIRONMENTS, EnvironmentSpec, EnvironmentUnsatisfied, best_available
from waza.runner.benchmarks.loader import load_task
from waza.runner.benchmarks.trial import AgentChoice, run_trial
from waza.runner.cli.commands.benchmarks import parse_base_images

from .benchmark_support import BASE
from .conftest import executable, read_jsonl, run_waza

ACP_AGENT = Path(__file__).parent / "agents" / "scripted_acp_agent.py"
T = TypeVar("T")


def task(tmp: Path, dockerfile: str, **files: str) -> Path:
    env_dir = tmp / "task" / "environment"
    env_dir.mkdir(parents=True)
    (env_dir / "Dockerfile").write_text(dockerfile)
    for name, text in files.items():
        (env_dir / name).write_text(text)
    return env_dir


def run(fn: Callable[[], Awaitable[T]]) -> T:
    return anyio.run(fn)


DOCKERFILE = "FROM ubuntu:24.04\nWORKDIR /app\nCOPY hello.txt /app/\nENV GREETING=hi\n"


def spec(env_dir: Path, **kw: object) -> EnvironmentSpec:
    return EnvironmentSpec(
        task_dir=env_dir.parent,
        environment_dir=env_dir,
        workdir="/app",
        base_images={"ubuntu:24.04": BASE},
        **kw,  # type: ignore[arg-type]
    )


def test_image_built_once_with_the_mapped_base_and_limits(tmp_path: Path, base_image: str) -> None:
    unique = uuid.uuid4().hex  # a new build context: the first trial builds
    env_dir = task(tmp_path, DOCKERFILE, **{"hello.txt": f"hello {unique}\n"})
    the_spec = spec(env_dir, cpus=0.5, memory_mb=256, env={"TASK_VAR": "from-task"})

    async def trial(number: int) -> tuple[dict[str, str], str]:
        env = DockerEnvironment(the_spec, tmp_path / f"trial-{number}")
        await env.start()
        try:
            probe = (
                "cat hello.txt; echo $GREETING $TASK_VAR $EXTRA; pwd; ls /sys/class/net; "
                "cat /sys/fs/cgroup/memory.max /sys/fs/cgroup/memory/memory.limit_in_bytes 2>/dev/null; true"
            )
            done = await env.exec(["sh", "-c", probe], phase="agent", env={"EXTRA": "from-waza"}, timeout=120)
            assert done.exit_code == 0, done.output
            return env.facts(), done.output
        finally:
            await env.stop()

    facts, output = run(lambda: trial(1))
    lines = output.split()
    assert ["hello", unique] == lines[:2]
    assert lines[2:6] == ["hi", "from-task", "from-waza", "/app"]
    assert lines[6:7] == ["lo"]  # network none: loopback only
    assert str(256 * 1024 * 1024) in lines
    assert facts["image_built"] == "yes"
    assert facts["base_image ubuntu:24.04"] == f"replaced by {BASE} (--base-image)"
    assert (facts["cpus"], facts["memory_mb"], facts["network"]) == ("0.5", "256", "none")

    try:
        again, _ = run(lambda: trial(2))
        assert again["image_built"] == "no (cached)"
        assert again["image"] == facts["image"]
    finally:
        subprocess.run(["docker", "rmi", facts["image"]], capture_output=True, check=False)


def test_phases_see_their_own_mounts_and_nothing_of_the_agent_survives(tmp_path: Path, base_image: str) -> None:
    env_dir = task(tmp_path, DOCKERFILE, **{"hello.txt": "x\n"})
    tests = tmp_path / "tests"
    tests.mkdir()
    (tests / "test.sh").write_text(
        "ls /logs/verifier; ps -o args | grep -c -e '^sleep 0.2' -e '^sh -c (while'; cat /app/bg >/dev/null && echo 0.5 > /logs/verifier/reward.txt\n"
    )
    trial_dir = tmp_path / "trial"

    async def go() -> tuple[str, str, str, list[str]]:
        env = DockerEnvironment(spec(env_dir), trial_dir)
        await env.start()
        try:
            # the agent leaves a writer behind, and a file where the verifier's logs go
            agent = "(while :; do date >> /app/bg; sleep 0.2; done) & echo stale > /logs/verifier/old.txt; ls /tests 2>&1"
            a = await env.exec(["sh", "-c", agent], phase="agent", env={}, timeout=60)
            v = await env.exec(["bash", "/tests/test.sh"], phase="verifier", env={}, timeout=60, mounts={"/tests": tests})
            after = await env.exec(["sh", "-c", "ls /tests 2>&1; echo done"], phase="agent", env={}, timeout=60)
            return a.output, v.output, after.output, sorted(p.name for p in (env.logs / "verifier").iterdir())
        finally:
            await env.stop()

    agent_out, verifier_out, after_out, logs = run(go)
    assert "No such file" in agent_out  # /tests is not there while the agent works
    seen = verifier_out.split()
    assert "old.txt" not in seen  # /logs/verifier emptied before the verifier
    assert seen[0] == "0"  # the agent's writer was killed before the verifier started
    assert logs == ["reward.txt"]
    assert (trial_dir / "logs" / "verifier" / "reward.txt").read_text() == "0.5\n"
    assert "No such file" in after_out  # /tests is gone again after the verifier


def test_timeout_kills_everything_the_command_started(tmp_path: Path, base_image: str) -> None:
    env_dir = task(tmp_path, DOCKERFILE, **{"hello.txt": "x\n"})

    async def go() -> tuple[bool, str]:
        env = DockerEnvironment(spec(env_dir), tmp_path / "trial")
        await env.start()
        try:
            slow = await env.exec(["sh", "-c", "sleep 600 & sleep 600"], phase="agent", env={}, timeout=3)
            left = await env.exec(["sh", "-c", "ps -o args | grep -c '^sleep 600'"], phase="agent", env={}, timeout=60)
            return slow.timed_out, left.output
        finally:
            await env.stop()

    timed_out, left = run(go)
    assert timed_out
    assert left.split()[0] == "0"


def test_an_unmapped_base_image_is_named_not_pulled(tmp_path: Path, base_image: str) -> None:
    env_dir = task(tmp_path, "FROM example.invalid/nowhere:1\nWORKDIR /app\n")

    async def go() -> None:
        env = DockerEnvironment(EnvironmentSpec(task_dir=env_dir.parent, environment_dir=env_dir), tmp_path / "t")
        try:
            await env.start()
        finally:
            await env.stop()

    with pytest.raises(EnvironmentUnsatisfied) as caught:
        run(go)
    assert "example.invalid/nowhere:1" in str(caught.value)
    assert "--base-image example.invalid/nowhere:1=LOCAL" in str(caught.value)


def test_a_failing_build_is_unsatisfied_with_the_engine_output(tmp_path: Path, base_image: str) -> None:
    env_dir = task(tmp_path, "FROM ubuntu:24.04\nRUN echo building-fails && false\n")

    async def go() -> None:
        env = DockerEnvironment(spec(env_dir), tmp_path / "t")
        try:
            await env.start()
        finally:
            await env.stop()

    with pytest.raises(EnvironmentUnsatisfied) as caught:
        run(go)
    assert "building-fails" in str(caught.value) or "returned a non-zero code" in str(caught.value)


def test_docker_is_registered_after_host(base_image: str) -> None:
    assert list(ENVIRONMENTS)[-2:] == ["host", "docker"]
    assert best_available()[0] in ("host", "docker")


def test_base_image_map_is_checked() -> None:
    assert parse_base_images(["ubuntu:24.04=local/debian:12"]) == {"ubuntu:24.04": "local/debian:12"}
    for bad in ("ubuntu:24.04", "=x", "a=", "a b=c"):
        with pytest.raises(ConfigError, match="--base-image takes IMAGE=LOCAL_IMAGE"):
            parse_base_images([bad])


FIXTURES = Path(__file__).parent / "fixtures" / "benchmarks"


@pytest.mark.parametrize(
    ("name", "oracle", "nop"),
    [
        ("harbor/hello-sh", "passed 1.0", "failed 0.0"),
        pytest.param("broken/wrong-solution", "failed 0.0", "failed 0.0", marks=pytest.mark.slow),  # engine logic, host-tested
        pytest.param("broken/no-reward", "error reward-missing", "error reward-missing", marks=pytest.mark.slow),
        ("broken/needs-package", "error environment-unsatisfied", "error environment-unsatisfied"),
    ],
)
def test_harbor_tasks_run_in_docker_with_the_control_agents(
    tmp_path: Path, base_image: str, name: str, oracle: str, nop: str
) -> None:
    task = load_task(FIXTURES / name)
    seen: dict[str, str] = {}
    for agent in ("oracle", "nop"):
        result = anyio.run(
            functools.partial(
                run_trial,
                task,
                AgentChoice(agent),
                env_kind="docker",
                trial_dir=tmp_path / agent,
                base_images={"debian:12-slim": base_image},
            )
        )
        seen[agent] = " ".join(str(x) for x in (result.status, result.score if result.status != "error" else result.error_kind))
        assert result.environment["kind"] == "docker"
        assert result.environment["base_image debian:12-slim"] == f"replaced by {base_image} (--base-image)"
        if name == "broken/needs-package":
            assert result.missing == ["tests: pip package 'waza-fixture-checker' (not in the image, and the network is none)"]
    assert seen == {"oracle": oracle, "nop": nop}


def test_waza_run_with_env_docker_records_the_base_image_map(tmp_path: Path, base_image: str) -> None:
    out = tmp_path / "results.jsonl"
    hello = FIXTURES / "harbor" / "hello-sh"
    mapped = ("--env", "docker", "--base-image", f"debian:12-slim={base_image}")
    proc = run_waza("run", hello, "--adapter", "oracle", *mapped, "-o", out)
    assert proc.returncode == 0, proc.stderr
    (result,) = read_jsonl(out)
    assert (result["status"], result["score"]) == ("passed", 1.0)
    assert result["environment"]["base_image debian:12-slim"] == f"replaced by {base_image} (--base-image)"
    # without the map, offline: the base image is named, the trial is an error (exit 1), never a 0
    proc = run_waza("run", hello, "--adapter", "oracle", "--env", "docker")
    assert proc.returncode == 1
    (result,) = read_jsonl(proc.stdout)
    assert (result["status"], result["error_kind"]) == ("error", "environment-unsatisfied")
    assert "--base-image debian:12-slim=LOCAL" in result["missing"][0]
    proc = run_waza("run", hello, "--adapter", "oracle", "--env", "host", "--base-image", "a=b")
    assert proc.returncode == 2
    assert b"--base-image applies to --env docker" in proc.stderr


def test_prepare_builds_once_and_names_what_is_missing(tmp_path: Path, base_image: str) -> None:
    dataset = tmp_path / "dataset"
    for name in ("hello-sh", "py-sum"):
        shutil.copytree(FIXTURES / "harbor" / name, dataset / name)
    # a content of its own, so the first prepare here builds
    (dataset / "py-sum" / "environment" / "marker.txt").write_text(uuid.uuid4().hex)
    mapped = ["--base-image", f"debian:12-slim={base_image}", "--base-image", f"python:3.11-slim={base_image}"]
    first = run_waza("prepare", dataset, *mapped)
    assert first.returncode == 0, first.stderr
    lines = {r["task"]: r for r in read_jsonl(first.stdout)}
    assert lines["py-sum"]["built"] is True
    second = run_waza("prepare", dataset, *mapped)
    assert second.returncode == 0, second.stderr
    again = {r["task"]: r for r in read_jsonl(second.stdout)}
    assert {t: r["built"] for t, r in again.items()} == {"hello-sh": False, "py-sum": False}  # nothing built
    assert again["py-sum"]["image"] == lines["py-sum"]["image"]
    subprocess.run(["docker", "rmi", lines["py-sum"]["image"]], capture_output=True, check=False)
    # without the map, the base image is named and the exit says not ready
    missing = run_waza("prepare", dataset, "--task", "py-sum")
    assert missing.returncode == 1
    (line,) = read_jsonl(missing.stdout)
    assert "python:3.11-slim" in line["missing"][0]


PIP_IMAGE = "waza-test/debian-pip:12"


def test_a_test_time_pip_install_works_offline_once_prepared(tmp_path: Path, base_image: str) -> None:
    if subprocess.run(["docker", "image", "inspect", PIP_IMAGE], capture_output=True, check=False).returncode != 0:
        pytest.skip(f"{PIP_IMAGE} is not built here (tests/images/debian-pip-image.sh, run by .ci/run)")
    task_dir = tmp_path / "dataset" / "needs-iniconfig"
    shutil.copytree(FIXTURES / "harbor" / "hello-sh", task_dir)
    (task_dir / "environment" / "Dockerfile").write_text(
        "FROM debian:12-slim\nRUN rm -f /usr/lib/python3*/EXTERNALLY-MANAGED\nWORKDIR /app\n"
    )
    (task_dir / "tests" / "test.sh").write_text(
        "#!/bin/bash\npip install iniconfig && python3 -c 'import iniconfig' && echo 1 > /logs/verifier/reward.txt\n"
    )
    mapped = ("--base-image", f"debian:12-slim={PIP_IMAGE}")
    before = run_waza("run", task_dir, "--adapter", "oracle", "--env", "docker", *mapped)
    assert before.returncode == 1
    (result,) = read_jsonl(before.stdout)
    assert result["error_kind"] == "environment-unsatisfied"
    assert "'iniconfig'" in result["missing"][0]

    prepared = run_waza("prepare", task_dir.parent, *mapped)
    assert prepared.returncode == 0, prepared.stderr
    (line,) = read_jsonl(prepared.stdout)
    assert line["packages"] == {"pip:iniconfig": "fetched"}

    after = run_waza("run", task_dir, "--adapter", "oracle", "--env", "docker", *mapped)
    assert after.returncode == 0, after.stdout + after.stderr
    (result,) = read_jsonl(after.stdout)
    assert (result["status"], result["score"]) == ("passed", 1.0)
    assert "PIP_NO_INDEX" in result["environment"]["prepared"]
    again = run_waza("prepare", task_dir.parent, *mapped)
    (line,) = read_jsonl(again.stdout)
    assert (line["built"], line["packages"]) == (False, {"pip:iniconfig": "prepared before"})


def test_a_real_agent_runs_inside_the_container(tmp_path: Path, base_image: str) -> None:
    """An exec agent, shown read-only from the host, works in the image's WORKDIR with waza's variables;
    the host's own environment (here a secret-looking variable) does not go in."""
    agent = executable(tmp_path / "agent.sh", "#!/bin/sh\necho 'hello, world' > hello.txt\nenv > /logs/agent/env.txt\n")
    (tmp_path / "work").mkdir()
    out = tmp_path / "results.jsonl"
    proc = run_waza(
        "run",
        FIXTURES / "harbor" / "hello-sh",
        *("--env", "docker", "--base-image", f"debian:12-slim={base_image}", "--sandbox-ro", agent),
        *("--adapter", "exec", "--workspace-dir", tmp_path / "work", "-o", out, "--", agent),
        env={**os.environ, "HOST_ONLY_SECRET": "s3cret"},
    )
    assert proc.returncode == 0, proc.stderr
    (result,) = read_jsonl(out)
    assert (result["status"], result["score"]) == ("passed", 1.0)
    trial_dir = Path(result["trial_dir"])
    assert not (trial_dir / "workspace" / "hello.txt").exists()  # the work happened in the container
    seen = (trial_dir / "logs" / "agent" / "env.txt").read_text()
    assert "WAZA_PROMPT=" in seen
    assert "HOST_ONLY_SECRET" not in seen


@pytest.mark.slow  # test_benchmarks classifies them on the host; the control-agents test covers docker's outcomes
def test_validate_tasks_in_docker_classifies_each_broken_task(base_image: str) -> None:
    mapped = ("--env", "docker", "--base-image", f"debian:12-slim={base_image}")
    proc = run_waza("validate-tasks", FIXTURES / "broken", *mapped)
    assert proc.returncode == 1
    verdicts = {r["task"]: r["verdict"] for r in read_jsonl(proc.stdout)}
    assert verdicts == {
        "needs-package": "environment-unsatisfied",
        "no-reward": "oracle-fails",
        "wrong-solution": "oracle-fails",
    }
    ok = run_waza("validate-tasks", FIXTURES / "harbor" / "hello-sh", *mapped)
    assert ok.returncode == 0, ok.stderr
    assert [r["verdict"] for r in read_jsonl(ok.stdout)] == ["ok"]


def test_storage_mb_is_enforced_or_recorded_as_not_enforced_with_the_engines_reason(tmp_path: Path, base_image: str) -> None:
    """overlay2 takes --storage-opt size= only on xfs with pquota; elsewhere the trial runs and says why not."""
    env_dir = task(tmp_path, "FROM ubuntu:24.04\nWORKDIR /app\n")

    async def facts() -> dict[str, str]:
        env = DockerEnvironment(spec(env_dir, storage_mb=64), tmp_path / "trial")
        try:
            await env.start()
            done = await env.exec(["true"], phase="agent", env={}, timeout=120)
            assert done.exit_code == 0, done.output
            return env.facts()
        finally:
            await env.stop()

    got = run(facts)["storage_mb"]
    assert got == "64" or (got.startswith("64 (not enforced: ") and len(got) > len("64 (not enforced: )")), got


def test_a_relayed_port_needs_python3_in_the_image_and_says_so(tmp_path: Path, base_image: str) -> None:
    """The loopback relay (serve-model for an agent inside) runs on the image's python3; busybox has none."""
    env_dir = task(tmp_path, "FROM ubuntu:24.04\nWORKDIR /app\n")

    async def start() -> None:
        env = DockerEnvironment(spec(env_dir, network="loopback", ports=(9,)), tmp_path / "trial")
        try:
            await env.start()
        finally:
            await env.stop()

    with pytest.raises(EnvironmentUnsatisfied) as caught:
        run(start)
    assert caught.value.missing == ["python3 in the image (the loopback relay to the host's ports runs on it)"]


def test_offline_refuses_the_network_option(tmp_path: Path) -> None:
    proc = run_waza(
        "run", FIXTURES / "harbor" / "hello-sh", "--env", "host", "--offline", "--sandbox-net", "host",
        "--adapter", "nop", "-o", tmp_path / "r.jsonl",
    )  # fmt: skip
    assert proc.returncode == 2
    assert b"--offline refuses --sandbox-net host" in proc.stderr
    assert not (tmp_path / "r.jsonl").exists()


@pytest.mark.slow  # the pip prepare test covers offline prepare in docker; the host uvx test stays in main
def test_a_test_time_uvx_works_offline_once_prepared(tmp_path: Path, base_image: str) -> None:
    """Harbor's usual verifier, `uvx --with X pytest ...`: prepare fetches uv and the packages; the offline
    container gets uv at the end of its PATH, told to take the prepared packages, on the image's Python."""
    if subprocess.run(["docker", "image", "inspect", PIP_IMAGE], capture_output=True, check=False).returncode != 0:
        pytest.skip(f"{PIP_IMAGE} is not built here (tests/images/debian-pip-image.sh, run by .ci/run)")
    task_dir = tmp_path / "dataset" / "needs-uvx"
    shutil.copytree(FIXTURES / "harbor" / "hello-sh", task_dir)
    (task_dir / "tests" / "test.sh").write_text(
        "#!/bin/bash\nuvx --with iniconfig pytest -q /tests/test_hello.py"
        " && echo 1 > /logs/verifier/reward.txt || echo 0 > /logs/verifier/reward.txt\n"
    )
    (task_dir / "tests" / "test_hello.py").write_text(
        "import iniconfig  # noqa: F401\n\n\ndef test_hello():\n    assert open('/app/hello.txt').read() == 'hello, world\\n'\n"
    )
    mapped = ("--base-image", f"debian:12-slim={PIP_IMAGE}", "--offline")
    before = run_waza("run", task_dir, "--adapter", "oracle", "--env", "docker", *mapped)
    assert before.returncode == 1
    (result,) = read_jsonl(before.stdout)
    assert result["error_kind"] == "environment-unsatisfied"
    assert "tests: uv package 'uv'" in result["missing"][0]

    prepared = run_waza("prepare", task_dir.parent, *mapped[:2], timeout=600)
    assert prepared.returncode == 0, prepared.stderr
    (line,) = read_jsonl(prepared.stdout)
    assert line["packages"] == {"uv:uv": "fetched", "pip:iniconfig": "fetched", "pip:pytest": "fetched"}

    after = run_waza("run", task_dir, "--adapter", "oracle", "--env", "docker", *mapped)
    assert after.returncode == 0, after.stdout + after.stderr
    (result,) = read_jsonl(after.stdout)
    assert (result["status"], result["score"]) == ("passed", 1.0)
    assert "UV_OFFLINE" in result["environment"]["prepared"]
    assert "1 passed" in result["steps"][0]["verifier_output"]


def test_an_acp_agent_and_its_terminals_share_the_relayed_port_in_one_container(tmp_path: Path, base_image: str) -> None:
    """Every `docker exec` of a trial shares the container's loopback: the agent's relay listens on the port, and
    a terminal the agent asks for (a second exec) reaches the host through it instead of failing to listen."""
    if subprocess.run(["docker", "image", "inspect", PIP_IMAGE], capture_output=True, check=False).returncode != 0:
        pytest.skip(f"{PIP_IMAGE} is not built here (tests/images/debian-pip-image.sh, run by .ci/run)")

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
    task_dir = tmp_path / "hello-sh"
    shutil.copytree(FIXTURES / "harbor" / "hello-sh", task_dir)
    fetch = f"import urllib.request; print(urllib.request.urlopen('http://127.0.0.1:{port}/', timeout=30).read().decode())"
    (task_dir / "instruction.md").write_text(f'run sh -c "python3 -c \\"{fetch}\\" > hello.txt"\n')
    agent = AgentChoice("acp", AcpAgent(command=("/usr/bin/python3", str(ACP_AGENT)), permission="allow"))
    try:
        result = run(
            lambda: run_trial(
                load_task(task_dir),
                agent,
                env_kind="docker",
                trial_dir=tmp_path / "t",
                ports=(port,),
                base_images={"debian:12-slim": PIP_IMAGE},
            )
        )
    finally:
        server.shutdown()
    assert (result.status, result.score) == ("passed", 1.0), (result.error, result.steps)
    assert result.environment["network"] == "loopback"
