"""``--executor ray`` on a real Ray instance (no mocks): same records, retries, interrupts, pass@k.

One Ray instance, started here, is shared by the module's tests (Ray takes
seconds to start); each ``waza`` joins it with ``--ray-address``. One test
starts waza's own embedded instance instead. Skipped when the ``ray`` extra
is not installed (``pip install '.[ray]' in the checkout``).
"""

from __future__ import annotations

import contextlib
import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import orjson
import pytest

from waza.runner.install_hints import pip_install

from .conftest import ROOT, read_jsonl, run_waza, write_jsonl
from .ray_cluster import Cluster
from .test_orphans import ends

ray = pytest.importorskip("ray", reason="the ray extra is not installed (pip install '.[ray]' in the checkout)")

AGENT = [sys.executable, str(Path(__file__).parent / "agents" / "ray_agent.py")]
ACP_AGENT = [sys.executable, str(Path(__file__).parent / "agents" / "scripted_acp_agent.py")]
#: A record's account of a worker that died under it: which node (56 hex digits), its host, the worker.
DIED_ON = r"last on node [0-9a-f]{56} \(\S+\)"
TRIAL_AGENT = [sys.executable, str(Path(__file__).parent / "agents" / "trial_agent.py")]
#: Plain tasks, then warm agents (--ray-warm-agents). The warm variant is in the slow tier: warm agents have tests
#: of their own in the main suite (the cold records, a worker's death, an interrupt).
TASKS_AND_WARM_AGENTS = [
    pytest.param([], id="tasks"),
    pytest.param(["--ray-warm-agents"], id="warm-agents", marks=pytest.mark.slow),
]


@pytest.fixture(scope="module")
def node_tmp():
    """The temporary directory of the module's cluster node (its workers' TMPDIR): where tasks make their directories."""
    path = Path(tempfile.mkdtemp(prefix="wzt", dir="/tmp"))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


#: The clusters the module started (a test looks into their session folders).
CLUSTERS: list[Cluster] = []


@pytest.fixture(scope="module")
def address(node_tmp):
    """A one-node cluster (``ray start --head``, 2 CPUs) wanting a token; every waza of the module has the token."""
    token = {"RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": secrets.token_hex(16)}
    cluster = Cluster(token)
    CLUSTERS.append(cluster)
    with pytest.MonkeyPatch.context() as env:
        for name, value in token.items():
            env.setenv(name, value)
        try:
            yield cluster.start_head(num_cpus=2, TMPDIR=str(node_tmp))
        finally:
            cluster.stop()


@pytest.fixture
def orphans(tmp_path):
    """The file the test agents list what they leave running in (``orphan``: the agent's and its
    sleeper's ``PID@START``); whatever of it still runs after the test is killed then. The start time
    says the id still names that process, not one the kernel gave the id to since (another test's)."""
    path = tmp_path / "orphans.log"
    yield path
    for pid, start in entries(path):
        with contextlib.suppress(OSError, IndexError):
            if Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[19] == start:
                os.kill(pid, signal.SIGKILL)


def entries(path: Path) -> list[tuple[int, str]]:
    return [(int(pid), start) for pid, _, start in (e.partition("@") for e in path.read_text().split())] if path.exists() else []


def listed(path: Path) -> list[int]:
    return [pid for pid, _ in entries(path)]


def made_by_waza(directory: Path) -> set[str]:
    return {p.name for p in directory.iterdir() if p.name.startswith("waza-")}


def prompt(pid: str, **spec: Any) -> dict[str, Any]:
    return {"id": pid, "input": orjson.dumps(spec).decode(), "hint": spec.get("hint", "ok-answer")}


def capture(prompts: Path, out: Path, *extra: str, **kw: Any) -> subprocess.CompletedProcess[bytes]:
    return run_waza("capture", prompts, "--adapter", "exec", "-g", "builtin:hint", "-o", out, *extra, "--", *AGENT, **kw)


