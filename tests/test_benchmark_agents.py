"""Real agent CLIs inside a benchmark task's environment: Claude Code and Codex CLI (the pinned releases the
compatibility suite uses) on a Harbor task, against `waza serve-model` with a reply script, offline, in
``--env host`` (bubblewrap) and ``--env docker`` (a Debian 12 image; the CLI's installation shown read-only
from the host, the model server reached through waza's loopback relay on the container's own 127.0.0.1);
Gemini CLI and OpenCode in ``--env host`` (slow tests).

Skips, saying why, without the CLI (.ci/run installs it), bubblewrap, a container engine or the Debian image.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from waza.protocol import schemas
from waza.runner.benchmarks.docker import engine

from .conftest import read_jsonl, run_waza
from .test_real_agents import AGENTS

FIXTURES = Path(__file__).parent / "fixtures" / "benchmarks"
DEBIAN = "waza-test/debian-pip:12"
REPLIES = [
    {
        "text": "Writing the file.",
        "tool_calls": [{"name": "Write", "input": {"file_path": "/app/hello.txt", "content": "hello, world\n"}}],
    },
    {"text": "Done: hello.txt holds hello, world."},
]


@pytest.fixture(scope="module")
def claude() -> Path:
    agent = AGENTS["claude-code"]
    agent.require()
    return agent.bin_dir


@pytest.fixture(scope="module")
def codex() -> Path:
    agent = AGENTS["codex"]
    agent.require()
    return agent.bin_dir


def _need_bwrap() -> None:
    if shutil.which("bwrap") is None:
        pytest.skip("no bubblewrap (bwrap) on PATH: --env host needs it")


def _need_debian_image() -> None:
    program, why = engine()
    if program is None:
        pytest.skip(f"no container engine answers here: {why}")
    if subprocess.run([program, "image", "inspect", DEBIAN], capture_output=True, check=False).returncode != 0:
        pytest.skip(f"{DEBIAN} is not built here (tests/images/debian-pip-image.sh, run by .ci/run)")


def _run(tmp_path: Path, bin_dir: Path, *args: str, schema: str = "claude-code", replies: list[dict] = REPLIES) -> dict:
    script = tmp_path / "replies.yaml"
    script.write_text(yaml.safe_dump(replies))
    out = tmp_path / "results.jsonl"
    env = {
        **{
            k: v
            for k, v in os.environ.items()
            if not k.startswith(("ANTHROPIC_", "CLAUDE_", "OPENAI_", "CODEX_", "GEMINI_", "GOOGLE_", "OPENCODE_"))
        },
        "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
        "IS_SANDBOX": "1",  # Claude Code refuses --dangerously-skip-permissions as root without it
    }
    proc = run_waza(
        "run", FIXTURES / "harbor" / "hello-sh", *args, "--offline", "--serve-model", script,
        "--adapter", "headless", "--schema", schema, "--sandbox-env", "IS_SANDBOX",
        "--workspace-dir", tmp_path, "-o", out, env=env, timeout=300,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr.decode()
    (result,) = read_jsonl(out)
    return result


def _check(result: dict) -> None:
    assert schemas.errors("BenchmarkResult", result) == []  # a real agent's trajectory in the published shape
    assert (result["status"], result["score"]) == ("passed", 1.0), result
    (step,) = result["steps"]
    assert step["agent_exit"] == 0
    calls = [s for s in step["trajectory"] if s["type"] == "tool_call"]
    assert [(c["name"], c["status"], c["input"]["file_path"]) for c in calls] == [("Write", "completed", "/app/hello.txt")]
    assert step["output"] == "Done: hello.txt holds hello, world."
    assert any("--offline" in change for change in result["offline"])


def test_claude_code_solves_a_harbor_task_on_the_host_against_serve_model(tmp_path: Path, claude: Path) -> None:
    _need_bwrap()
    result = _run(tmp_path, claude, "--env", "host")
    _check(result)
    assert result["environment"]["kind"] == "host"


def test_claude_code_solves_a_harbor_task_in_docker_through_the_relay(tmp_path: Path, claude: Path) -> None:
    _need_debian_image()
    result = _run(tmp_path, claude, "--env", "docker", "--base-image", f"debian:12-slim={DEBIAN}")
    _check(result)
    facts = result["environment"]
    assert (facts["kind"], facts["network"]) == ("docker", "loopback")
    assert "relayed in" in facts["loopback"]
    # the work happened in the container, not in the trial's host folder
    assert not (Path(result["trial_dir"]) / "workspace" / "hello.txt").exists()


CODEX_REPLIES = [
    {
        "text": "Writing the file.",
        "tool_calls": [{"name": "exec_command", "input": {"cmd": "echo 'hello, world' > /app/hello.txt"}}],
    },
    {"text": "Done: hello.txt holds hello, world."},
]


def _check_codex(result: dict) -> None:
    """Codex writes its CODEX_HOME (sessions, a state database) and refuses to start where it cannot: in the
    environment it gets a folder of the trial, seeded with the config serve-model wrote; its own sandbox (a
    bubblewrap that cannot nest in waza's) is off there, the environment being the sandbox."""
    assert schemas.errors("BenchmarkResult", result) == []
    assert (result["status"], result["score"]) == ("passed", 1.0), result
    (step,) = result["steps"]
    assert "agent_errors" not in step and step["output"] == "Done: hello.txt holds hello, world."
    calls = [s for s in step["trajectory"] if s["type"] == "tool_call"]
    assert [(c["name"], c["status"]) for c in calls] == [("command_execution", "completed")]
    assert "/app/hello.txt" in calls[0]["input"]
    state = Path(result["trial_dir"]) / "logs" / "agent" / "state"
    assert 'model_provider = "waza"' in (state / "config.toml").read_text()  # the seed: serve-model's config
    assert list((state / "sessions").rglob("*.jsonl")), "Codex kept its session in the trial's state folder"


def test_codex_solves_a_harbor_task_on_the_host_with_a_writable_state_folder(tmp_path: Path, codex: Path) -> None:
    _need_bwrap()
    _check_codex(_run(tmp_path, codex, "--env", "host", schema="codex", replies=CODEX_REPLIES))


@pytest.mark.slow  # Codex under host and Claude Code in docker stay in main
def test_codex_solves_a_harbor_task_in_docker_with_the_hosts_node(tmp_path: Path, codex: Path) -> None:
    """Codex's launcher is a Node.js script: the host's node is shown read-only in the container."""
    _need_debian_image()
    node = shutil.which("node")
    if node is None:
        pytest.skip("no node on PATH: Codex's launcher needs it")
    args = ("--env", "docker", "--base-image", f"debian:12-slim={DEBIAN}", "--sandbox-ro", os.path.realpath(node))
    result = _run(tmp_path, codex, *args, schema="codex", replies=CODEX_REPLIES)
    _check_codex(result)
    assert not (Path(result["trial_dir"]) / "workspace" / "hello.txt").exists()  # written in the container


#: Gemini CLI's and OpenCode's own tool that writes a file, as the reply script calls it.
NODE_AGENTS = {
    "gemini-cli": {"name": "write_file", "input": {"file_path": "/app/hello.txt", "content": "hello, world\n"}},
    "opencode": {"name": "write", "input": {"filePath": "/app/hello.txt", "content": "hello, world\n"}},
}


@pytest.mark.slow  # 13-25 s a trial here, more on a busy machine: the CLIs start slowly
@pytest.mark.parametrize("schema", sorted(NODE_AGENTS))
def test_node_cli_agents_solve_a_harbor_task_on_the_host_against_serve_model(tmp_path: Path, schema: str) -> None:
    """Gemini CLI and OpenCode (Node.js CLIs, the pinned releases) inside --env host, offline, the model server
    relayed in; Gemini CLI's settings file is serve-model's, shown read-only, and each keeps its state in the
    environment's private home."""
    agent = AGENTS[schema]
    agent.require()
    _need_bwrap()
    call = NODE_AGENTS[schema]
    replies = [{"text": "Writing the file.", "tool_calls": [call]}, {"text": "Done: hello.txt holds hello, world."}]
    result = _run(tmp_path, agent.bin_dir, "--env", "host", schema=schema, replies=replies)
    assert schemas.errors("BenchmarkResult", result) == []
    assert (result["status"], result["score"], result["environment"]["kind"]) == ("passed", 1.0, "host"), result
    (step,) = result["steps"]
    assert "agent_errors" not in step and step["output"] == "Done: hello.txt holds hello, world."
    calls = [s for s in step["trajectory"] if s["type"] == "tool_call"]
    assert [(c["name"], c["status"]) for c in calls] == [(call["name"], "completed")]
