"""The packages ``waza prepare`` fetched for verifiers that install them at test time, and where they are.

Many tasks' ``test.sh`` runs ``pip install pytest`` (or ``uvx --with X``) when
it starts: online, a failed download silently scores 0; offline, it cannot
work at all. ``waza prepare`` fetches each such pip package (and what it
depends on) from the package index once, into ``pip/`` of this folder; under
``--env docker`` and ``--env host`` the folder is shown read-only in the
environment at :data:`MOUNT` and, with no network, the verifier's pip is pointed at it
(``PIP_FIND_LINKS``, ``PIP_NO_INDEX``), so the same ``pip install`` works
offline. ``uvx`` is prepared too: the ``uv`` and ``uvx`` programs (from the
``uv`` wheel on the package index, static binaries) go to ``uv/bin/``, which
offline environments get at the end of their ``PATH`` (an image's or the host's own uv wins),
with uv told to work offline from the same ``pip/`` folder (``UV_OFFLINE``,
``UV_FIND_LINKS``) on the image's (or the host's) own Python (``UV_PYTHON_DOWNLOADS=never``).
npm packages (``npm install -g X``, ``npx X``) are fetched with the host's
``npm`` into ``npm/``, an npm cache holding each package, its dependencies and
the metadata ``npx`` asks for; an offline trial (host or container) gets a
copy of that cache of its own (npm writes into its cache, ``npx`` installs
there), with npm told to use it offline (:func:`npm_env`). apt packages are
not fetched: they must be in the image (a missing one is named, and the trial
is ``environment-unsatisfied``); fetching them soundly would mean running the
image's own package manager against a registry, which is a build step, not a
cache. Wheels are fetched for the host's Python and platform: pure-Python
packages (most test tools) fit any image; a compiled one fits only an image
with the same Python.
"""

from __future__ import annotations

import re
import shutil
import sys
import tempfile
import urllib.parse
import zipfile
from pathlib import Path

import msgspec

from waza.protocol.io.model_cache import cache_dir
from waza.protocol.io.process import run_once

__all__ = [
    "MOUNT",
    "NPM_MOUNT",
    "UV_PROGRAMS",
    "fetch_npm",
    "fetch_pip",
    "fetch_uv",
    "has_npm",
    "has_pip",
    "has_uv",
    "npm_copy",
    "npm_env",
    "offline_env",
    "pip_env",
    "prepared_dir",
    "provides",
    "uv_env",
]

#: Where the prepared folder appears inside an environment (a container, or bubblewrap's ``/run``, the one
#: system-level place there that is not the host's own read-only folder).
MOUNT = "/run/waza-prepared"
#: Where a trial's own copy of the prepared npm cache (``cache/``) and its global prefix (``global/``) appear.
NPM_MOUNT = "/run/waza-npm"
#: An npm package spec ``waza prepare`` fetches: a registry name (scoped or not), maybe ``@`` a version or range.
NPM_SPEC = re.compile(r"^(@[a-z0-9][\w.-]*/)?[a-z0-9][\w.-]*(@[\w.^~<>=*| -]+)?$", re.IGNORECASE)
#: The largest npm lockfile read (the packages one npm package brought in).
NPM_LOCK_LIMIT = 64 * 1024 * 1024
#: The programs of the ``uv`` wheel that ``waza prepare`` keeps.
UV_PROGRAMS = ("uv", "uvx")
#: The largest program taken out of the ``uv`` wheel.
UV_LIMIT = 256 * 1024 * 1024
#: Seconds one ``pip download`` may take.
FETCH_TIMEOUT = 600.0


def prepared_dir() -> Path:
    """The prepared packages' folder: ``benchmarks/`` of waza's cache folder (``$WAZA_CACHE_DIR``, ...)."""
    return cache_dir() / "benchmarks"


def _normal(name: str) -> str:
    return re.sub(r"[-_.]+", "_", name).lower()


def has_pip(name: str, root: Path | None = None) -> bool:
    """Whether a distribution of ``name`` (a wheel or an sdist) was fetched into ``root``'s ``pip/``."""
    folder = (root or prepared_dir()) / "pip"
    if not folder.is_dir():
        return False
    wanted = _normal(name) + "-"
    return any(_normal(p.name.split("-")[0]) + "-" == wanted for p in folder.iterdir() if p.is_file())


