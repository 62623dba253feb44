"""``waza serve-model``: a model for agents under test on 127.0.0.1, from a reply script or the local model.

The server binds 127.0.0.1 (a free port unless one is given), then prints its
base URL on the first line of stdout and the environment each agent needs on
the next lines (``NAME=VALUE``, the value quoted for a POSIX shell), then a
blank line, so a script can read them. ``capture
--serve-model`` runs it as a child process (:func:`started`) whose stdin is
its lifeline: the child stops when the stdin closes, so even a waza killed
with SIGKILL leaves no server behind.

The local model backend asks llama.cpp's chat endpoint (the embedded server
of :mod:`waza.runner.local_model.server`, with the context size given here:
real agents' first requests, tools included, are several thousand tokens)
and hands its answer, tool calls included, to whichever API family asked.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import shlex
import shutil
import socket
import sys
import tempfile
import threading
from collections.abc import AsyncIterator
from pathlib import Path
from typing import IO, Any, NamedTuple

import anyio
import httpx
import orjson

from waza.protocol.errors import ConfigError
from waza.protocol.io.process import Child
from waza.protocol.io.secrets import scrubbed_env
from waza.runner.install_hints import pip_install

from .replies import TITLE_MODEL, Reply, Request, Script, ToolCall, load_script

__all__ = ["DEFAULT_CONTEXT", "LOCAL", "SandboxReach", "agent_env", "check_source", "sandbox_reach", "serve", "started"]

#: ``--serve-model local``: the embedded local model instead of a reply file.
LOCAL = "local"
#: Context tokens for the local model: Claude Code's first request with its tools is about 7,600.
DEFAULT_CONTEXT = 32768
#: A key for clients that insist on one; the server ignores keys.
DUMMY_KEY = "waza-serve-model"
STARTUP_TIMEOUT = 180.0
INSTALL = pip_install("serve")


#: The model name agents are told to ask for (any name is answered).
MODEL = "waza-serve-model"
#: Gemini CLI's model: a fixed one, or it first asks a router model (a request the script would have to answer).
GEMINI_MODEL = "gemini-2.5-flash"


def agent_env(base: str, config_dir: Path) -> dict[str, str]:
    """The environment that points each agent at the server at ``base`` (``http://127.0.0.1:PORT``).

    Codex CLI and Gemini CLI take a provider or auth type only from a file, so they are written to
    ``config_dir``; both refuse such files under a world-writable directory such as /tmp."""
    codex = config_dir / "codex"
    codex.mkdir(exist_ok=True)
    (codex / "config.toml").write_text(
        f'model = "{MODEL}"\nmodel_provider = "waza"\n\n[model_providers.waza]\nname = "waza serve-model"\n'
        f'base_url = "{base}/v1"\nenv_key = "OPENAI_API_KEY"\nwire_api = "responses"\n'
    )
    gemini = config_dir / "gemini-settings.json"
    gemini.write_bytes(orjson.dumps({"security": {"auth": {"selectedType": "gemini-api-key"}}}))
    opencode = {
        "provider": {
            "waza": {
                "npm": "@ai-sdk/openai-compatible",
                "name": "waza serve-model",
                "options": {"baseURL": f"{base}/v1", "apiKey": DUMMY_KEY},
                "models": {MODEL: {"name": MODEL, "tool_call": True}, TITLE_MODEL: {"name": TITLE_MODEL}},
            }
        },
        "model": f"waza/{MODEL}",
        "small_model": f"waza/{TITLE_MODEL}",  # its session titles: answered by the server, not the script
    }
    return {
        "ANTHROPIC_BASE_URL": base,
        "ANTHROPIC_API_KEY": DUMMY_KEY,
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "OPENAI_BASE_URL": f"{base}/v1",
        "OPENAI_API_KEY": DUMMY_KEY,
        "CODEX_HOME": str(codex),
        "GOOGLE_GEMINI_BASE_URL": base,
        "GEMINI_API_KEY": DUMMY_KEY,
        "GEMINI_MODEL": GEMINI_MODEL,
        "GEMINI_CLI_SYSTEM_SETTINGS_PATH": str(gemini),
        "GEMINI_CLI_TRUST_WORKSPACE": "true",
        "OPENCODE_CONFIG_CONTENT": orjson.dumps(opencode).decode(),
        "OPENCODE_DISABLE_MODELS_FETCH": "1",
        "OPENCODE_DISABLE_AUTOUPDATE": "1",
    }


class SandboxReach(NamedTuple):
    """What a sandboxed agent needs to reach the server whose environment it was given."""

    port: int  #: relayed into the sandbox's own loopback (network ``loopback``)
    config: Path  #: the agents' config files (Codex, Gemini), shown read-only
    keys: tuple[str, ...]  #: the dummy key variables, kept although their names look secret


def sandbox_reach(env: dict[str, str]) -> SandboxReach:
    """How a sandbox lets an agent reach the server that printed ``env`` (see :func:`agent_env`)."""
    port = int(env["ANTHROPIC_BASE_URL"].rsplit(":", 1)[1])
    keys = tuple(name for name, value in env.items() if value == DUMMY_KEY)
    return SandboxReach(port, Path(env["CODEX_HOME"]).parent, keys)


def config_root() -> Path:
    """Where the agents' config files go while the server runs: the user's cache, not /tmp (see agent_env)."""
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    root = base / "waza" / "serve-model"
    root.mkdir(parents=True, exist_ok=True, mode=0o700)
    return root


class ScriptBackend:
    def __init__(self, script: Script) -> None:
        self.script = script

    async def answer(self, request: Request) -> Reply:
        return self.script.answer(request)


class LocalBackend:
    """Answers through the embedded llama.cpp server, running while :meth:`running` is entered."""

    def __init__(self, model: Path, context: int) -> None:
        self.model = model
        self.context = context
        self.url = ""
        self.client: httpx.AsyncClient | None = None

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        from waza.runner.local_model.server import serve as serve_local

        async with serve_local(self.model, context=self.context) as url, httpx.AsyncClient(timeout=600.0) as client:
            self.url, self.client = url, client
            yield

    async def answer(self, request: Request) -> Reply:
        assert self.client is not None
        body: dict[str, Any] = {"model": "local", "messages": request.messages}
        if request.tools:
            body["tools"] = [{"type": "function", "function": t} for t in request.tools]
        if request.max_tokens:
            body["max_tokens"] = request.max_tokens
        response = await self.client.post(f"{self.url}/chat/completions", json=body)
        if response.status_code != 200:
            raise LookupError(f"the local model answered HTTP {response.status_code}: {response.text[:300]}")
        data = response.json()
        choice = data["choices"][0]
        message = choice.get("message") or {}
        calls = []
        for call in message.get("tool_calls") or []:
            function = call.get("function") or {}
            try:
                args = orjson.loads(function.get("arguments") or "{}")
            except orjson.JSONDecodeError:
                args = {"arguments": function.get("arguments")}
            own_id = {"id": str(call["id"])} if call.get("id") else {}
            calls.append(ToolCall(str(function.get("name")), args if isinstance(args, dict) else {"value": args}, **own_id))
        usage = data.get("usage") or {}
        stop = "tool_use" if calls else "max_tokens" if choice.get("finish_reason") == "length" else "end_turn"
        return Reply(message.get("content") or "", calls, stop, usage.get("prompt_tokens", 0), usage.get("completion_tokens", 0))  # type: ignore[arg-type]


def check_source(source: str, model_path: Path | None = None) -> Script | Path:
    """The reply script, or the local model file for ``local``; ConfigError (exit 2) before anything starts."""
    if any(importlib.util.find_spec(name) is None for name in ("uvicorn", "starlette", "regex")):
        raise ConfigError(f"serve-model needs starlette, uvicorn and regex; install them with: {INSTALL}")
    if source == LOCAL:
        from waza.runner.local_model.server import resolve_model

        return resolve_model(model_path, option="--model-path")
    if model_path is not None:
        raise ConfigError("--model-path is used only with the local model (serve-model local)")
    return load_script(Path(source))


def serve(
    source: str,
    *,
    port: int = 0,
    context: int = DEFAULT_CONTEXT,
    model_path: Path | None = None,
    lifeline: bool = False,
    allowed_hosts: tuple[str, ...] = (),
) -> None:
    """Serve until interrupted (or, with ``lifeline``, until stdin closes); prints the URL and env first.

    Connections, request heads, bodies and idle time are bounded (:mod:`.connection`, :mod:`.guard`);
    ``allowed_hosts`` are Host names answered besides loopback's."""
    checked = check_source(source, model_path)
    try:
        import uvicorn

        from .app import build_app, stderr_log
        from .connection import config_options
    except ImportError:
        raise ConfigError(f"serve-model needs starlette and uvicorn; install them with: {INSTALL}") from None

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind(("127.0.0.1", port))
    except OSError as exc:
        raise ConfigError(f"cannot listen on 127.0.0.1:{port}: {exc.strerror or exc}", field="--port") from None
    sock.listen(128)
    base = f"http://127.0.0.1:{sock.getsockname()[1]}"
    config_dir = Path(tempfile.mkdtemp(prefix="agents-", dir=config_root()))

    def announce() -> None:
        lines = [base, *(f"{k}={shlex.quote(v)}" for k, v in agent_env(base, config_dir).items())]
        sys.stdout.write("\n".join(lines) + "\n\n")  # a blank line ends the block
        sys.stdout.flush()

    backend: Any
    if isinstance(checked, Script):
        backend, running = ScriptBackend(checked), None
    else:
        backend = LocalBackend(checked, context)
        running = backend.running

    @contextlib.asynccontextmanager
    async def lifespan(app: Any) -> AsyncIterator[None]:
        if running is None:
            announce()
            yield
            return
        async with running():
            announce()
            yield

    app = build_app(backend, log=None if lifeline else stderr_log, lifespan=lifespan, allowed_hosts=allowed_hosts)
    server = uvicorn.Server(uvicorn.Config(app, lifespan="on", **config_options()))
    if lifeline:

        def watch() -> None:
            sys.stdin.buffer.read()
            server.should_exit = True

        threading.Thread(target=watch, daemon=True).start()
    try:
        server.run(sockets=[sock])
    finally:
        shutil.rmtree(config_dir, ignore_errors=True)


@contextlib.asynccontextmanager
async def started(
    source: str, *, context: int = DEFAULT_CONTEXT, startup_timeout: float = STARTUP_TIMEOUT
) -> AsyncIterator[dict[str, str]]:
    """Run ``waza serve-model SOURCE`` as a child for the length of the block; yields the agents' environment."""
    check_source(source)
    argv = [sys.executable, "-m", "waza.runner.model_server", source, str(context)]
    with tempfile.TemporaryFile() as errors:  # the child logs no requests (lifeline mode): only why it failed
        # Its stdin stays open as its lifeline: closing the child (here, or waza ending) ends the server.
        child = await Child.start(argv, keep_stdin=True, env=scrubbed_env(), stderr_to=errors)
        try:
            env = await _announced(child, source, startup_timeout, errors)
            yield env
        finally:
            await child.aclose()


async def _announced(child: Child, source: str, startup_timeout: float, errors: IO[bytes]) -> dict[str, str]:
    """The environment the child printed (up to its blank line), or a ConfigError saying why it did not start."""
    head = b""
    with anyio.move_on_after(startup_timeout):
        try:
            while b"\n\n" not in head and len(head) < 1 << 20:
                head += await child.receive(65536)
        except anyio.EndOfStream:
            pass
    lines = head.decode(errors="replace").split("\n\n")[0].splitlines()
    if b"\n\n" in head and lines and lines[0].startswith("http://"):
        return dict(_assignment(line) for line in lines[1:])
    with anyio.move_on_after(5):
        await child.wait()
    errors.seek(0)
    why = errors.read(4096).decode(errors="replace").strip().splitlines()
    reason = why[-1].removeprefix("waza: ") if why else f"no address within {startup_timeout:g}s"
    raise ConfigError(f"serve-model {source} did not start: {reason}", field="--serve-model")


def _assignment(line: str) -> tuple[str, str]:
    name, _, value = line.partition("=")
    return name, shlex.split(value)[0]


def main(argv: list[str]) -> None:
    """The child of :func:`started`: ``python -m waza.runner.model_server SOURCE CONTEXT``."""
    try:
        serve(argv[0], context=int(argv[1]), lifeline=True)
    except ConfigError as exc:
        print(f"waza: {exc}", file=sys.stderr)
        os._exit(2)