def comparable(record: dict[str, Any]) -> dict[str, Any]:
    """A record without what depends on when and where it ran."""
    record = {k: v for k, v in record.items() if k not in ("timing", "cwd")}
    record["metadata"] = {k: v for k, v in record["metadata"].items() if k != "ray"}  # where it ran
    timings = ("timestamp", "start", "end", "duration")  # a step's times, in ms: 0 or 1 depending on load
    record["trajectory"] = [{k: v for k, v in step.items() if k not in timings} for step in record["trajectory"]]
    record["grades"] = [{k: v for k, v in g.items() if k != "duration"} for g in record["grades"]]
    return record


@pytest.mark.slow  # the main suite compares an embedded instance's run with a local one in tests/test_ray_ops.py
def test_embedded_ray_gives_the_local_records(tmp_path):
    rows = [prompt("a", answer="ok-answer"), prompt("b", answer="wrong"), prompt("c", answer="x", hint="x")]
    prompts = write_jsonl(tmp_path / "p.jsonl", rows)
    local = capture(prompts, tmp_path / "local.jsonl", "-j", "1")
    remote = capture(prompts, tmp_path / "ray.jsonl", "-j", "1", "--executor", "ray")  # an embedded instance, 1 CPU
    assert (local.returncode, remote.returncode) == (0, 0), remote.stderr
    summary = [line for line in local.stderr.splitlines() if line.startswith(b"waza: 3 results")]
    assert summary and summary == [line for line in remote.stderr.splitlines() if line.startswith(b"waza: 3 results")]
    by_id = {r["id"]: comparable(r) for r in read_jsonl(tmp_path / "ray.jsonl")}
    assert by_id == {r["id"]: comparable(r) for r in read_jsonl(tmp_path / "local.jsonl")}
    assert [by_id[i]["status"] for i in "abc"] == ["passed", "failed", "passed"]


def test_a_killed_worker_is_retried_once_and_each_id_written_once(tmp_path, address, node_tmp, orphans):
    runs, killed = tmp_path / "runs.log", tmp_path / "killed.log"
    rows = [
        prompt("killed-once", kill_once=str(tmp_path / "marker")),
        # Its agent hangs once its worker is dead, and leaves a sleeper in a session of its own.
        prompt("always-killed", kill_always=True, log=str(runs), killed=str(killed), orphan=str(orphans)),
        prompt("fine"),
    ]
    out = tmp_path / "out.jsonl"
    before = made_by_waza(node_tmp)
    # Three retries for a lost node (the default), but a task that kills its own worker runs twice, not four times.
    proc = capture(write_jsonl(tmp_path / "p.jsonl", rows), out, "--executor", "ray", "--ray-address", address)
    assert proc.returncode == 1, proc.stderr  # always-killed ends as an error
    records = read_jsonl(out)
    assert sorted(r["id"] for r in records) == ["always-killed", "fine", "killed-once"]
    by_id = {r["id"]: r for r in records}
    assert (tmp_path / "marker").exists()  # the first attempt did die
    assert by_id["killed-once"]["status"] == "passed" and by_id["fine"]["status"] == "passed"
    error = by_id["always-killed"]
    assert error["status"] == "error"
    (text,) = error["errors"]
    said = re.fullmatch(
        r"Ray could not finish this task in 2 tries: its worker process died under it 2 times \(an item that kills its own "
        r"worker is run at most 2 times\); last on node ([0-9a-f]{56}) \((\S+)\), worker pid (\d+): the worker process "
        r"exited \(Ray gives no exit cause for a task's worker\)",
        text,
    )
    assert said, text
    node_id, host, pid = said.groups()
    # The node, host and worker the task itself wrote down on its node: the worker its agent killed the last time.
    pids = killed.read_text().split()
    assert len(set(pids)) == 2 and int(pid) == int(pids[-1])
    assert node_id == by_id["fine"]["metadata"]["ray"]["node_id"] and host == socket.gethostname()
    assert error["metadata"]["ray"] == {"node_id": node_id, "host": host}  # so it counts towards the node's error budget
    assert runs.read_text().splitlines() == ["always-killed ", "always-killed "]  # its agent ran twice
    # The dead workers' tasks' private directories on the node were removed (the one a worker's death left, each time).
    assert made_by_waza(node_tmp) == before
    # Nothing the dead workers' agents left keeps running: each hung agent and its sleeper were killed on the node.
    assert len(listed(orphans)) == 4 and all(ends(pid) for pid in listed(orphans))
    # Ray's own reports of the deaths ("(raylet) A worker died ...") go to neither stream: stdout may be -o -.
    assert b"(raylet)" not in proc.stdout + proc.stderr and proc.stdout == b"", proc.stdout


