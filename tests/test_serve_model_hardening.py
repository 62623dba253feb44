"""`waza serve-model` against hostile clients and hostile reply scripts: a real server (a `waza serve-model`
process, or the same app and uvicorn options in-process where a bound is shortened) asked over real HTTP
on loopback with httpx and raw sockets."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from .conftest import run_waza

pytest.importorskip("starlette", reason="waza serve-model needs the serve extra: pip install '.[serve]'")
pytest.importorskip("uvicorn", reason="waza serve-model needs the serve extra: pip install '.[serve]'")
pytest.importorskip("regex", reason="waza serve-model needs the serve extra: pip install '.[serve]'")

from waza.protocol.errors import ConfigError
from waza.runner.model_server import connection
from waza.runner.model_server.guard import MAX_BODY
from waza.runner.model_server.replies import MAX_SCRIPT_BYTES, load_script

ASK = {"model": "m", "max_tokens": 50, "messages": [{"role": "user", "content": "hello"}]}


@contextlib.contextmanager
def serving(tmp_path: Path, script: str, *args: str) -> Iterator[tuple[str, Path]]:
    """`waza serve-model` on a reply script: its base URL and the file its stderr goes to."""
    replies = tmp_path / "replies.yaml"
    replies.write_text(script)
    log = tmp_path / "server.log"
    with open(log, "wb") as err:
        proc = subprocess.Popen(
            [sys.executable, "-m", "waza", "serve-model", str(replies), *args], stdout=subprocess.PIPE, stderr=err
        )
    try:
        assert proc.stdout is not None
        base = proc.stdout.readline().decode().strip()
        while proc.stdout.readline().strip():
            pass
        assert base.startswith("http://127.0.0.1:"), log.read_text()
        yield base, log
    finally:
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=30)


def test_a_web_page_or_a_foreign_host_is_refused_and_loopback_names_are_answered(tmp_path):
    with serving(tmp_path, "- text: one\n- text: two\n- text: three\n", "--allow-host", "models.internal") as (base, _):
        port = base.rsplit(":", 1)[1]
        page = httpx.post(f"{base}/v1/messages", json=ASK, headers={"Origin": "https://evil.example"}, timeout=30)
        assert page.status_code == 403 and "Origin" in page.json()["error"]["message"]
        rebound = httpx.post(f"{base}/v1/messages", json=ASK, headers={"Host": f"evil.example:{port}"}, timeout=30)
        assert rebound.status_code == 403 and rebound.json()["type"] == "error"
        # Neither refusal spent a scripted reply: the three loopback names get them in order.
        for host, text in ((f"localhost:{port}", "one"), (f"127.0.0.1:{port}", "two"), (f"models.internal:{port}", "three")):
            ok = httpx.post(f"{base}/v1/messages", json=ASK, headers={"Host": host}, timeout=30)
            assert ok.status_code == 200 and ok.json()["content"][0]["text"] == text


def test_bodies_over_the_limit_and_malformed_requests_get_json_errors_without_tracebacks(tmp_path):
    with serving(tmp_path, "- text: fine\n") as (base, log):
        port = int(base.rsplit(":", 1)[1])
        # A declared 256 MiB body is refused from its head, before a byte of it is read.
        with socket.create_connection(("127.0.0.1", port), timeout=30) as raw:
            raw.sendall(
                f"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
                f"Content-Type: application/json\r\nContent-Length: {256 << 20}\r\n\r\n".encode()
            )
            head = b""
            while chunk := raw.recv(65536):
                head += chunk
            head = head.decode()
        assert head.startswith("HTTP/1.1 413") and "MiB" in head

        # A chunked body (no length said) is cut off once it passes the limit.
        def chunks() -> Iterator[bytes]:
            sent = 0
            while sent <= MAX_BODY:
                sent += 1 << 20
                yield b" " * (1 << 20)

        big = httpx.post(f"{base}/v1/chat/completions", content=chunks(), timeout=60)
        assert big.status_code == 413 and "MiB" in big.json()["error"]["message"]
        shapes = [{"messages": 5}, {"messages": [5]}, {"messages": [{"role": "user", "content": [7]}]}]
        for body in shapes:
            bad = httpx.post(f"{base}/v1/messages", json=body, timeout=30)
            assert bad.status_code == 400 and bad.json()["error"]["type"] == "invalid_request_error", body
        assert httpx.post(f"{base}/v1/chat/completions", content=b"{not json", timeout=30).status_code == 400
        missing = httpx.post(f"{base}/v2/nothing", json=ASK, timeout=30)
        assert missing.status_code == 404 and "/v2/nothing" in missing.json()["error"]["message"]
        assert httpx.get(f"{base}/v1/messages", timeout=30).json()["error"]["message"].startswith("Method Not Allowed")
        # The one scripted reply is still there for a well-formed request.
        assert httpx.post(f"{base}/v1/messages", json=ASK, timeout=30).json()["content"][0]["text"] == "fine"
    assert "Traceback" not in log.read_text()


@contextlib.contextmanager
def in_process(tmp_path: Path, script: str) -> Iterator[int]:
    """The server's app under uvicorn with serve-model's options, in a thread; yields its port."""
    import uvicorn

    from waza.runner.model_server.app import build_app
    from waza.runner.model_server.serve import ScriptBackend

    (tmp_path / "r.yaml").write_text(script)
    app = build_app(ScriptBackend(load_script(tmp_path / "r.yaml")), log=lambda line: None)
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(128)
    server = uvicorn.Server(uvicorn.Config(app, lifespan="off", **connection.config_options()))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + 60
        while not server.started and time.monotonic() < deadline:
            time.sleep(0.05)
        yield sock.getsockname()[1]
    finally:
        server.should_exit = True
        thread.join(timeout=30)
        sock.close()


def test_idle_and_slow_connections_are_closed_so_they_cannot_starve_real_requests(tmp_path, monkeypatch):
    monkeypatch.setattr(connection, "REQUEST_TIMEOUT", 1.0)
    with in_process(tmp_path, "- text: served\n") as port:
        # More silent or half-sent connections than the server serves at once.
        idle = [socket.create_connection(("127.0.0.1", port), timeout=60) for _ in range(connection.MAX_CONNECTIONS + 6)]
        for sock in idle[::2]:
            sock.sendall(b"POST /v1/messages HTTP/1.1\r\nHost: 127.0.0.1\r\n")  # a head that never ends
        for sock in idle:  # each is closed by the server (EOF) after the deadline, not held for ever
            while sock.recv(65536):  # a 503 for one over the cap may come first; a timeout here fails the test
                pass
            sock.close()
        reply = httpx.post(f"http://127.0.0.1:{port}/v1/messages", json=ASK, timeout=30)
        assert reply.status_code == 200 and reply.json()["content"][0]["text"] == "served"


def test_a_catastrophic_match_pattern_fails_that_request_and_the_server_goes_on(tmp_path):
    script = '- match: "^(a|aa)+$"\n  text: never\n- text: next\n'
    with serving(tmp_path, script) as (base, log):
        slow = {**ASK, "messages": [{"role": "user", "content": "a" * 60 + "!"}]}
        reply = httpx.post(f"{base}/v1/messages", json=slow, timeout=60)
        assert reply.status_code == 400 and "match pattern ran over" in reply.json()["error"]["message"]
        ok = httpx.post(f"{base}/v1/messages", json=ASK, timeout=30)
    assert ok.json()["content"][0]["text"] == "next"
    assert "Traceback" not in log.read_text()


HOSTILE_SCRIPTS = {
    "alias bomb": (
        '- &a ["x","x","x","x","x","x","x","x","x"]\n'
        + "".join(f"- &{n} [{', '.join([f'*{p}'] * 9)}]\n" for p, n in zip("abcdefgh", "bcdefghi", strict=True)),
        "refused as an alias bomb",
    ),
    "deep nesting": ("- " + "[" * 150 + "]" * 150 + "\n", "nested deeper than 100 levels"),
    "deeper than the parser goes": ("- " + "[" * 20000 + "]" * 20000 + "\n", "nested too deeply"),
    "long pattern": (f'- match: "{"a" * 5000}"\n  text: hi\n', "field 'match': is longer than"),
    "not a list": ("text: hi\n", "must be a list of replies"),
}


@pytest.mark.parametrize("kind", sorted(HOSTILE_SCRIPTS))
def test_a_hostile_reply_script_is_refused_with_one_line(tmp_path, kind):
    text, expected = HOSTILE_SCRIPTS[kind]
    path = tmp_path / "replies.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError) as caught:
        load_script(path)
    assert expected in str(caught.value) and str(path) in str(caught.value) and "\n" not in str(caught.value)


def test_a_reply_script_that_is_not_a_small_regular_file_is_refused_without_reading_it(tmp_path):
    fifo = tmp_path / "fifo.yaml"
    os.mkfifo(fifo)  # no writer: a plain open would block for ever
    link = tmp_path / "link.yaml"
    link.symlink_to("/dev/zero")
    huge = tmp_path / "huge.jsonl"
    with open(huge, "wb") as f:
        f.truncate(MAX_SCRIPT_BYTES + 1)  # sparse: no disk spent
    cases = ((fifo, "is a FIFO"), (link, "cannot be read"), (Path("/dev/zero"), "not a regular file"), (huge, "larger than"))
    for path, why in cases:
        with pytest.raises(ConfigError) as caught:
            load_script(path)
        assert why in str(caught.value), path
    proc = run_waza("serve-model", fifo, timeout=60)
    assert proc.returncode == 2 and proc.stderr.decode().count("\n") == 1 and "FIFO" in proc.stderr.decode()


SANDBOXED_AGENT = """\
#!{python}
# A real agent program (standard library only): asks the model at OPENAI_BASE_URL with its key, writes the file
# the scripted tool call names, sends the result back, prints the final answer.
import json, os, sys, urllib.request
base, key = os.environ["OPENAI_BASE_URL"], os.environ["OPENAI_API_KEY"]
messages = [{{"role": "user", "content": sys.stdin.read()}}]
while True:
    body = json.dumps({{"model": "m", "messages": messages}}).encode()
    request = urllib.request.Request(base + "/chat/completions", data=body, headers={{"Authorization": "Bearer " + key}})
    message = json.load(urllib.request.urlopen(request, timeout=30))["choices"][0]["message"]
    messages.append(message)
    if not message.get("tool_calls"):
        print(message["content"])
        break
    for call in message["tool_calls"]:
        args = json.loads(call["function"]["arguments"])
        with open(args["path"], "w") as f:
            f.write(args["content"])
        messages.append({{"role": "tool", "tool_call_id": call["id"], "content": "written"}})
