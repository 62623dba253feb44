"""The compatibility suite: the real agent CLIs, pinned releases, driven by `waza capture --adapter headless` against
`waza serve-model` with scripted replies (offline, no key).

Each agent gets the same task: a message, a tool call that reads a file in the workspace and one that writes a
file there, a final answer, then a second turn in the same session; and, separately, a tool call that hangs,
cut by the prompt timeout. The records are checked for the messages, the tool calls (input, output, status),
usage, stop reason and turns, and the workspace for the file the agent wrote.

The CLIs come from npm into the test cache (``${WAZA_TEST_CACHE:-$HOME/.cache/waza-tests}/NAME-VERSION``, as
.ci/run installs them); a test whose CLI is not there skips and says how to install it. To check a newer
release, install it there and change the version in its schema's testedWith (the suite pins what it names).

Claude Code refuses --dangerously-skip-permissions as root unless IS_SANDBOX=1; the tests set it.
"""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson
import pytest
import yaml

from waza.adapters.headless_schema import load_schema

from .conftest import process_cmdlines, read_jsonl, write_jsonl

pytest.importorskip("starlette", reason="waza serve-model needs the serve extra: pip install '.[serve]'")
pytest.importorskip("uvicorn", reason="waza serve-model needs the serve extra: pip install '.[serve]'")
pytest.importorskip("regex", reason="waza serve-model needs the serve extra: pip install '.[serve]'")

CACHE = Path(os.environ.get("WAZA_TEST_CACHE") or Path.home() / ".cache" / "waza-tests")
QUESTION = "Capitalise input.txt into out.txt"
FOLLOW_UP = "What did you write?"
#: The hung tool: a command line no other process has (so the test can tell that this one is gone).
HANG = "python3 -c 'import time; time.sleep(97)' # {marker}"


@dataclass(frozen=True)
class Agent:
    #: The shipped schema; its testedWith names the npm package and the pinned version.
    schema: str
    program: str
    #: (tool name, arguments) that read input.txt, write out.txt, and hang; {ws} is the workspace.
    read: tuple[str, dict[str, Any]]
    write: tuple[str, dict[str, Any]]
    hang: tuple[str, dict[str, Any]]
    stop_reason: str | None = None
    env: dict[str, str] = field(default_factory=dict)

    @property
    def package(self) -> str:
        return self._tested[0]

    @property
    def version(self) -> str:
        return self._tested[1]

    @property
    def _tested(self) -> tuple[str, str]:
        tested = load_schema(self.schema).tested_with
        assert tested is not None, f"the shipped {self.schema} schema names no testedWith"
        return tested

    @property
    def bin_dir(self) -> Path:
        return CACHE / f"{self.schema}-{self.version}" / "node_modules" / ".bin"

    def require(self) -> None:
        if not (self.bin_dir / self.program).exists():
            pytest.skip(
                f"{self.package}@{self.version} is not installed in {CACHE} (.ci/run installs it: "
                f"npm install --prefix {CACHE}/{self.schema}-{self.version} {self.package}@{self.version})"
            )


AGENTS = {
    a.schema: a
    for a in (
        Agent(
            "claude-code",
            "claude",
            read=("Read", {"file_path": "{ws}/input.txt"}),
            write=("Write", {"file_path": "{ws}/out.txt", "content": "HELLO FROM INPUT\n"}),
            hang=("Bash", {"command": HANG, "description": "wait", "timeout": 600000}),
            stop_reason="end_turn",
            env={"IS_SANDBOX": "1"},  # --dangerously-skip-permissions as root
        ),
        Agent(
            "codex",
            "codex",
            read=("exec_command", {"cmd": "cat input.txt"}),
            write=("exec_command", {"cmd": "tr a-z A-Z < input.txt > out.txt"}),
            hang=("exec_command", {"cmd": HANG, "yield_time_ms": 120000}),
        ),
        Agent(
            "gemini-cli",
            "gemini",
            read=("read_file", {"file_path": "{ws}/input.txt"}),
            write=("write_file", {"file_path": "{ws}/out.txt", "content": "HELLO FROM INPUT\n"}),
            hang=("run_shell_command", {"command": HANG}),
        ),
        Agent(
            "opencode",
            "opencode",
            read=("read", {"filePath": "{ws}/input.txt"}),
            write=("write", {"filePath": "{ws}/out.txt", "content": "HELLO FROM INPUT\n"}),
            hang=("bash", {"command": HANG, "description": "wait"}),
            stop_reason="end_turn",
        ),
    )
}


