"""Shared test helpers: run the real ``waza`` CLI in a subprocess, write real files."""

from __future__ import annotations

import contextlib
import os
import re
import stat
import subprocess
import sys
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, settings

# Hypothesis on a busy machine: no per-example deadline and no "too slow" or "data too large" health checks,
# which fail a test for the machine's load rather than for waza. This is the profile unless HYPOTHESIS_PROFILE
# names another ("dev": hypothesis's own defaults, to see a slow strategy while writing one).
settings.register_profile("ci", deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
settings.register_profile("dev")
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))

# Fixture folders hold files named like tests (a benchmark task's own pytest verifier): they are data, not tests.
collect_ignore = ["fixtures"]

ROOT = Path(__file__).resolve().parent.parent
# The reference data beside the repository (../shared/compat): optional; tests that read it skip without it.
COMPAT = ROOT.parent / "shared" / "compat"


def compat_path(relative: str) -> Path:
    """A file or folder of the reference data, or skip the calling test with the reason."""
    path = COMPAT / relative
    if not path.exists():
        pytest.skip(f"reference data {relative} not present (expected beside the repository at ../shared/compat)")
    return path


def run_waza(
    *args: str | os.PathLike[str],
    input: bytes | None = None,
    cwd: str | os.PathLike[str] | None = None,
    env: dict[str, str] | None = None,
    timeout: float = 120,
) -> subprocess.CompletedProcess[bytes]:
    """``python -m waza ARGS`` as a user would run it; stdout and stderr captured as bytes."""
    full_env = {**os.environ, **(env or {})}
    full_env.pop("COLUMNS", None)
    return subprocess.run(
        [sys.executable, "-m", "waza", *map(str, args)],
        input=input,
        capture_output=True,
        cwd=cwd,
        env=full_env,
        timeout=timeout,
    )


def process_cmdlines() -> list[str]:
    """The command line of every process on the machine (Linux /proc), to find what a run left behind."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError):
                found.append((entry / "cmdline").read_bytes().decode(errors="replace"))
    return found


def write_jsonl(path: Path, rows: Iterable[dict[str, Any]]) -> Path:
    path.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in rows))
    return path


def read_jsonl(data: bytes | Path) -> list[dict[str, Any]]:
    raw = data.read_bytes() if isinstance(data, Path) else data
    return [orjson.loads(line) for line in raw.splitlines() if line.strip()]


def executable(path: Path, text: str) -> Path:
    """Write a script with a shebang and make it executable (a grader or agent in any language)."""
    path.write_text(text)
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return path


def message_result_schema(path: Path, agent: Path) -> Path:
    """Write a headless adapter schema for an agent printing ``{"type":"message","text":..}`` events and a
    ``{"type":"result","result":..}`` line, the prompt as its last argument."""
    schema = {
        "version": 1,
        "name": path.stem,
        "command": [str(agent)],
        "sessionMode": "stream",
        "prompt": {"flag": ""},
        "output": {"flag": "", "value": ""},
        "outputEvents": [
            {"match": {"path": "$.type", "value": "message"}, "emitAs": "message", "extract": {"content": "$.text"}}
        ],
        "result": {"matchPath": "$.type", "matchValue": "result", "contentPath": "$.result"},
    }
    path.write_bytes(orjson.dumps(schema))
    return path


@pytest.fixture
def waza():
    return run_waza


@contextlib.contextmanager
def loopback_server(script: Path, log: Path) -> Iterator[tuple[str, Path]]:
    """Run a test server script that prints its 127.0.0.1 port, logging requests to ``log``;
    yields (base URL ending in /v1, log) and stops the server after."""
    proc = subprocess.Popen([sys.executable, str(script), str(log)], stdout=subprocess.PIPE)
    assert proc.stdout is not None
    try:
        port = int(proc.stdout.readline())
        yield f"http://127.0.0.1:{port}/v1", log
    finally:
        proc.kill()
        proc.wait()


@pytest.fixture(autouse=True)
def signal_handlers_left_as_found():
    """A test that leaves the worker's signal handlers changed fails: every later test in that worker (and
    every process it starts) would inherit them, as an interrupt test once inherited an ignored SIGINT."""
    import signal

    watched = (signal.SIGINT, signal.SIGTERM, signal.SIGCHLD, signal.SIGPIPE)
    before = {sig: signal.getsignal(sig) for sig in watched}
    yield
    changed = {sig.name: signal.getsignal(sig) for sig in watched if signal.getsignal(sig) != before[sig]}
    for name in changed:
        signal.signal(signal.Signals[name], before[signal.Signals[name]])
    assert not changed, f"the test left signal handlers changed: {changed}"


@pytest.fixture(autouse=True)
def own_model_cache(tmp_path, monkeypatch):
    """Every test gets an empty model cache of its own (WAZA_CACHE_DIR): no answer leaks between tests,
    and the developer's ~/.cache is never touched."""
    monkeypatch.setenv("WAZA_CACHE_DIR", str(tmp_path / "model-cache"))
    return tmp_path / "model-cache"


#: A test module that builds a fixture once for all its tests (a Ray instance, a browser, a whole faulty run).
_SHARED_FIXTURE = re.compile(r"@pytest\.fixture\(scope=\"module\"")


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """With ``-n``, the tests of a module with a module-scoped fixture go to one worker, so the fixture is
    built once, not once on each worker that happens to get one of its tests; every other test is handed
    out alone, as ``--dist load`` does. Those modules are sent first (most tests first), so none of them
    is left to run alone at the end. Another ``--dist`` is left as asked."""
    if config.getvalue("dist") != "load":
        return None
    from xdist.scheduler import LoadScopeScheduling

    shared: dict[str, bool] = {}

    def module_if_shared(nodeid: str) -> str:
        module = nodeid.split("::", 1)[0]
        if module not in shared:
            path = Path(config.rootpath, module)
            shared[module] = path.suffix == ".py" and bool(_SHARED_FIXTURE.search(path.read_text()))
        return module if shared[module] else nodeid

    class SharedFixtureScheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return module_if_shared(nodeid)

    return SharedFixtureScheduling(config, log)


@pytest.fixture(scope="module")
def base_image() -> str:
    """The benchmark tests' offline base image, built once per module by ``tests/images/busybox-image.sh``;
    the test skips, saying why, where no container engine answers or the image cannot be built."""
    from waza.runner.benchmarks.docker import engine

    from .benchmark_support import BASE, IMAGES

    program, why = engine()
    if program is None:
        pytest.skip(f"no container engine answers here: {why}")
    done = subprocess.run(
        ["sh", str(IMAGES / "busybox-image.sh"), BASE],
        capture_output=True,
        timeout=300,
        check=False,
        env={"PATH": "/usr/local/bin:/usr/bin:/bin", "ENGINE": Path(program).name},
    )
    if done.returncode != 0:
        pytest.skip(f"the offline base image {BASE} cannot be built here: {done.stderr.decode(errors='replace')[-300:]}")
    return BASE