"""


def test_capture_serve_model_reaches_a_sandboxed_agent_through_the_relay(tmp_path):
    from waza.adapters.sandbox.bwrap import _probe

    if not sys.platform.startswith("linux") or _probe() is not None:
        pytest.skip(f"no bubblewrap sandbox here ({_probe() if sys.platform.startswith('linux') else 'not Linux'})")
    from .conftest import executable, read_jsonl, write_jsonl

    script = tmp_path / "replies.yaml"
    script.write_text(
        '- text: "writing"\n  tool_calls:\n    - {name: write_file, input: {path: out.txt, content: "hi"}}\n- text: "Done."\n'
    )
    agent = executable(tmp_path / "agent.py", SANDBOXED_AGENT.format(python=sys.executable))
    prompts = write_jsonl(tmp_path / "p.jsonl", [{"id": "w", "input": "Write out.txt"}])
    workspace = tmp_path / "ws"
    workspace.mkdir()
    proc = run_waza(
        "capture", prompts, "--adapter", "exec", "--serve-model", script, "--sandbox", "bwrap", "--cwd", workspace,
        "--", agent, cwd=tmp_path, timeout=120,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    [result] = read_jsonl(proc.stdout)
    assert result["output"] == "Done." and result["errors"] == [], result
    assert (workspace / "out.txt").read_text() == "hi"  # the scripted tool call, run by the agent in the sandbox