def wait_for_lines(out: Path, n: int, proc: subprocess.Popen[bytes], limit: float = 60) -> None:
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        if out.exists() and out.read_bytes().count(b"\n") >= n:
            return
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.05)
    raise AssertionError(f"fewer than {n} lines in {out} after {limit}s")


def test_interrupt_then_resume_on_ray_runs_exactly_the_missing_trials(tmp_path, address):
    log = tmp_path / "runs.log"
    ids = [f"p{i}" for i in range(4)]
    prompts = write_jsonl(tmp_path / "p.jsonl", [prompt(i, sleep=0.6, log=str(log)) for i in ids])
    out = tmp_path / "out.jsonl"
    sidecar = tmp_path / "out.jsonl.trials.jsonl"  # every finished trial, kept until its prompt is complete
    args = ["trials", prompts, "-k", "2", "--adapter", "exec", "-g", "builtin:hint", "-o", out]
    args += ["--executor", "ray", "--ray-address", address]
    proc = subprocess.Popen([sys.executable, "-m", "waza", *map(str, args), "--", *AGENT], stderr=subprocess.PIPE, cwd=ROOT)
    wait_for_lines(sidecar, 3, proc)
    proc.send_signal(signal.SIGINT)
    _, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 130, stderr
    # Every line whole (read_jsonl parses each); the pairs done are the finished prompts' and the sidecar's.
    done = {(r["id"], t["trial"]) for r in read_jsonl(out) for t in r["trials"]}
    done |= {(r["id"], r["trial"]) for r in read_jsonl(sidecar)}
    everything = {(i, t) for i in ids for t in (1, 2)}
    assert 3 <= len(done) < len(everything)
    started = len(log.read_text().splitlines())
    again = run_waza(*args, "--resume", "--", *AGENT)
    assert again.returncode == 0, again.stderr
    results = read_jsonl(out)
    assert sorted(r["id"] for r in results) == ids  # each prompt once, with both its trials
    assert all([t["trial"] for t in r["trials"]] == [1, 2] for r in results)
    rerun = {tuple(line.split()) for line in log.read_text().splitlines()[started:]}
    assert {(i, int(t)) for i, t in rerun} == everything - done  # exactly the missing (id, trial) pairs ran
    assert len(log.read_text().splitlines()[started:]) == len(everything - done)