async def fetch_pip(name: str, root: Path | None = None) -> str | None:
    """Fetch ``name`` and its dependencies into ``root``'s ``pip/``; why it failed, or None."""
    folder = (root or prepared_dir()) / "pip"
    folder.mkdir(parents=True, exist_ok=True)
    argv = [sys.executable, "-m", "pip", "download", "-q", "--disable-pip-version-check", "-d", str(folder), name]
    done = await run_once(argv, timeout=FETCH_TIMEOUT)
    if done.code == 0:
        return None
    return "timed out" if done.timed_out else done.stderr_tail.strip()[-500:] or f"pip exited {done.code}"


def pip_env() -> dict[str, str]:
    """The verifier's environment that makes ``pip install`` take the prepared packages, offline."""
    return {"PIP_FIND_LINKS": f"{MOUNT}/pip", "PIP_NO_INDEX": "1"}


def has_uv(root: Path | None = None) -> bool:
    """Whether ``waza prepare`` put ``uv`` and ``uvx`` in ``root``'s ``uv/bin``."""
    folder = (root or prepared_dir()) / "uv" / "bin"
    return all((folder / name).is_file() for name in UV_PROGRAMS)


async def fetch_uv(root: Path | None = None) -> str | None:
    """Fetch the ``uv`` wheel for this platform and keep its ``uv`` and ``uvx`` in ``root``'s ``uv/bin``;
    why it failed, or None."""
    folder = (root or prepared_dir()) / "uv" / "bin"
    folder.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="waza-uv-") as scratch:
        argv = [sys.executable, "-m", "pip", "download", "-q", "--disable-pip-version-check", "--no-deps"]
        done = await run_once([*argv, "--only-binary=:all:", "-d", scratch, "uv"], timeout=FETCH_TIMEOUT)
        if done.code != 0:
            return "timed out" if done.timed_out else done.stderr_tail.strip()[-500:] or f"pip exited {done.code}"
        wheels = list(Path(scratch).glob("uv-*.whl"))
        if len(wheels) != 1:
            return "pip fetched no single uv wheel"
        with zipfile.ZipFile(wheels[0]) as wheel:
            members = {Path(info.filename).name: info for info in wheel.infolist() if "/scripts/" in info.filename}
            for name in UV_PROGRAMS:
                info = members.get(name)
                if info is None or info.file_size > UV_LIMIT:
                    return f"the uv wheel holds no {name} program (or one larger than {UV_LIMIT} bytes)"
                target = folder / f".{name}.part"
                with wheel.open(info) as source, target.open("wb") as sink:
                    shutil.copyfileobj(source, sink)
                target.chmod(0o755)
                target.replace(folder / name)
    return None


def uv_env() -> dict[str, str]:
    """The verifier's environment that makes ``uvx --with X`` take the prepared packages, offline, on the
    image's own Python (the container's ``PATH`` gets ``MOUNT/uv/bin`` at its end, see the docker environment)."""
    return {"UV_OFFLINE": "1", "UV_FIND_LINKS": f"{MOUNT}/pip", "UV_PYTHON_DOWNLOADS": "never"}


def offline_env() -> tuple[dict[str, str], list[str], str] | None:
    """What an offline environment gets when the prepared folder is shown at :data:`MOUNT`: the variables
    (pip's, and uv's when it was fetched), the folders to put at the end of its ``PATH`` (uv's programs) and
    the line a result records; None when ``waza prepare`` fetched no pip package."""
    if not (prepared_dir() / "pip").is_dir():
        return None
    env, tail, what = pip_env(), [], "pip packages"
    if has_uv():
        env, tail, what = env | uv_env(), [f"{MOUNT}/uv/bin"], "pip packages and uv"
    return env, tail, f"{what} from {prepared_dir()} at {MOUNT} ({', '.join([*env, *(['PATH'] if tail else [])])})"


def provides(manager: str, name: str) -> bool:
    """Whether ``waza prepare`` fetched what a verifier installs at test time (pip and npm packages, uv)."""
    if manager == "npm":
        return has_npm(name)
    return has_pip(name) if manager == "pip" else manager == "uv" and has_uv()


def _npm_marker(spec: str, root: Path | None) -> Path:
    return (root or prepared_dir()) / "npm-specs" / urllib.parse.quote(spec, safe="")


