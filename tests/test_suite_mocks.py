"""A suite's mcp_mocks and command_mocks, made real: MCP mock servers (the mcp SDK) called by an ACP agent
that is a real MCP client, and command shims run by an exec agent (a shell), on the host and in bwrap."""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import waza
from tests.conftest import read_jsonl, run_waza
from waza.adapters.mocks.command_shim import sanitised
from waza.adapters.sandbox.bwrap import _probe
from waza.protocol.errors import ConfigError
from waza.runner.suites.loader import load_suite

SUITES = Path(__file__).parent / "fixtures" / "suites"
AGENTS = Path(__file__).parent / "agents"
REAL_CACHE = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
SHELL = waza.ExecAgent(command=("sh", "-c", "{prompt}"))
NO_BWRAP = pytest.mark.skipif(
    _probe() is not None, reason=f"no bubblewrap sandbox here ({_probe()}); .ci/run installs bubblewrap"
)


def run(suite: Path, agent: waza.AgentSpec, tmp_path: Path) -> tuple[dict[str, dict[str, Any]], waza.SuiteResult]:
    out = tmp_path / "out.jsonl"
    result = waza.run_suite(suite, agent, output=waza.Output(str(out)))
    return {r["id"]: r for r in read_jsonl(out)}, result


def check_error(suite: Path) -> str:
    """The one-line error ``waza check`` prints for a suite, from the loader it runs."""
    with pytest.raises(ConfigError) as caught:
        load_suite(suite)
    return f"waza: {caught.value}"


def check_commands(records: dict[str, dict[str, Any]]) -> None:
    deploy = records["deploy"]
    assert deploy["status"] == "passed", deploy["errors"]
    assert deploy["output"].splitlines() == [
        '{"subscriptionId":"sub-123","name":"Test"}',  # structured stdout, JSON-encoded
        '{"name": "rg-prod", "location": "westeurope"}',  # the fixture's bytes
        "create exit 3",
        "login exit 127",  # unmatched arguments fail closed
        "rg-prod",  # the variable set, in the workspace's infra folder
        "list exit 127",  # the variable set, but at the workspace root
    ]
    assert deploy["command_invocations"] == [
        {"command": "az", "args": ["account", "show", "--output", "json"], "exit_code": 0, "response": 0},
        {"command": "az", "args": ["group", "show", "--name", "rg-prod"], "exit_code": 0, "response": 1},
        {"command": "az", "args": ["deployment", "group", "create"], "exit_code": 3, "response": 2},
        {"command": "az", "args": ["login", "--password", "***", "--user", "me"], "exit_code": 127, "response": None},
        {"command": "az", "args": ["group", "list"], "exit_code": 0, "response": 3},
        {"command": "az", "args": ["group", "list"], "exit_code": 127, "response": None},
    ]
    assert "deployment failed" in deploy["stderr"]
    assert "waza command mock az: no response matches the arguments" in deploy["stderr"]
    assert "hunter2" not in deploy["stderr"]
    steps = [s for s in deploy["trajectory"] if s["type"] == "tool_call"]
    assert [(s["title"], s["status"], s["extra"]["response"]) for s in steps] == [
        ("az account show --output json", "completed", 0),
        ("az group show --name rg-prod", "completed", 1),
        ("az deployment group create", "failed", 2),
        ("az login --password *** --user me", "failed", None),
        ("az group list", "completed", 3),
        ("az group list", "failed", None),
    ]
    # a task's own list replaces the suite's; [] disables them
    assert records["own"]["status"] == "passed", records["own"]
    assert records["own"]["command_invocations"] == [{"command": "gh", "args": ["pr", "list"], "exit_code": 0, "response": 0}]
    assert records["none"]["status"] == "passed" and "command_invocations" not in records["none"]


def test_command_mocks_answer_an_exec_agent_first_on_its_path(tmp_path: Path) -> None:
    records, result = run(SUITES / "mocks-commands", SHELL, tmp_path)
    check_commands(records)
    assert result.summary.status == "passed"