def _call(tool: tuple[str, dict[str, Any]], ws: Path, marker: str = "") -> dict[str, Any]:
    name, args = tool
    filled = {k: v.replace("{ws}", str(ws)).replace("{marker}", marker) if isinstance(v, str) else v for k, v in args.items()}
    return {"name": name, "input": filled}


def capture(
    agent: Agent, tmp_path: Path, replies: list[dict], prompts: list[dict], *args: str, acp: list[str] | None = None
) -> tuple[subprocess.CompletedProcess[bytes], list[dict]]:
    """`waza capture --adapter headless --schema AGENT --serve-model REPLIES ARGS` in a fresh workspace and home
    (with ``acp``, that ACP agent command instead, permissions allowed)."""
    script = tmp_path / "replies.yaml"
    script.write_text(yaml.safe_dump(replies))
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    env = {
        **{
            k: v
            for k, v in os.environ.items()
            if not k.startswith(("ANTHROPIC_", "OPENAI_", "GEMINI_", "GOOGLE_", "CODEX_", "OPENCODE_"))
        },
        **agent.env,
        "PATH": f"{agent.bin_dir}{os.pathsep}{os.environ['PATH']}",
        # The CLIs keep their state under HOME; the configs serve-model writes stay in the real cache (Codex and
        # Gemini CLI refuse them under a world-writable directory such as /tmp).
        "HOME": str(home),
        "XDG_CACHE_HOME": os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache"),
    }
    proc = subprocess.run(
        [
            sys.executable, "-m", "waza", "capture", str(write_jsonl(tmp_path / "prompts.jsonl", prompts)),
            "--serve-model", str(script), "--cwd", str(tmp_path / "ws"), *args,
            *(["--permission", "allow", "--", *acp] if acp else ["--adapter", "headless", "--schema", agent.schema]),
        ],
        cwd=tmp_path, env=env, capture_output=True, timeout=300,
    )  # fmt: skip
    return proc, read_jsonl(proc.stdout)


#: The agent the main suite drives (the quickest to start); the others do the same in the slow tier, which CI runs.
MAIN_AGENT = "claude-code"


@pytest.fixture(params=[pytest.param(name, marks=() if name == MAIN_AGENT else pytest.mark.slow) for name in sorted(AGENTS)])
def agent(request: pytest.FixtureRequest, tmp_path: Path) -> Agent:
    chosen = AGENTS[request.param]
    chosen.require()
    (tmp_path / "ws").mkdir()
    (tmp_path / "ws" / "input.txt").write_text("hello from input\n")
    return chosen


def steps(result: dict, type_: str) -> list[dict]:
    return [s for s in result["trajectory"] if s["type"] == type_]


def task_replies(read: dict[str, Any], write: dict[str, Any]) -> list[dict[str, Any]]:
    """The scripted task: read input.txt, write out.txt, say so; the second turn's answer matched by its question."""
    return [
        {"match": FOLLOW_UP, "text": "I wrote HELLO FROM INPUT."},
        {"text": "Reading the input.", "tool_calls": [read]},
        {"tool_calls": [write]},
        {"text": "Done: out.txt holds the input in capitals."},
    ]


def check_task(proc: subprocess.CompletedProcess[bytes], result: dict, ws: Path) -> list[dict]:
    """The task went through: the file written, the messages per turn; returns the tool call steps."""
    assert proc.returncode == 0, proc.stderr.decode()
    assert result["errors"] == [], (result["errors"], result.get("stderr"))
    # The agent ran the scripted tools for real: the file it was told to write is in the workspace.
    assert (ws / "out.txt").read_text() == "HELLO FROM INPUT\n"
    assert [(s["turn"], s["content"]) for s in steps(result, "message") if s["role"] == "agent"] == [
        (0, "Reading the input."),
        (0, "Done: out.txt holds the input in capitals."),
        (1, "I wrote HELLO FROM INPUT."),
    ]
    assert [s["turn"] for s in steps(result, "message") if s["role"] == "user"] == [0, 1]
    assert result["output"] == "I wrote HELLO FROM INPUT."
    tools = steps(result, "tool_call")
    assert [t["status"] for t in tools] == ["completed", "completed"], tools
    assert all(t["turn"] == 0 and t["input"] for t in tools)
    return tools