@pytest.mark.parametrize("warm", TASKS_AND_WARM_AGENTS)
def test_a_worker_that_dies_leaves_no_workspace_on_the_node(tmp_path, address, node_tmp, warm, orphans):
    kills = tmp_path / "kills.log"
    killer = f"cwd\norphan {orphans}\nkillparent {kills}"  # leaves a sleeper in a session of its own, then kills its worker
    rows = [{"id": "killer", "input": killer, "hint": "x"}, {"id": "fine", "input": "cwd", "hint": "wzt"}]
    before = made_by_waza(node_tmp)
    out = tmp_path / "out.jsonl"
    args = ["trials", write_jsonl(tmp_path / "p.jsonl", rows), "-k", "2", "--adapter", "acp", "-g", "builtin:hint", "-o", out]
    proc = run_waza(*args, "--executor", "ray", "--ray-address", address, *warm, "--", *ACP_AGENT)
    assert proc.returncode == 1, proc.stderr  # the killer's trials are errors
    by_id = {r["id"]: r for r in read_jsonl(out)}
    # Each trial ran in a fresh workspace in the node's temporary directory (the agent says its cwd) ...
    assert all(t["status"] == "passed" and str(node_tmp) in t["output"] for t in by_id["fine"]["trials"])
    assert len(kills.read_text().splitlines()) == 4  # each killer trial ran twice, its worker dying each time
    assert all(t["status"] == "error" and "worker pid" in t["error"] for t in by_id["killer"]["trials"])
    # ... and none is left: those of the dead workers were removed by the driver, as a task removes its own.
    assert made_by_waza(node_tmp) == before
    # Nor is what the agents started: each sleeper carried its agent's tag, made by the worker that died.
    sleepers = listed(orphans)[1::2]
    assert len(sleepers) == 4 and all(ends(pid) for pid in sleepers)


@pytest.mark.parametrize("warm", TASKS_AND_WARM_AGENTS)
def test_trials_on_ray_give_the_local_pass_at_k(tmp_path, address, warm):
    rows = [
        {"id": "always", "input": orjson.dumps({"pass": [1, 2, 3]}).decode(), "hint": "ok-answer"},
        {"id": "flaky", "input": orjson.dumps({"pass": [1, 3], "crash": [2]}).decode(), "hint": "ok-answer"},
        {"id": "never", "input": orjson.dumps({"pass": []}).decode(), "hint": "ok-answer"},
    ]
    prompts = write_jsonl(tmp_path / "p.jsonl", rows)

    def trials(out: Path, *extra: str) -> dict[str, dict[str, Any]]:
        proc = run_waza(
            "trials", prompts, "-k", "3", "--adapter", "exec", "-g", "builtin:hint", "-o", out, *extra, "--", *TRIAL_AGENT
        )
        assert proc.returncode == 1, proc.stderr  # flaky's trial 2 crashed
        return {r["id"]: r for r in read_jsonl(out)}

    local = trials(tmp_path / "local.jsonl")
    remote = trials(tmp_path / "ray.jsonl", "--executor", "ray", "--ray-address", address, *warm)
    keys = ("n", "passes", "errored", "passRate", "passAtK", "passHatK", "flaky")
    assert {i: [r[k] for k in keys] for i, r in remote.items()} == {i: [r[k] for k in keys] for i, r in local.items()}
    assert [t["status"] for t in remote["flaky"]["trials"]] == ["passed", "error", "passed"]


def test_bad_ray_options_are_usage_errors(tmp_path, address):
    prompts = write_jsonl(tmp_path / "p.jsonl", [prompt("a")])
    out = tmp_path / "out.jsonl"
    for extra, message in [
        (["--ray-resources", "{not json"], "--ray-resources is not valid JSON"),
        (["--ray-resources", '{"GPU": -1}'], "must be a number >= 0"),
        (["--ray-address", address, "-j", "3"], "-j does nothing with --ray-address"),
        (["--ray-address", address, "--ray-resources", '{"GPU": 1}'], "GPU=1 but the Ray cluster has GPU=0"),
        (["--ray-address", address, "--ray-warm-agents", "--ray-resources", '{"GPU": 1}'], "GPU=1 but the Ray cluster"),
    ]:
        proc = capture(prompts, out, "--executor", "ray", *extra)
        assert proc.returncode == 2, (extra, proc.stderr)
        assert message.encode() in proc.stderr and b"Traceback" not in proc.stderr
    proc = capture(prompts, out, "--executor", "spark")
    assert proc.returncode == 2 and b"--executor takes local or ray, got 'spark'" in proc.stderr
    proc = capture(prompts, out, "--ray-num-cpus", "2")
    assert proc.returncode == 2 and b"--ray-num-cpus does nothing with --executor local" in proc.stderr
    proc = capture(prompts, out, "--ray-warm-agents")
    assert proc.returncode == 2 and b"--ray-warm-agents does nothing with --executor local" in proc.stderr
    assert not out.exists() or out.read_bytes() == b""  # nothing was run or written