@NO_BWRAP
def test_command_mocks_answer_an_exec_agent_inside_the_bwrap_sandbox(tmp_path: Path) -> None:
    out, cache = tmp_path / "out.jsonl", tmp_path / "cache"
    done = run_waza(
        "run", SUITES / "mocks-commands", "--adapter", "exec", "--sandbox", "bwrap", "-o", out,
        cwd=tmp_path, env={"WAZA_CACHE_DIR": str(cache)},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr.decode()
    check_commands({r["id"]: r for r in read_jsonl(out)})
    assert list((cache / "mocks").iterdir()) == []  # the run's mocks folder is gone


def test_a_command_called_another_number_of_times_than_expect_calls_is_the_tasks_error(tmp_path: Path) -> None:
    suite = tmp_path / "suite"
    shutil.copytree(SUITES / "mocks-commands", suite)
    eval_yaml = suite / "eval.yaml"
    eval_yaml.write_text(eval_yaml.read_text().replace("expect_calls: 6", "expect_calls: 3"))
    records, result = run(suite, SHELL, tmp_path)
    assert records["deploy"]["status"] == "error"
    assert records["deploy"]["errors"] == ["command mock 'az' was called 6 times; expect_calls is 3"]
    assert records["own"]["status"] == "passed"  # its own mocks, its own count
    assert result.summary.status == "failed"


@pytest.mark.parametrize("sandboxed", [False, pytest.param(True, marks=NO_BWRAP)], ids=["host", "bwrap"])
def test_mcp_mocks_are_stdio_mcp_servers_an_acp_agent_calls(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, sandboxed: bool
) -> None:
    """On the host, and with the agent (so the mock servers it starts) inside the bwrap sandbox."""
    monkeypatch.setenv("WAZA_ACP_HANDSHAKE_TIMEOUT", "120")  # two SDKs to import, on a busy machine
    command = (sys.executable, str(AGENTS / "mcp_acp_agent.py"))
    agent = waza.AcpAgent(command=command, sandbox=waza.Sandbox() if sandboxed else None)
    records, result = run(SUITES / "mocks-mcp", agent, tmp_path)
    calls = records["calls"]
    assert calls["status"] == "passed", (calls["errors"], calls["output"])
    lines = calls["output"].splitlines()
    # every declared tool listed with its description, inline and from the fixtures folder
    assert [line for line in lines if line.startswith("tool ")] == [
        "tool tracker.list_issues: Issues of a repository",
        "tool github.get_user: A user's profile",
        "tool github.get_repo: A repository",
    ]
    assert (
        "call tracker.list_issues: ERROR mcp mock 'tracker': no response of tool 'list_issues' matches the arguments"
        ' {"owner": "someone"}; add a fixture for them' in calls["output"]
    )
    assert "call tracker.close_issue: ERROR mcp mock 'tracker' has no tool 'close_issue'" in calls["output"]
    assert [(c["mock"], c["tool"], c["response"], c["error"]) for c in calls["mcp_mock_calls"]] == [
        ("tracker", "list_issues", 0, False),  # match
        ("tracker", "list_issues", 1, False),  # match_regex
        ("tracker", "list_issues", 2, True),  # match_schema, answered with its error
        ("tracker", "list_issues", None, True),  # no response matches
        ("tracker", "close_issue", None, True),  # no such tool
        ("github", "get_user", 0, False),
        ("github", "get_repo", 0, False),
    ]
    # the agent's own tool calls are the trajectory's steps
    steps = [(s["name"], s["status"]) for s in calls["trajectory"] if s["type"] == "tool_call"]
    assert steps[0] == ("tracker.list_issues", "completed") and steps[4] == ("tracker.close_issue", "failed")
    assert result.summary.status == "passed"


def test_an_adapter_that_cannot_take_the_mocks_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="mcp_mocks: the exec adapter cannot hand MCP servers to its agent"):
        waza.SuiteRun.prepare(SUITES / "mocks-mcp", SHELL)
    with pytest.raises(ConfigError, match="command_mocks: the acp adapter does not start its agent per task"):
        waza.SuiteRun.prepare(SUITES / "mocks-commands", waza.AcpAgent(command=(sys.executable, "agent.py")))
    done = run_waza("run", SUITES / "mocks-mcp", "--adapter", "exec", "--", "true", cwd=tmp_path)
    assert done.returncode == 2
    assert (
        done.stderr.decode()
        .splitlines()[-1]
        .endswith(
            "mcp_mocks: the exec adapter cannot hand MCP servers to its agent;"
            " run the suite with an acp agent or a headless schema with mcpConfig (claude-code, codex, gemini-cli, opencode)"
        )
    )


