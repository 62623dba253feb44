"""``--sandbox bwrap``: hostile agents stay inside, and an agent's own work is graded as usual.

Each agent here is a real program run through bubblewrap by the exec adapter (the
engine in-process, through the Python API), trying what an agent under evaluation
must not do: delete and write outside its workspace, read the user's home, reach
the network, escape through a symlink. The command-line tests check the options
and the one-line refusal where no sandbox can be made.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import textwrap
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

import waza
from waza.adapters.sandbox.bwrap import _probe

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux") or _probe() is not None,
    reason=f"no bubblewrap sandbox here ({_probe() if sys.platform.startswith('linux') else 'not Linux'}); .ci/run installs bubblewrap",
)


def _agent(tmp_path: Path, body: str) -> Path:
    """A Python agent in a folder of its own (outside the workspace): the prompt on stdin, the answer on stdout."""
    folder = tmp_path / "agent"
    folder.mkdir(exist_ok=True)
    script = folder / "agent.py"
    script.write_text("import os, sys, socket, pathlib\nprompt = sys.stdin.read()\n" + textwrap.dedent(body))
    return script


def _run(tmp_path: Path, script: Path, sandbox: waza.Sandbox, graders: tuple[waza.GraderSpecT, ...] = ()) -> waza.CaptureResult:
    workspace = tmp_path / "workspace"
    workspace.mkdir(exist_ok=True)
    (results,) = waza.capture(
        [{"id": "p", "input": "go"}],
        waza.ExecAgent(command=(sys.executable, str(script)), sandbox=sandbox),
        graders,
        workspace=waza.Workspace(cwd=workspace),
        timeouts=waza.Timeouts(prompt=120),
    )
    return results


def test_writes_and_deletes_outside_the_workspace_do_not_happen_and_its_own_work_is_graded(tmp_path: Path) -> None:
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "keep.txt").write_text("precious")
    agent_dir = tmp_path / "agent"
    script = _agent(
        tmp_path,
        f"""
        import shutil
        victim = pathlib.Path({str(victim)!r})
        tried = []
        for attempt in (lambda: shutil.rmtree(victim), lambda: (victim / "planted.txt").write_text("x"),
                        lambda: pathlib.Path("/usr/planted.txt").write_text("x"), lambda: pathlib.Path({str(agent_dir)!r}, "planted").write_text("x")):
            try:
                attempt()
                tried.append("done")
            except OSError as exc:
                tried.append(type(exc).__name__)
        pathlib.Path("answer.txt").write_text("42")
        print("wrote answer.txt;", tried)
        """,
    )
    grader = waza.Builtin(grader="file", config={"content_patterns": [{"path": "answer.txt", "must_match": ["^42$"]}]})
    result = _run(tmp_path, script, waza.Sandbox(), (grader,))
    assert result.errors == [], result.stderr
    assert (victim / "keep.txt").read_text() == "precious"
    assert not (victim / "planted.txt").exists()
    assert not Path("/usr/planted.txt").exists()
    assert not (agent_dir / "planted").exists()  # the agent's own folder is read-only
    assert (tmp_path / "workspace" / "answer.txt").read_text() == "42"
    assert result.status == "passed", result.grades


def test_the_home_is_hidden_and_secret_like_variables_are_removed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_ed25519").write_text("PRIVATE KEY")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("MY_SERVICE_TOKEN", "tok-123")
    monkeypatch.setenv("AGENT_API_KEY", "key-456")
    script = _agent(
        tmp_path,
        """
        key = pathlib.Path(os.environ["HOME"], ".ssh", "id_ed25519")
        print("key:", key.read_text() if key.exists() else "hidden", "token:", os.environ.get("MY_SERVICE_TOKEN"),
              "api:", os.environ.get("AGENT_API_KEY"))
        """,
    )
    result = _run(tmp_path, script, waza.Sandbox(keep_env=("AGENT_API_KEY",)))
    assert result.errors == [], result.stderr
    assert "PRIVATE KEY" not in result.output
    assert "key: hidden" in result.output
    assert "token: None" in result.output  # removed, as for graders
    assert "api: key-456" in result.output  # given back by name


@pytest.fixture
def tcp_server() -> Iterator[int]:
    """A TCP server on the host's loopback that answers every connection with one line."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            with conn:
                conn.sendall(b"hello from the host\n")

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield listener.getsockname()[1]
    stop.set()
    listener.close()


_CONNECT = """
port = int(os.environ["TARGET_PORT"])
try:
    with socket.create_connection(("127.0.0.1", port), timeout=20) as s:
        print("reached:", s.makefile().readline().strip())
except OSError as exc:
    print("unreachable:", type(exc).__name__)
"""