@pytest.mark.parametrize("warm", TASKS_AND_WARM_AGENTS)
def test_a_suite_on_ray_gives_the_local_records(tmp_path, address, warm):
    # The tasks' fixtures are packed once per task on the driver and unpacked in each trial's workspace on the node.
    suite = ROOT / "examples" / "snippet-explainer" / "eval.yaml"

    def run(out: Path, *extra: str) -> tuple[str, dict[tuple[str, int | None], dict[str, Any]]]:
        proc = run_waza("run", suite, "--adapter", "mock", "-o", out, *extra)
        assert proc.returncode == 1, proc.stderr  # the example suite has a failing task, by design
        verdict = [line for line in proc.stderr.decode().splitlines() if line.startswith("waza: snippet-explainer-eval")]
        return verdict, {(r["id"], r.get("trial")): comparable(r) for r in read_jsonl(out)}

    local = run(tmp_path / "local.jsonl")
    remote = run(tmp_path / "ray.jsonl", "--executor", "ray", "--ray-address", address, *warm)  # each task's own graders
    assert remote[0] == local[0] and len(local[0]) == 1  # the same verdict line
    for key, record in local[1].items():
        assert remote[1].get(key) == record, key
    assert remote[1].keys() == local[1].keys()
    trials = [key for key in local[1] if key[1] is not None]
    assert len(trials) == 2 * 2 and len(local[1]) > len(trials)  # two tasks × two trials, and the trigger prompts


def test_without_the_extra_executor_ray_is_one_line_naming_it(tmp_path):
    # A ray package that cannot be imported, first on the path: what a machine without the extra sees.
    (tmp_path / "hidden" / "ray").mkdir(parents=True)
    (tmp_path / "hidden" / "ray" / "__init__.py").write_text("raise ImportError(\"No module named 'ray'\")\n")
    out = tmp_path / "out.jsonl"
    proc = capture(
        write_jsonl(tmp_path / "p.jsonl", [prompt("a")]), out, "--executor", "ray", env={"PYTHONPATH": str(tmp_path / "hidden")}
    )
    assert proc.returncode == 2
    assert proc.stderr == f"waza: --executor ray needs Ray: {pip_install('ray')}\n".encode()
    assert not out.exists()


def listening_sockets(pids: set[int]) -> list[str]:
    """The local addresses (``host:port``, hex as in /proc) of the TCP sockets the processes ``pids`` listen on."""
    inodes: set[str] = set()
    for pid in pids:
        with contextlib.suppress(OSError):
            for fd in os.listdir(f"/proc/{pid}/fd"):
                with contextlib.suppress(OSError):
                    target = os.readlink(f"/proc/{pid}/fd/{fd}")
                    if target.startswith("socket:["):
                        inodes.add(target[8:-1])
    found = []
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            if fields[3] == "0A" and fields[9] in inodes:  # 0A: LISTEN
                found.append(fields[1])
    return found


def is_loopback(hex_address: str) -> bool:
    host = hex_address.split(":")[0]
    if len(host) == 8:  # IPv4, little-endian: 127.x.x.x ends in 7F
        return host.endswith("7F")
    v4_mapped = "0000000000000000FFFF0000"  # ::ffff:a.b.c.d, as /proc prints it (32-bit words little-endian)
    return host == "00000000000000000000000001000000" or (host[:24] == v4_mapped and host[-2:] == "7F")


