"""The http adapter end to end: `waza capture --adapter http` against a real chat-completions
server on 127.0.0.1 that the test starts, with a grader attached."""

from __future__ import annotations

from pathlib import Path

import pytest

from waza.protocol.schemas import errors

from .conftest import loopback_server, read_jsonl, run_waza, write_jsonl

SERVER = Path(__file__).parent / "fixtures" / "http" / "chat_server.py"
SECRET = "sk-test-0123456789-do-not-leak"


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    with loopback_server(SERVER, tmp_path_factory.mktemp("http") / "requests.jsonl") as running:
        yield running


@pytest.fixture
def capture(server, tmp_path):
    base_url, log = server

    def run(prompts: list[dict], *args: str, env: dict[str, str] | None = None):
        log.write_bytes(b"")
        prompts_file = write_jsonl(tmp_path / "prompts.jsonl", prompts)
        proc = run_waza(
            "capture",
            prompts_file,
            "--adapter",
            "http",
            "--base-url",
            base_url,
            "--model",
            "echo-1",
            *args,
            env={"OPENAI_API_KEY": SECRET, **(env or {})},
            cwd=tmp_path,
        )
        results = read_jsonl(proc.stdout)
        for result in results:
            assert errors("CaptureResult", result) == []
        # The key goes to the server and nowhere else.
        assert SECRET.encode() not in proc.stdout + proc.stderr
        return proc, results, read_jsonl(log)

    return run


def agent_messages(result: dict) -> list[str]:
    return [s["content"] for s in result["trajectory"] if s["type"] == "message" and s["role"] == "agent"]


def test_multi_turn_is_one_conversation_with_usage_and_grades(capture):
    prompts = [{"id": "chat", "input": ["hello", "and again"], "hint": "turn 2"}]
    proc, [result], requests = capture(
        prompts, "--system-prompt", "be brief", "--temperature", "0.2", "--max-tokens", "64", "--grader", "builtin:hint"
    )
    assert proc.returncode == 0, proc.stderr
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
    proc, [result], [request] = capture(
        [{"id": "s", "input": "stream me", "hint": "stream me"}], "--stream", "--grader", "builtin:hint"
    )
    assert proc.returncode == 0, proc.stderr
    assert request["body"]["stream"] is True
    assert agent_messages(result) == ["echo stream me | turn 1 | model echo-1 | system -"]
    assert result["usage"] == {"inputTokens": 10, "outputTokens": 5, "totalTokens": 15}
    assert result["exit"]["stopReason"] == "max_tokens" and result["status"] == "passed"


@pytest.mark.parametrize("stream", [False, True])
def test_429_and_5xx_are_retried(capture, stream):
    flags = ["--stream"] if stream else []
    # The server counts faults per text, so each case sends its own text.
    proc, [a, b], requests = capture(
        [{"id": "rate", "input": f"busy {stream} [429x2]"}, {"id": "down", "input": f"down {stream} [503x1]"}], *flags
    )
    assert proc.returncode == 0, proc.stderr
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
    proc, results, _ = capture(prompts)
    by_id = {r["id"]: r for r in results}
    assert "HTTP 503" in by_id["exhausted"]["errors"][0] and "gave up after 5 attempts" in by_id["exhausted"]["errors"][0]
    assert by_id["auth"]["errors"] == ['turn 0: HTTP 401 from /v1/chat/completions: {"error": {"message": "bad key"}}']
    assert "not a chat completion" in by_id["garbage"]["errors"][0]
    assert by_id["fine"]["status"] == "ungraded" and by_id["fine"]["errors"] == []
    assert proc.returncode == 1


def test_the_prompt_timeout_bounds_a_silent_server(capture):
    proc, [result], _ = capture([{"id": "slow", "input": "[slow]", "timeout": 1}])
    assert result["exit"]["timedOut"] is True or "timed out" in result["errors"][0]
    assert result["status"] == "error"


def test_no_key_no_header_and_a_named_env_var_must_exist(capture, server):
    proc, [result], [request] = capture([{"id": "k", "input": "hi"}], "--api-key-env", "MY_LLM_KEY", env={"MY_LLM_KEY": "other"})
    assert request["auth"] == "Bearer other"
    proc, results, requests = capture([{"id": "k", "input": "hi"}], "--api-key-env", "WAZA_TEST_UNSET_VAR")
    assert proc.returncode == 2 and results == [] and requests == []
    assert b"WAZA_TEST_UNSET_VAR" in proc.stderr


def test_options_are_checked_before_anything_runs(tmp_path, server):
    prompts = write_jsonl(tmp_path / "p.jsonl", [{"id": "a", "input": "x"}])
    for args, message in [
        (["--model", "m"], b"--base-url"),
        (["--base-url", server[0]], b"--model"),
        (["--base-url", "ftp://x", "--model", "m"], b"not an http(s) URL"),
        (["--base-url", server[0], "--model", "m", "--schema", "codex"], b"--schema does nothing with --adapter http"),
        (["--base-url", server[0], "--model", "m", "--", "agent"], b"runs no agent command"),
    ]:
        proc = run_waza("capture", prompts, "--adapter", "http", *args)
        assert proc.returncode == 2, (args, proc.stderr)
        assert message in proc.stderr


@pytest.mark.parametrize("stream", [[], ["--stream"]])
def test_a_server_reusing_one_completion_id_never_merges_turns(capture, stream):
    proc, (result,), _ = capture([{"id": "same", "input": ["first [sameid]", "second"]}], *stream)
    assert proc.returncode == 0, proc.stderr
    steps = [(s["role"], s["turn"], s["content"].split(" |")[0]) for s in result["trajectory"] if s["type"] == "message"]
    assert steps == [
        ("user", 0, "first [sameid]"),
        ("agent", 0, "echo first [sameid]"),
        ("user", 1, "second"),
        ("agent", 1, "echo second"),
    ]
    assert result["output"].startswith("echo second")