@pytest.mark.parametrize(
    ("network", "relayed", "expected"),
    [("none", False, "unreachable"), ("loopback", True, "reached: hello from the host"), ("loopback", False, "unreachable")],
)
def test_the_network_is_what_the_policy_allows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, tcp_server: int, network: str, relayed: bool, expected: str
) -> None:
    monkeypatch.setenv("TARGET_PORT", str(tcp_server))
    other = socket.socket()
    other.bind(("127.0.0.1", 0))  # a port that is relayed instead, when the target is not
    ports = (tcp_server,) if relayed else ((other.getsockname()[1],) if network == "loopback" else ())
    try:
        result = _run(tmp_path, _agent(tmp_path, _CONNECT), waza.Sandbox(network=network, ports=ports))  # type: ignore[arg-type]
    finally:
        other.close()
    assert result.errors == [], result.stderr
    assert expected in result.output


def test_a_symlink_out_of_the_workspace_leads_nowhere(tmp_path: Path) -> None:
    outside = tmp_path / "outside.txt"
    outside.write_text("untouched")
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    (workspace / "link").symlink_to(outside)
    script = _agent(
        tmp_path,
        """
        try:
            pathlib.Path("link").write_text("overwritten")
            print("wrote through the link")
        except OSError as exc:
            print("refused:", type(exc).__name__)
        try:
            os.symlink("/etc/hostname", "mine")
            pathlib.Path("mine").write_text("x")
        except OSError as exc:
            print("etc refused:", type(exc).__name__)
        """,
    )
    result = _run(tmp_path, script, waza.Sandbox())
    assert result.errors == [], result.stderr
    assert outside.read_text() == "untouched"
    assert "refused" in result.output
    assert "etc refused" in result.output