def has_npm(spec: str, root: Path | None = None) -> bool:
    """Whether ``waza prepare`` fetched the npm package ``spec`` (as the script wrote it) into ``root``'s ``npm/``."""
    return _npm_marker(spec, root).is_file()


async def fetch_npm(spec: str, root: Path | None = None) -> str | None:
    """Fetch the npm package ``spec``, its dependencies and its full metadata (what ``npx`` reads) into
    ``root``'s ``npm/`` cache with the host's npm (no install script runs); why it failed, or None."""
    npm = shutil.which("npm")
    if npm is None:
        return "no npm on PATH (the host's npm fetches npm packages)"
    if not NPM_SPEC.match(spec):
        return "not a package of the registry (a name, maybe @ a version)"
    cache = (root or prepared_dir()) / "npm"
    quiet = ["--cache", str(cache), "--no-audit", "--no-fund", "--no-update-notifier", "--loglevel=error"]
    with tempfile.TemporaryDirectory(prefix="waza-npm-") as scratch:
        argv = [npm, "install", "--prefix", scratch, "--ignore-scripts", "--no-save", *quiet, spec]
        for step in range(2):
            done = await run_once(argv, cwd=Path(scratch), timeout=FETCH_TIMEOUT)
            if done.code != 0:
                return "timed out" if done.timed_out else done.stderr_tail.strip()[-500:] or f"npm exited {done.code}"
            if step == 0:  # the full metadata of the package and of each dependency: what npx (older npm) reads
                argv = [npm, "cache", "add", *quiet, spec, *_installed_specs(Path(scratch))]
    marker = _npm_marker(spec, root)
    marker.parent.mkdir(parents=True, exist_ok=True)
    marker.write_text(spec + "\n")
    return None


def _installed_specs(prefix: Path) -> list[str]:
    """``name@version`` of each package npm installed under ``prefix`` (from its hidden lockfile)."""
    lock = prefix / "node_modules" / ".package-lock.json"
    if not lock.is_file() or lock.stat().st_size > NPM_LOCK_LIMIT:
        return []
    try:
        packages = msgspec.json.decode(lock.read_bytes(), type=_Lock).packages
    except msgspec.DecodeError:  # another npm's format: the package's own metadata is fetched all the same
        return []
    return sorted({f"{key.rsplit('node_modules/', 1)[-1]}@{entry.version}" for key, entry in packages.items() if entry.version})


class _LockEntry(msgspec.Struct):
    version: str = ""


class _Lock(msgspec.Struct):
    packages: dict[str, _LockEntry] = {}


def npm_env(*, prefix: bool) -> tuple[dict[str, str], list[str]]:
    """The variables that make npm and npx take a trial's copy of the prepared cache (at :data:`NPM_MOUNT`),
    offline, and the folders to put at the end of ``PATH``; ``prefix``: ``npm install -g`` goes to
    ``NPM_MOUNT/global`` (for a host, whose system is read-only), its programs on ``PATH``."""
    env = {
        "npm_config_cache": f"{NPM_MOUNT}/cache",
        "npm_config_offline": "true",
        "npm_config_update_notifier": "false",
        "npm_config_audit": "false",
        "npm_config_fund": "false",
    }
    if not prefix:
        return env, []
    return env | {"npm_config_prefix": f"{NPM_MOUNT}/global"}, [f"{NPM_MOUNT}/global/bin"]


def npm_copy(trial_dir: Path, *, prefix: bool) -> tuple[Path, dict[str, str], list[str], str]:
    """A trial's own copy of the prepared npm cache (npm writes into its cache, and ``npx`` installs there)
    and an empty global prefix, in ``trial_dir/npm``: that folder, to show read-write at :data:`NPM_MOUNT`,
    the variables and ``PATH`` folders of :func:`npm_env`, and the line a result records."""
    own = trial_dir / "npm"
    shutil.copytree(prepared_dir() / "npm", own / "cache", symlinks=True)
    (own / "global").mkdir()
    env, tail = npm_env(prefix=prefix)
    named = ", ".join([*env, *(["PATH"] if tail else [])])
    return own, env, tail, f"npm packages from {prepared_dir()}, a copy per trial at {NPM_MOUNT} ({named})"