@pytest.mark.parametrize(
    ("what", "old", "new", "where", "text"),
    [
        (
            "bad regex",
            '"rg-.+"',
            '"rg-(["',
            "eval.yaml:14: field 'command_mocks[0].responses[1].args_regex[3]'",
            "not a valid regular expression",
        ),
        (
            "missing fixture",
            "fixtures/group.json",
            "fixtures/nope.json",
            "eval.yaml:15: field 'command_mocks[0].responses[1].fixture'",
            "is not a file",
        ),
        (
            "fixture outside",
            "fixtures/group.json",
            "../x.json",
            "eval.yaml:15: field 'command_mocks[0].responses[1].fixture'",
            "climbs out",
        ),
    ],
)
def test_a_bad_command_mock_is_refused_at_its_line(tmp_path: Path, what: str, old: str, new: str, where: str, text: str) -> None:
    suite = tmp_path / "suite"
    shutil.copytree(SUITES / "mocks-commands", suite)
    eval_yaml = suite / "eval.yaml"
    eval_yaml.write_text(eval_yaml.read_text().replace(old, new))
    message = check_error(suite)
    assert where in message and text in message, message


def test_a_bad_mcp_mock_fixture_is_refused_naming_its_file(tmp_path: Path) -> None:
    suite = tmp_path / "suite"
    shutil.copytree(SUITES / "mocks-mcp", suite)
    (suite / "fixtures" / "github" / "broken.json").write_text('{"responses": [{"match": {}}]}')
    message = check_error(suite)
    assert "eval.yaml:23: field 'mcp_mocks[1].fixtures'" in message
    assert "fixtures/github/broken.json: responses[0] needs 'return' or 'error'" in message


def test_a_tasks_own_command_mocks_are_checked_in_the_task_file(tmp_path: Path) -> None:
    suite = tmp_path / "suite"
    shutil.copytree(SUITES / "mocks-commands", suite)
    task = suite / "tasks" / "own.yaml"
    task.write_text(task.read_text().replace("args: [pr, list]", "argz: [pr, list]"))
    message = check_error(suite)
    assert "own.yaml:6: field 'command_mocks[0].responses[0].argz': unknown key 'argz'; did you mean 'args'?" in message


def test_recorded_arguments_mask_secret_like_option_values() -> None:
    assert sanitised(["login", "--password", "p", "--client-secret=s", "--name", "n", "-u", "me"]) == [
        "login", "--password", "***", "--client-secret=***", "--name", "n", "-u", "me",
    ]  # fmt: skip


CLAUDE_TASK = """\
id: ask
inputs:
  prompt: List the issues of microsoft/waza from the tracker.
graders:
  - type: text
    name: answered
    config: {contains: ["issue 41"]}
"""
CLAUDE_REPLIES = """\
- tool_calls:
    - name: mcp__tracker__list_issues
      input: {owner: microsoft, repo: waza}
- tool_calls:
    - name: Bash
      input: {command: az account show --output json, description: the account}
- text: The tracker lists issue 41.
"""
CLAUDE_COMMANDS = """\
command_mocks:
  - name: az
    responses:
      - args: [account, show, --output, json]
        stdout: {subscriptionId: sub-123}
"""