def test_read_only_and_read_write_paths_are_shown_as_listed(tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    (shared / "data.txt").write_text("reference data")
    out = tmp_path / "out"
    out.mkdir()
    script = _agent(
        tmp_path,
        f"""
        print(pathlib.Path({str(shared)!r}, "data.txt").read_text())
        try:
            pathlib.Path({str(shared)!r}, "new.txt").write_text("x")
        except OSError as exc:
            print("read-only:", type(exc).__name__)
        pathlib.Path({str(out)!r}, "report.txt").write_text("written")
        """,
    )
    result = _run(tmp_path, script, waza.Sandbox(read_only=(shared,), read_write=(out,)))
    assert result.errors == [], result.stderr
    assert "reference data" in result.output
    assert "read-only: OSError" in result.output
    assert not (shared / "new.txt").exists()
    assert (out / "report.txt").read_text() == "written"


def test_a_bad_policy_names_its_field() -> None:
    with pytest.raises(waza.ConfigError, match=r"Sandbox\.network"):
        waza.Sandbox(network="everywhere")  # type: ignore[arg-type]
    with pytest.raises(waza.ConfigError, match=r"Sandbox\.ports"):
        waza.Sandbox(ports=(8080,))  # ports need network loopback
    with pytest.raises(waza.ConfigError, match="not an absolute path"):
        waza.Sandbox(read_only=(Path("relative"),))


def _waza(args: list[str], cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "waza", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=120, check=False
    )


def test_the_command_line_runs_an_agent_in_the_sandbox(tmp_path: Path) -> None:
    (tmp_path / "p.jsonl").write_text('{"id": "a", "input": "hi"}\n')
    agent = tmp_path / "agent.sh"
    agent.write_text("#!/bin/sh\ncat >/dev/null\ntouch /usr/escaped 2>/dev/null && echo escaped || echo contained\n")
    agent.chmod(0o755)
    done = _waza(["capture", "p.jsonl", "--adapter", "exec", "--sandbox", "bwrap", "-o", "r.jsonl", "--", str(agent)], tmp_path)
    assert done.returncode == 0, done.stderr
    assert '"output":"contained"' in (tmp_path / "r.jsonl").read_text()


def test_sandbox_options_are_checked_before_anything_runs(tmp_path: Path) -> None:
    (tmp_path / "p.jsonl").write_text('{"id": "a", "input": "hi"}\n')
    (tmp_path / "r.jsonl").write_text("kept\n")
    cases = [
        (["--sandbox-net", "host"], "--sandbox-net needs --sandbox bwrap"),
        (["--sandbox", "docker"], "--sandbox takes bwrap"),
        (["--sandbox", "bwrap", "--sandbox-port", "80"], "ports are relayed only with network 'loopback'"),
        (
            ["--sandbox", "bwrap", "--adapter", "http", "--base-url", "http://127.0.0.1:9"],
            "--sandbox does nothing with --adapter http",
        ),
    ]
    for extra, message in cases:
        args = ["capture", "p.jsonl", "--adapter", "exec", *extra, "-o", "r.jsonl", "--", "/bin/cat"]
        if "http" in extra:
            args = ["capture", "p.jsonl", *extra, "-o", "r.jsonl"]
        done = _waza(args, tmp_path)
        assert done.returncode == 2, (extra, done.stderr)
        assert message in done.stderr, (extra, done.stderr)
        assert "Traceback" not in done.stderr
        assert (tmp_path / "r.jsonl").read_text() == "kept\n"


def test_no_bubblewrap_is_one_clear_line_and_exit_2(tmp_path: Path) -> None:
    (tmp_path / "p.jsonl").write_text('{"id": "a", "input": "hi"}\n')
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in ("sh", "cat"):
        os.symlink(shutil.which(tool) or f"/bin/{tool}", bin_dir / tool)
    env = {**os.environ, "PATH": str(bin_dir)}
    done = _waza(["capture", "p.jsonl", "--adapter", "exec", "--sandbox", "bwrap", "--", "/bin/cat"], tmp_path, env)
    assert done.returncode == 2, done.stderr
    assert "bubblewrap is not installed" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1


ACP_AGENT = Path(__file__).parent / "agents" / "scripted_acp_agent.py"


def test_an_acp_agent_and_the_terminals_it_asks_for_run_inside(tmp_path: Path) -> None:
    victim = tmp_path / "victim.txt"
    victim.write_text("untouched")
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    prompt = "\n".join(
        [
            # the host's /tmp is hidden: the file is not there to read, and a write lands in the sandbox's own /tmp
            f"run grep -q untouched {victim} 2>/dev/null && echo terminal-escaped || echo terminal-contained",
            f"run echo changed > {victim}",
            "run echo made-here > inside.txt && cat inside.txt",
            "symlink out " + str(victim),
            "say done",
        ]
    )
    (result,) = waza.capture(
        [{"id": "p", "input": prompt}],
        waza.AcpAgent(command=(sys.executable, str(ACP_AGENT)), sandbox=waza.Sandbox()),
        workspace=waza.Workspace(cwd=workspace),
        timeouts=waza.Timeouts(prompt=120),
    )
    assert result.errors == [], result.stderr
    text = " ".join(step.content or "" for step in result.trajectory if step.type == "message" and step.role == "agent")
    assert "terminal-contained" in text and "terminal-escaped" not in text
    assert "made-here" in text
    assert victim.read_text() == "untouched"
    assert (workspace / "inside.txt").read_text() == "made-here\n"


def test_a_headless_cli_runs_inside(tmp_path: Path) -> None:
    fixtures = Path(__file__).parent / "fixtures" / "headless"
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    schema = tmp_path / "schema.json"
    source = (Path(__file__).parent.parent / "adapters" / "headless_schemas" / "claude-code.json").read_text()
    cli = tmp_path / "bin" / "fake-claude"
    cli.parent.mkdir()
    fixture = fixtures / "claude-code.jsonl"
    cli.write_text(f'#!/bin/sh\nFAKE_CLI_FIXTURE={fixture} exec {sys.executable} {fixtures / "fake_cli.py"} "$@"\n')
    cli.chmod(0o755)
    doc = json.loads(source)
    doc["command"] = [str(cli), *doc["command"][1:]]
    schema.write_text(json.dumps(doc))
    (result,) = waza.capture(
        [{"id": "p", "input": "hello"}],
        # The wrapper's interpreter is not on its command line: it is listed, as a user would.
        waza.HeadlessAgent(schema=schema, sandbox=waza.Sandbox(read_only=(fixtures, Path(sys.prefix), Path(sys.base_prefix)))),
        workspace=waza.Workspace(cwd=workspace),
        timeouts=waza.Timeouts(prompt=120),
    )
    assert result.errors == [], result.stderr
    assert result.output


def test_a_sandboxed_acp_agent_sees_only_the_workspace_of_its_prompt(tmp_path: Path) -> None:
    root = tmp_path / "workspaces"
    prompts = [
        {"id": "a", "input": "run echo from-a > mark.txt && echo wrote"},
        {"id": "b", "input": "run cat ../a/mark.txt 2>/dev/null || echo sibling-hidden"},
    ]
    results = waza.capture(
        prompts,
        waza.AcpAgent(command=(sys.executable, str(ACP_AGENT)), sandbox=waza.Sandbox()),
        workspace=waza.Workspace(root=root),
        timeouts=waza.Timeouts(prompt=120),
    )
    by_id = {r.id: r for r in results}
    assert all(r.errors == [] for r in results), [r.stderr for r in results]
    assert (root / "a" / "mark.txt").read_text() == "from-a\n"
    assert "sibling-hidden" in by_id["b"].output
    assert "from-a" not in by_id["b"].output
