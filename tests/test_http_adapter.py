"""The http adapter against a real chat-completions server on 127.0.0.1 that the test starts, with a
grader attached: its records through the API in-process; the command line's options, exit codes and
key masking as `waza capture --adapter http` subprocesses."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

import waza
from waza.protocol.schemas import errors

from .conftest import loopback_server, read_jsonl, run_waza, write_jsonl

SERVER = Path(__file__).parent / "fixtures" / "http" / "chat_server.py"
SECRET = "sk-test-0123456789-do-not-leak"


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    with loopback_server(SERVER, tmp_path_factory.mktemp("http") / "requests.jsonl") as running:
        yield running


@pytest.fixture
def capture(server, monkeypatch):
    """The http adapter through the API in-process (what it sends and records is the point, not the CLI):
    the records in prompt order and the requests the server saw."""
    base_url, log = server
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)

    def run(prompts: list[dict], graders=(), **options):
        log.write_bytes(b"")
        agent = waza.HttpAgent(base_url=base_url, model="echo-1", **options)
        order = [p["id"] for p in prompts]
        results = sorted((r.to_dict() for r in waza.capture(prompts, agent, list(graders))), key=lambda r: order.index(r["id"]))
        for result in results:
            assert errors("CaptureResult", result) == []
        # The key goes to the server and into no record.
        assert SECRET.encode() not in orjson.dumps(results)
        return results, read_jsonl(log)

    return run


HINT = [waza.Builtin(grader="hint")]


def agent_messages(result: dict) -> list[str]:
    return [s["content"] for s in result["trajectory"] if s["type"] == "message" and s["role"] == "agent"]


def test_multi_turn_is_one_conversation_with_usage_and_grades(capture):
    prompts = [{"id": "chat", "input": ["hello", "and again"], "hint": "turn 2"}]
    [result], requests = capture(prompts, HINT, system_prompt="be brief", temperature=0.2, max_tokens=64)
    assert [r["auth"] for r in requests] == [f"Bearer {SECRET}"] * 2
    assert requests[1]["body"]["messages"] == [
        {"role": "system", "content": "be brief"},
        {"role": "user", "content": "hello"},
        {"role": "assistant", "content": agent_messages(result)[0]},
        {"role": "user", "content": "and again"},
    ]
    assert (
        agent_messages(result)[1]
        == 'echo and again | turn 2 | model echo-1 | system be brief | {"max_tokens": 64, "temperature": 0.2}'
    )
    assert result["output"] == agent_messages(result)[1]
    assert result["usage"] == {"inputTokens": 30, "outputTokens": 10, "totalTokens": 40}
    assert result["exit"]["stopReason"] == "end_turn" and result["status"] == "passed"
    assert [s["turn"] for s in result["trajectory"]] == [0, 0, 1, 1]


def test_streaming_joins_chunks_and_records_usage_and_finish(capture):
    [result], [request] = capture([{"id": "s", "input": "stream me", "hint": "stream me"}], HINT, stream=True)
    assert request["body"]["stream"] is True
    assert agent_messages(result) == ["echo stream me | turn 1 | model echo-1 | system -"]
    assert result["usage"] == {"inputTokens": 10, "outputTokens": 5, "totalTokens": 15}
    assert result["exit"]["stopReason"] == "max_tokens" and result["status"] == "passed"


@pytest.mark.parametrize("stream", [False, True])
def test_429_and_5xx_are_retried(capture, stream):
    # The server counts faults per text, so each case sends its own text.
    (a, b), requests = capture(
        [{"id": "rate", "input": f"busy {stream} [429x2]"}, {"id": "down", "input": f"down {stream} [503x1]"}],
        stream=stream,
    )
    assert a["errors"] == [] and agent_messages(a)[0].startswith(f"echo busy {stream} [429x2]")
    assert b["errors"] == [] and agent_messages(b)[0].startswith(f"echo down {stream} [503x1]")
    assert len(requests) == 5


def test_persistent_failures_are_errors_and_the_run_goes_on(capture):
    prompts = [
        {"id": "exhausted", "input": "never [503x99]"},
        {"id": "auth", "input": "[401]"},
        {"id": "garbage", "input": "[garbage]"},
        {"id": "fine", "input": "ok"},
    ]
    results, _ = capture(prompts)
    by_id = {r["id"]: r for r in results}
    assert "HTTP 503" in by_id["exhausted"]["errors"][0] and "gave up after 5 attempts" in by_id["exhausted"]["errors"][0]
    assert by_id["auth"]["errors"] == ['turn 0: HTTP 401 from /v1/chat/completions: {"error": {"message": "bad key"}}']
    assert "not a chat completion" in by_id["garbage"]["errors"][0]
    assert [by_id[i]["status"] for i in ("exhausted", "auth", "garbage")] == ["error"] * 3  # what makes the CLI exit 1
    assert by_id["fine"]["status"] == "ungraded" and by_id["fine"]["errors"] == []


def test_the_prompt_timeout_bounds_a_silent_server(capture):
    [result], _ = capture([{"id": "slow", "input": "[slow]", "timeout": 1}])
    assert result["exit"]["timedOut"] is True or "timed out" in result["errors"][0]
    assert result["status"] == "error"


def test_no_key_no_header_and_a_named_env_var_must_exist(capture, server, monkeypatch):
    monkeypatch.setenv("MY_LLM_KEY", "other")
    [_], [request] = capture([{"id": "k", "input": "hi"}], api_key_env="MY_LLM_KEY")
    assert request["auth"] == "Bearer other"
    monkeypatch.delenv("OPENAI_API_KEY")
    [_], [request] = capture([{"id": "k", "input": "hi"}])
    assert request["auth"] is None
    with pytest.raises(waza.ConfigError, match="WAZA_TEST_UNSET_VAR"):
        capture([{"id": "k", "input": "hi"}], api_key_env="WAZA_TEST_UNSET_VAR")
    assert read_jsonl(server[1]) == []  # refused before any request


def test_the_command_line_passes_its_options_masks_the_key_and_exits_by_status(tmp_path, server):
    """The CLI path: the flags reach the server, the key shows neither on stdout nor on stderr, an errored
    prompt makes exit 1, and a --api-key-env naming an unset variable is exit 2 before any request."""
    base_url, log = server
    log.write_bytes(b"")
    prompts = write_jsonl(
        tmp_path / "p.jsonl", [{"id": "chat", "input": "hello", "hint": "hello"}, {"id": "auth", "input": "[401]"}]
    )
    flags = ["--adapter", "http", "--base-url", base_url, "--model", "echo-1"]
    proc = run_waza(
        "capture", prompts, *flags, "--system-prompt", "be brief", "--temperature", "0.2", "--max-tokens", "64",
        "--stream", "--grader", "builtin:hint", env={"OPENAI_API_KEY": SECRET}, cwd=tmp_path,
    )  # fmt: skip
    assert proc.returncode == 1, proc.stderr
    assert SECRET.encode() not in proc.stdout + proc.stderr
    by_id = {r["id"]: r for r in read_jsonl(proc.stdout)}
    assert by_id["chat"]["status"] == "passed" and by_id["auth"]["status"] == "error"
    request = next(r for r in read_jsonl(log) if r["body"]["messages"][-1]["content"] == "hello")
    body = request["body"]
    assert request["auth"] == f"Bearer {SECRET}"
    assert (body["messages"][0], body["temperature"], body["max_tokens"], body["stream"]) == (
        {"role": "system", "content": "be brief"},
        0.2,
        64,
        True,
    )
    log.write_bytes(b"")
    proc = run_waza("capture", prompts, *flags, "--api-key-env", "WAZA_TEST_UNSET_VAR")
    assert proc.returncode == 2 and proc.stdout == b"" and read_jsonl(log) == []
    assert b"WAZA_TEST_UNSET_VAR" in proc.stderr


def test_options_are_checked_before_anything_runs(tmp_path, server):
    for options, message in [
        ({"model": "m"}, "needs HttpAgent.base_url"),
        ({"base_url": server[0]}, "needs HttpAgent.model"),
        ({"base_url": "ftp://x", "model": "m"}, r"not an http\(s\) URL"),
    ]:
        with pytest.raises(waza.ConfigError, match=message):
            waza.capture([{"id": "a", "input": "x"}], waza.HttpAgent(**options))
    # Options the http adapter has no use for exist only on the command line: usage errors there.
    prompts = write_jsonl(tmp_path / "p.jsonl", [{"id": "a", "input": "x"}])
    for args, message in [
        (["--schema", "codex"], b"--schema does nothing with --adapter http"),
        (["--", "agent"], b"runs no agent command"),
    ]:
        proc = run_waza("capture", prompts, "--adapter", "http", "--base-url", server[0], "--model", "m", *args)
        assert proc.returncode == 2 and proc.stdout == b"", (args, proc.stderr)
        assert message in proc.stderr


@pytest.mark.parametrize("stream", [False, True])
def test_a_server_reusing_one_completion_id_never_merges_turns(capture, stream):
    (result,), _ = capture([{"id": "same", "input": ["first [sameid]", "second"]}], stream=stream)
    steps = [(s["role"], s["turn"], s["content"].split(" |")[0]) for s in result["trajectory"] if s["type"] == "message"]
    assert steps == [
        ("user", 0, "first [sameid]"),
        ("agent", 0, "echo first [sameid]"),
        ("user", 1, "second"),
        ("agent", 1, "echo second"),
    ]
    assert result["output"].startswith("echo second")