def served_suite_run(schema: str, tmp_path: Path, replies: str, extra_yaml: str = "") -> dict[str, Any]:
    """`waza run` of the mocks-mcp suite with CLAUDE_TASK as its one task (``extra_yaml`` added to eval.yaml), by
    the pinned CLI of ``schema`` in a fresh home, its model `waza serve-model` with ``replies``; the record."""
    from tests.test_real_agents import AGENTS as REAL_AGENTS

    agent = REAL_AGENTS[schema]
    agent.require()
    pytest.importorskip("uvicorn", reason="waza serve-model needs the serve extra: pip install '.[serve]'")
    suite = tmp_path / "suite"
    shutil.copytree(SUITES / "mocks-mcp", suite)
    shutil.rmtree(suite / "tasks")
    (suite / "tasks").mkdir()
    (suite / "tasks" / "ask.yaml").write_text(CLAUDE_TASK)
    eval_yaml = suite / "eval.yaml"
    eval_yaml.write_text(eval_yaml.read_text().replace('schemaVersion: "1.1"', 'schemaVersion: "1.3"') + extra_yaml)
    (tmp_path / "replies.yaml").write_text(replies)
    (tmp_path / "home").mkdir()
    server = subprocess.Popen(
        [sys.executable, "-m", "waza", "serve-model", str(tmp_path / "replies.yaml")],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
    )  # fmt: skip
    try:
        assert server.stdout is not None
        server.stdout.readline()  # the URL; then NAME=VALUE lines (values quoted for a shell) up to a blank line
        served = dict(shlex.split(line)[0].partition("=")[::2] for line in iter(server.stdout.readline, "\n"))
        env = {
            **{
                k: v
                for k, v in os.environ.items()
                if not k.startswith(("ANTHROPIC_", "OPENAI_", "GEMINI_", "GOOGLE_", "CODEX_", "OPENCODE_"))
            },
            **served,
            **agent.env,
            "PATH": f"{agent.bin_dir}{os.pathsep}{os.environ['PATH']}",
            "HOME": str(tmp_path / "home"),
            # the run's mocks folder, and serve-model's configs, where no folder above is writable by others
            # (Gemini CLI and Codex refuse their files below /tmp)
            "XDG_CACHE_HOME": str(REAL_CACHE),
            "WAZA_CACHE_DIR": str(REAL_CACHE / "waza"),
        }
        out = tmp_path / "out.jsonl"
        done = run_waza("run", suite, "--adapter", "headless", "--schema", schema, "-o", out, cwd=tmp_path, env=env, timeout=300)
    finally:
        server.terminate()
        server.wait(timeout=30)
    assert done.returncode == 0, done.stderr.decode()
    [record] = read_jsonl(out)
    assert record["status"] == "passed", (record["errors"], record.get("stderr"))
    return record


#: The one call the tests below script, as the mock logs it.
LISTED = {"mock": "tracker", "tool": "list_issues", "arguments": {"owner": "microsoft", "repo": "waza"}, "response": 0}


def test_claude_code_calls_an_mcp_mock_handed_over_with_mcp_config_and_a_command_mock(tmp_path: Path) -> None:
    """The pinned Claude Code CLI, its model served by `waza serve-model`: scripted tool calls to the MCP mock
    and, through its Bash tool, to a command mock on its PATH."""
    record = served_suite_run("claude-code", tmp_path, CLAUDE_REPLIES, CLAUDE_COMMANDS)
    assert record["mcp_mock_calls"] == [{**LISTED, "error": False}]
    mcp, bash, command = [s for s in record["trajectory"] if s["type"] == "tool_call"]
    assert mcp["name"] == "mcp__tracker__list_issues" and mcp["status"] == "completed"
    assert "Hermetic tools" in str(mcp["output"])  # the mock's answer, through the real MCP protocol
    assert bash["name"] == "Bash" and "sub-123" in str(bash["output"])
    assert command["title"] == "az account show --output json" and command["extra"]["mock"] == "command_mocks"
    assert record["command_invocations"] == [
        {"command": "az", "args": ["account", "show", "--output", "json"], "exit_code": 0, "response": 0}
    ]


MCP_REPLIES = """\
- tool_calls:
    - name: mcp__tracker__list_issues
      input: {owner: microsoft, repo: waza}
- text: The tracker lists issue 41.
"""