def descendants(pid: int) -> set[int]:
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            with contextlib.suppress(OSError):
                stat = Path(f"/proc/{entry}/stat").read_text()
                children.setdefault(int(stat.rsplit(")", 1)[1].split()[1]), []).append(int(entry))
    found, todo = {pid}, [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.add(child)
            todo.append(child)
    return found


@pytest.mark.skipif(not Path("/proc/net/tcp").exists(), reason="reads the listening sockets from Linux's /proc")
def test_the_embedded_instance_listens_on_loopback_only(tmp_path):
    go, log = tmp_path / "go", tmp_path / "started.log"
    prompts = write_jsonl(tmp_path / "p.jsonl", [prompt("a", wait_for=str(go), log=str(log))])
    args = ["capture", prompts, "--adapter", "exec", "-g", "builtin:hint", "-o", tmp_path / "out.jsonl", "--executor", "ray"]
    proc = subprocess.Popen([sys.executable, "-m", "waza", *map(str, args), "--", *AGENT], stderr=subprocess.PIPE, cwd=ROOT)
    try:
        deadline = time.monotonic() + 90
        while not log.exists():  # the agent runs: GCS, raylet, workers and agents are all up
            assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
            time.sleep(0.1)
        tree = descendants(proc.pid)
        sockets = listening_sockets(tree)
    finally:
        go.touch()
        _, stderr = proc.communicate(timeout=90)
    assert proc.returncode == 0, stderr
    assert len(tree) >= 4 and len(sockets) >= 3, (tree, sockets)  # waza, GCS, raylet, a worker: each serves gRPC
    assert [s for s in sockets if not is_loopback(s)] == []


@pytest.mark.slow
def test_a_failed_join_says_why_in_one_line(tmp_path, address):
    prompts = write_jsonl(tmp_path / "p.jsonl", [prompt("a")])
    home = tmp_path / "home"  # no ~/.ray/auth_token there
    home.mkdir()
    cases = [
        ({}, "127.0.0.1:1", "cannot reach it (Connection refused)"),
        ({"RAY_AUTH_TOKEN": "0" * 32}, address, "authentication: the cluster refused the token from RAY_AUTH_TOKEN"),
        (
            {"RAY_AUTH_TOKEN": "", "HOME": str(home)},
            address,
            "authentication: the cluster wants a token and this driver has none",
        ),
    ]
    for env, where, why in cases:
        proc = capture(prompts, tmp_path / "out.jsonl", "--executor", "ray", "--ray-address", where, env=env)
        assert proc.returncode == 2, proc.stderr
        lines = proc.stderr.decode().splitlines()
        assert len(lines) == 1 and lines[0].startswith(f"waza: cannot join the Ray cluster at {where}: "), lines
        assert why in lines[0]
        assert not (tmp_path / "out.jsonl").exists()  # no output file is left behind (a closed port: before -o is opened)


def test_ray_env_reaches_the_tasks_and_secrets_stay_masked(tmp_path, address):
    # The cluster's workers were started without these: only --ray-env carries them to the tasks.
    env = {"WAZA_TEST_SETTING": "fast-mode", "WAZA_TEST_API_KEY": "sk-" + secrets.token_hex(12)}
    prompts = write_jsonl(tmp_path / "p.jsonl", [{"id": "a", "input": "x"}])
    out = tmp_path / "out.jsonl"
    agent = ["sh", "-c", 'echo "setting=$WAZA_TEST_SETTING key=$WAZA_TEST_API_KEY"']
    args = ["capture", prompts, "--adapter", "exec", "-o", out, "--executor", "ray", "--ray-address", address]
    proc = run_waza(*args, "--ray-env", "WAZA_TEST_SETTING", "--ray-env", "WAZA_TEST_API_KEY", "--", *agent, env=env)
    assert proc.returncode == 0, proc.stderr
    (record,) = read_jsonl(out)
    assert record["output"].strip() == "setting=fast-mode key=[REDACTED]"
    assert env["WAZA_TEST_API_KEY"].encode() not in out.read_bytes() + proc.stderr
    assert set(record["metadata"]["ray"]) == {"node_id", "host"} and len(record["metadata"]["ray"]["node_id"]) == 56
    # the values travel as call arguments, not in runtime_env: no file of the cluster's session holds them
    leaked = [
        path
        for node in CLUSTERS[-1].nodes
        for path in Path(node.temp_dir).rglob("*")
        if path.is_file() and not path.is_symlink() and env["WAZA_TEST_API_KEY"].encode() in path.read_bytes()
    ]
    assert leaked == []
    proc = run_waza(*args, "--ray-env", "WAZA_TEST_UNSET", "--", *agent)
    assert (
        proc.returncode == 2
        and proc.stderr == b"waza: --ray-env WAZA_TEST_UNSET: WAZA_TEST_UNSET is not set in this environment\n"
    )


def test_a_node_with_another_waza_refuses_every_job(tmp_path):
    from waza import ExecAgent, PromptCase, Timeouts, Workspace
    from waza.runner.ray_cluster.jobs import Job, NodeMismatch, run_job

    agent = ExecAgent(command=("cat",))
    job = Job(PromptCase(id="a", input="x"), None, agent, (), Timeouts(), Workspace(cwd=tmp_path), version="0.0.0-driver")
    with pytest.raises(NodeMismatch, match=r"node .* \(n1\) runs waza \S+, the driver 0\.0\.0-driver"):
        run_job(job, node_id="n1")


def test_a_job_carries_the_driver_s_key_variables_to_its_node(tmp_path, monkeypatch):
    """A variable named with --judge-api-key-env (any name) is secret on the node too: its graders run without it."""
    from waza import ExecAgent, Executable, PromptCase, Timeouts, Workspace
    from waza.runner.ray_cluster.jobs import Job, run_job

    from .conftest import executable

    monkeypatch.setenv("WAZA_TEST_JUDGE_ACCESS", "zq9")  # no secret word in the name, and short
    grader = executable(
        tmp_path / "grader.py",
        f"#!{sys.executable}\nimport json, os, sys\njson.load(sys.stdin)\n"
        "print(json.dumps({'pass': True, 'score': 1, 'reasoning': 'judge key ' + os.environ.get('WAZA_TEST_JUDGE_ACCESS', 'absent')}))\n",
    )
    workspace = tmp_path / "ws"
    workspace.mkdir()
    job = Job(
        PromptCase(id="a", input="x"), None, ExecAgent(command=("cat",)), (Executable(argv=[str(grader)]),),
        Timeouts(), Workspace(cwd=workspace), secrets=("WAZA_TEST_JUDGE_ACCESS",),
    )  # fmt: skip
    result = run_job(job, node_id="n1")
    assert [(g.status, g.reasoning) for g in result.grades] == [("passed", "judge key absent")], result.grades


def test_warm_agents_start_once_per_slot_and_an_item_that_kills_its_worker_runs_twice(tmp_path, address, node_tmp):
    starts, kills = tmp_path / "starts.log", tmp_path / "kills.log"
    before = made_by_waza(node_tmp)
    rows = [{"id": f"p{i}", "input": f"say answer {i}"} for i in range(8)]
    rows.insert(3, {"id": "killer", "input": f"killparent {kills}"})
    out = tmp_path / "out.jsonl"
    args = ["capture", write_jsonl(tmp_path / "p.jsonl", rows), "--adapter", "acp", "-o", out, "--executor", "ray"]
    proc = run_waza(*args, "--ray-address", address, "--ray-warm-agents", "--", *ACP_AGENT, "--starts", starts)
    assert proc.returncode == 1, proc.stderr  # the killer's record is an error
    by_id = {r["id"]: r for r in read_jsonl(out)}
    assert sorted(by_id) == sorted(r["id"] for r in rows)  # each once
    assert all(by_id[f"p{i}"]["output"] == f"answer {i}" and not by_id[f"p{i}"]["errors"] for i in range(8))
    # Two slots (the cluster's two CPUs) each start one agent; each death of the killer's slot costs one more.
    assert len(kills.read_text().splitlines()) == 2  # the killer ran twice: once more after its worker died, no more
    assert len(starts.read_text().splitlines()) <= 2 + 2 < len(rows)
    (error,) = by_id["killer"]["errors"]
    assert re.fullmatch(
        r"Ray could not finish this task in 2 tries: its worker process died under it 2 times \(an item that kills its own "
        rf"worker is run at most 2 times\); {DIED_ON}, worker pid \d+: worker exit \w+: .+",
        error,
    ), error
    assert "log" not in error and "Some common causes" not in error
    assert by_id["killer"]["metadata"]["ray"]["node_id"] in error  # the node's error budget counts it
    killed = [line.split()[1] for line in kills.read_text().splitlines()]
    said = re.search(r"worker pid (\d+)", error)
    assert said and said[1] == killed[-1]  # the slot's worker its agent killed
    assert made_by_waza(node_tmp) == before  # the dead slots' items left nothing on the node
    assert b"(raylet)" not in proc.stdout + proc.stderr


def test_warm_agents_give_the_cold_records(tmp_path, address):
    rows = [{"id": f"p{i}", "input": f"say answer {i}\nthink hmm\ntool t{i}", "hint": "answer"} for i in range(4)]
    prompts = write_jsonl(tmp_path / "p.jsonl", rows)

    def records(out: Path, *extra: str) -> dict[str, dict[str, Any]]:
        args = ["capture", prompts, "--adapter", "acp", "-g", "builtin:hint", "-o", out, "--executor", "ray"]
        proc = run_waza(*args, "--ray-address", address, *extra, "--", *ACP_AGENT)
        assert proc.returncode == 0, proc.stderr
        return {r["id"]: comparable(r) for r in read_jsonl(out)}

    cold = records(tmp_path / "cold.jsonl")
    assert records(tmp_path / "warm.jsonl", "--ray-warm-agents") == cold
    assert all(r["status"] == "passed" for r in cold.values())


def test_an_interrupt_stops_the_warm_agents(tmp_path, address):
    starts = tmp_path / "starts.log"
    rows = [{"id": i, "input": "hang"} for i in ("a", "b", "c")]  # each waits for session/cancel
    args = ["capture", write_jsonl(tmp_path / "p.jsonl", rows), "--adapter", "acp", "-o", tmp_path / "out.jsonl"]
    args += ["--executor", "ray", "--ray-address", address, "--ray-warm-agents", "--", *ACP_AGENT, "--starts", starts]
    proc = subprocess.Popen([sys.executable, "-m", "waza", *map(str, args)], stderr=subprocess.PIPE, cwd=ROOT)
    deadline = time.monotonic() + 90
    while not starts.exists() or len(starts.read_text().splitlines()) < 2:  # both slots' agents are up
        assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
        time.sleep(0.1)
    time.sleep(1)  # their prompts reach them
    proc.send_signal(signal.SIGINT)
    _, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 130, stderr
    assert b"waza: cancelled 2 Ray tasks in flight" in stderr
    pids = [int(pid) for pid in starts.read_text().split()]
    deadline = time.monotonic() + 30
    while any(Path(f"/proc/{pid}").exists() for pid in pids):  # the slots stopped their agents before they were killed
        assert time.monotonic() < deadline, pids
        time.sleep(0.1)


def test_warm_agents_refuse_what_they_cannot_bring_back(tmp_path, address):
    prompts = write_jsonl(tmp_path / "p.jsonl", [{"id": "a", "input": "say hi"}])
    out = tmp_path / "out.jsonl"
    base = ["capture", prompts, "--adapter", "acp", "-o", out, "--executor", "ray", "--ray-address", address, "--ray-warm-agents"]
    for extra in (["--raw-log", tmp_path / "raw.jsonl"], ["-g", "builtin:human"]):
        proc = run_waza(*base, *extra, "--", *ACP_AGENT)
        assert proc.returncode == 2, proc.stderr
        assert b"--ray-warm-agents does not bring raw logs or review queues back from the nodes yet" in proc.stderr
        assert b"Traceback" not in proc.stderr
