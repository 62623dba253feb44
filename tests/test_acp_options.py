"""ACP adapter options through the CLI: MCP servers, authentication, permission rules, bad configuration."""

from __future__ import annotations

import sys
from pathlib import Path

import orjson

from waza.protocol.schemas import errors

from .conftest import read_jsonl, run_waza, write_jsonl

AGENT = [sys.executable, str(Path(__file__).parent / "agents" / "scripted_acp_agent.py")]


def one_prompt(tmp: Path, text: str) -> Path:
    return write_jsonl(tmp / "p.jsonl", [{"id": "q", "input": text}])


def only_result(stdout: bytes) -> dict:
    (result,) = read_jsonl(stdout)
    assert errors("CaptureResult", result) == []
    return result


def test_mcp_servers_from_option_and_config_reach_session_new(tmp_path: Path) -> None:
    config = tmp_path / "mcp.json"
    config.write_bytes(orjson.dumps({"mcpServers": {"files": {"command": "mcp-files", "args": ["--ro"], "env": {"A": "1"}}}}))
    server = orjson.dumps({"type": "http", "name": "search", "url": "http://127.0.0.1:9/mcp"}).decode()
    raw = tmp_path / "raw.jsonl"
    proc = run_waza(
        "capture", one_prompt(tmp_path, "mcp"), "--mcp-server", server, "--mcp-config", config, "--raw-log", raw, "--", *AGENT
    )
    assert only_result(proc.stdout)["output"] == "mcp: search,files"
    (new,) = [line["message"] for line in read_jsonl(raw) if line["message"].get("method") == "session/new"]
    assert new["params"]["mcpServers"] == [
        {"type": "http", "name": "search", "url": "http://127.0.0.1:9/mcp", "headers": []},
        {"name": "files", "command": "mcp-files", "args": ["--ro"], "env": [{"name": "A", "value": "1"}]},
    ]


def test_authentication_only_with_a_configured_method(tmp_path: Path) -> None:
    prompts = one_prompt(tmp_path, "say in")
    needs_auth = [*AGENT, "--require-auth"]
    ok = run_waza("capture", prompts, "--auth-method", "token", "--", *needs_auth)
    assert only_result(ok.stdout)["output"] == "in" and ok.returncode == 0
    missing = only_result(run_waza("capture", prompts, "--", *needs_auth).stdout)
    assert missing["status"] == "error"
    assert "requires authentication" in missing["errors"][0] and "offered: token" in missing["errors"][0]
    wrong = only_result(run_waza("capture", prompts, "--auth-method", "oauth", "--", *needs_auth).stdout)
    assert wrong["errors"] == ["AcpAgent.auth_method 'oauth' is not offered by the agent (offered: token)"]


def test_agent_that_cannot_start_is_a_usage_error_not_a_crash(tmp_path: Path) -> None:
    proc = run_waza(
        "capture",
        write_jsonl(tmp_path / "p.jsonl", [{"id": "a", "input": "x"}, {"id": "b", "input": "y"}]),
        "--",
        str(tmp_path / "no-such-agent"),
    )
    assert proc.returncode == 2 and proc.stdout == b""
    assert b"no-such-agent' cannot be run: No such file or directory" in proc.stderr and b"Traceback" not in proc.stderr


def test_bad_permission_rule_names_file_line_and_field(tmp_path: Path) -> None:
    rules = tmp_path / "rules.jsonl"
    rules.write_text('{"kind": "read", "decision": "allow"}\n{"kind": "edit", "decision": "maybe"}\n')
    proc = run_waza("capture", one_prompt(tmp_path, "x"), "--permission-rules", rules, "--", *AGENT)
    assert proc.returncode == 2 and proc.stdout == b""
    assert f"{rules}:2: field 'decision'" in proc.stderr.decode()


def test_bad_options_are_rejected_before_running(tmp_path: Path) -> None:
    prompts = one_prompt(tmp_path, "x")
    cases = {
        ("--permission", "maybe"): "must be allow or deny",
        ("--mcp-server", '{"name": "x"}'): "needs a string 'command'",
        ("--mcp-server", '{"name": "x", "command": "y", "cwd": "/"}'): "unknown key 'cwd'",
        ("--events",): "--events does nothing with --adapter acp",
        ("--raw-log", str(tmp_path / "missing" / "raw.jsonl")): "cannot be written",
    }
    for option, message in cases.items():
        proc = run_waza("capture", prompts, *option, "--", *AGENT)
        assert proc.returncode == 2, option
        assert message in proc.stderr.decode(), (option, proc.stderr)
    bad_config = tmp_path / "mcp.json"
    bad_config.write_text('{"mcpServers": {"s": {"type": "ws", "url": "x"}}}')
    proc = run_waza("capture", prompts, "--mcp-config", bad_config, "--", *AGENT)
    assert proc.returncode == 2 and f"{bad_config}: field 'mcpServers.s.type'" in proc.stderr.decode()