@pytest.mark.slow  # Claude Code's MCP-mock test stays in main; the fake-CLI test checks Codex's hand-over
def test_codex_calls_an_mcp_mock_handed_over_with_c_options(tmp_path: Path) -> None:
    """The pinned Codex CLI gets the mock as `-c mcp_servers.tracker={...}` (required: it waits for the handshake
    and fails the run if there is none) and calls it as the tool list_issues of its namespace mcp__tracker,
    which the scripted name mcp__tracker__list_issues stands for."""
    record = served_suite_run("codex", tmp_path, MCP_REPLIES)
    assert record["mcp_mock_calls"] == [{**LISTED, "error": False}]
    [call] = [s for s in record["trajectory"] if s["type"] == "tool_call" and s.get("title") == "tracker"]
    assert call["name"] == "list_issues" and call["status"] == "completed"
    assert "Hermetic tools" in str(call["output"])


def gemini_and_opencode_replies(tool: str) -> str:
    return MCP_REPLIES.replace("mcp__tracker__list_issues", tool)


@pytest.mark.slow
def test_gemini_cli_calls_an_mcp_mock_handed_over_in_a_system_defaults_file(tmp_path: Path) -> None:
    """The pinned Gemini CLI reads the mock from the settings file GEMINI_CLI_SYSTEM_DEFAULTS_PATH names (its
    mcpServers merged with the user's) and offers it as mcp_tracker_list_issues."""
    record = served_suite_run("gemini-cli", tmp_path, gemini_and_opencode_replies("mcp_tracker_list_issues"))
    assert record["mcp_mock_calls"] == [{**LISTED, "error": False}]
    [call] = [s for s in record["trajectory"] if s["type"] == "tool_call"]
    assert call["name"] == "mcp_tracker_list_issues" and call["status"] == "completed"


@pytest.mark.slow
def test_opencode_calls_an_mcp_mock_handed_over_in_the_config_file_opencode_config_names(tmp_path: Path) -> None:
    """The pinned OpenCode reads the mock from the file OPENCODE_CONFIG names (merged with serve-model's
    OPENCODE_CONFIG_CONTENT) and offers it as tracker_list_issues."""
    record = served_suite_run("opencode", tmp_path, gemini_and_opencode_replies("tracker_list_issues"))
    assert record["mcp_mock_calls"] == [{**LISTED, "error": False}]
    [call] = [s for s in record["trajectory"] if s["type"] == "tool_call"]
    assert call["name"] == "tracker_list_issues" and call["status"] == "completed"
    assert "Hermetic tools" in str(call["output"])


def test_lines_the_agent_writes_into_the_calls_log_that_no_mock_writes_are_not_counted(tmp_path: Path) -> None:
    suite = tmp_path / "suite"
    shutil.copytree(SUITES / "mocks-commands", suite)
    forge = (
        "cfg=$(dirname $(command -v gh))/../commands.json; "
        """log=$(sed 's/.*"log":"\\([^"]*\\)".*/\\1/' $cfg); """
        """echo '{"kind": "command", "command": "gh", "args": "x", "time": "y"}' >> $log; echo 'not json' >> $log; """
    )
    task = suite / "tasks" / "own.yaml"
    task.write_text(
        task.read_text().replace('prompt: "gh pr list;', f"prompt: '{forge.replace(chr(39), chr(39) * 2)} gh pr list;")
    )
    task.write_text(task.read_text().replace('echo no-az"', "echo no-az'"))
    records, _ = run(suite, SHELL, tmp_path)
    own = records["own"]
    assert own["status"] == "passed", (own["errors"], own["output"], own["stderr"])
    assert own["command_invocations"] == [{"command": "gh", "args": ["pr", "list"], "exit_code": 0, "response": 0}]


def test_a_mocks_folder_that_cannot_be_made_is_one_line_and_exit_2(tmp_path: Path) -> None:
    """The run's mocks folder goes in waza's cache folder; where that cannot hold one, the run stops before
    any agent starts, saying where and what to set."""
    (tmp_path / "cache").write_text("a file, not a folder")
    done = run_waza(
        "run", SUITES / "mocks-commands", "--adapter", "exec", "--", "true", cwd=tmp_path,
        env={"WAZA_CACHE_DIR": str(tmp_path / "cache")},
    )  # fmt: skip
    err = done.stderr.decode()
    assert done.returncode == 2, err
    assert f"cannot make the run's mocks folder in {tmp_path / 'cache' / 'mocks'}" in err, err
    assert "set WAZA_CACHE_DIR to a writable folder" in err and "Traceback" not in err, err