def test_a_scripted_tool_using_task_over_two_turns(agent: Agent, tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    prompts = [{"id": "task", "input": [QUESTION, FOLLOW_UP]}]
    replies = task_replies(_call(agent.read, ws), _call(agent.write, ws))
    proc, [result] = capture(agent, tmp_path, replies, prompts, "--raw-log", str(tmp_path / "raw.jsonl"))
    tools = check_task(proc, result, ws)
    read, write = tools
    if agent.schema != "gemini-cli":  # Gemini CLI's stream-json leaves a tool's output out
        assert "hello from input" in orjson.dumps(read["output"]).decode()
    assert "out.txt" in orjson.dumps(write["input"]).decode()
    assert result["usage"]["inputTokens"] > 0 and result["usage"]["outputTokens"] > 0
    assert result["exit"]["stopReason"] == agent.stop_reason
    assert result["exit"]["code"] == 0 or result["exit"]["signal"] is not None


@pytest.mark.slow
@pytest.mark.parametrize("agent", ["opencode"], indirect=True)
def test_opencode_over_acp_does_the_same_task(agent: Agent, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`opencode acp` under the default ACP adapter, against the same script: the ACP session records it."""
    monkeypatch.setenv("WAZA_ACP_HANDSHAKE_TIMEOUT", "120")  # its first start, on a busy machine, can take over 10 s
    ws = tmp_path / "ws"
    replies = task_replies(_call(agent.read, ws), _call(agent.write, ws))
    proc, [result] = capture(agent, tmp_path, replies, [{"id": "task", "input": [QUESTION, FOLLOW_UP]}], acp=["opencode", "acp"])
    tools = check_task(proc, result, ws)
    assert [(t["name"], t["status"]) for t in tools] == [("read", "completed"), ("write", "completed")]
    assert "hello from input" in orjson.dumps(tools[0]["output"]).decode()
    assert result["usage"]["inputTokens"] > 0 and result["exit"]["stopReason"] == "end_turn"


#: Claude Code over ACP (Zed's adapter, which bundles its own Claude Code): not a headless schema, so pinned here.
CLAUDE_ACP = ("@zed-industries/claude-code-acp", "0.16.2")


@pytest.mark.parametrize("agent", ["claude-code"], indirect=True)
def test_claude_code_over_acp_does_the_same_task(agent: Agent, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`claude-code-acp` against the script. It also asks the model for a summary of modified files and sends
    one-word token-count probes (both to a small model): the script answers them by pattern, so they use up none
    of the task's replies. Its tools are the ACP client's, named mcp__acp__Read and mcp__acp__Write."""
    package, version = CLAUDE_ACP
    bin_dir = CACHE / f"claude-code-acp-{version}" / "node_modules" / ".bin"
    if not (bin_dir / "claude-code-acp").exists():
        pytest.skip(f"{package}@{version} is not installed in {CACHE} (.ci/run installs it)")
    monkeypatch.setenv("WAZA_ACP_HANDSHAKE_TIMEOUT", "120")
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    ws = tmp_path / "ws"
    (name, read), (_, write) = agent.read, agent.write
    replies = [
        {"match": "^count$", "text": "ok"},
        {"match": "Files modified by user", "text": "none"},
        *task_replies(_call((f"mcp__acp__{name}", read), ws), _call(("mcp__acp__Write", write), ws)),
    ]
    proc, [result] = capture(agent, tmp_path, replies, [{"id": "task", "input": [QUESTION, FOLLOW_UP]}], acp=["claude-code-acp"])
    check_task(proc, result, ws)
    assert result["exit"]["stopReason"] == "end_turn"


@pytest.mark.slow
def test_a_timeout_cancels_the_agent_and_what_it_started(agent: Agent, tmp_path: Path) -> None:
    marker = f"waza-hang-{uuid.uuid4().hex}"
    replies = [{"text": "Waiting.", "tool_calls": [_call(agent.hang, tmp_path / "ws", marker)]}, {"text": "Never sent."}]
    proc, [result] = capture(agent, tmp_path, replies, [{"id": "hang", "input": QUESTION}], "--timeout", "20")
    assert proc.returncode == 1, proc.stderr.decode()  # an error record, not a usage error
    assert result["exit"]["timedOut"] is True and result["status"] == "error"
    assert any("timed out" in e for e in result["errors"])
    assert "Never sent." not in orjson.dumps(result).decode()
    # Nothing the agent started outlives the prompt: the hung command went with it.
    assert not [c for c in process_cmdlines() if marker in c]
