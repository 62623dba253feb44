"""``--env docker``: a trial in a container of the task's own image, built by Docker (or podman) from ``environment/``.

The image is built once per content: its tag is a hash of the build context
(every file's path, kind and bytes, symlinks as their target text, without
following them) and of the Dockerfile as built, so a second trial or a second
run builds nothing, and a changed task gets a new image. Builds run with no
network unless the task may have it; a base image that is not already in the
engine cannot be pulled offline, so it is named (an
:class:`~.environment.EnvironmentUnsatisfied`), unless the base-image map
(``--base-image ubuntu:24.04=local/debian:12``) replaces it: the ``FROM`` lines
are rewritten in a copy of the build context, and the replacement is recorded
in :meth:`DockerEnvironment.facts`, so each result says what it ran on.

Each trial gets one long-lived container (``sleep`` as its first process, the
image's ``WORKDIR`` as the workspace, ``cpus`` and ``memory_mb`` applied,
network none unless the task may have more); the agent, the oracle and the
verifier run in it with ``docker exec``. ``/logs/agent`` and ``/logs/verifier``
are the trial folder's, bind-mounted; ``/tests`` and ``/solution`` are copied
in (``docker cp``) just before the command that may see them and removed
after it, since a running container cannot take new mounts. After a command
(and before the next) every process left in the container but its first is
killed, so the verifier starts with nothing of the agent's still running.
It is registered after ``host`` (see the registration below for why).
``storage_mb`` is passed as ``--storage-opt size=`` where the engine's
storage driver enforces it (overlay2 on xfs mounted with ``pquota``, btrfs,
zfs); where the engine refuses it, the container runs without and the facts
say ``not enforced`` with the engine's reason.

A ``loopback`` network (``waza serve-model`` for an agent inside) is the
container with no network, plus waza's relay: the host side listens on a Unix
socket per port in a fresh folder (as for ``--sandbox``), the folder and the
relay script (standard library only) are bind-mounted read-only into the
container, and the agent's command runs under the relay on the image's
``python3``, which listens on the container's own ``127.0.0.1:PORT``. No
bridge to the host is opened and nothing else of the host is reachable; an
image without ``python3`` cannot have the relay (the trial says so).
"""

from __future__ import annotations

import functools
import hashlib
import os
import posixpath
import re
import shutil
import stat
import subprocess
import uuid
from collections.abc import Mapping, Sequence
from contextlib import AsyncExitStack
from pathlib import Path

import orjson

import waza.runner.benchmarks.host  # noqa: F401 - registered first, so that docker comes after it
from waza.adapters.sandbox import relay as relay_script
from waza.adapters.sandbox.bwrap import RELAY_MOUNT, Sandbox, relayed
from waza.protocol.io.process import run_once
from waza.runner.benchmarks import dockerfile
from waza.runner.benchmarks.environment import (
    Completed,
    Environment,
    EnvironmentSpec,
    EnvironmentUnsatisfied,
    Phase,
    register,
)
from waza.runner.benchmarks.prepared import MOUNT, NPM_MOUNT, has_npm, npm_copy, offline_env, prepared_dir, provides

__all__ = ["DockerEnvironment", "engine"]

#: The most output of a command kept as evidence (its last bytes).
OUTPUT_LIMIT = 10 * 1024 * 1024
#: Seconds a short engine command (inspect, cp, rm, the sweep) may take on a busy machine.
ENGINE_TIMEOUT = 120.0
#: Where the relay script appears in a container (its sockets at the sandbox's RELAY_MOUNT).
RELAY_SCRIPT = "/run/waza-relay.py"
#: Per engine: why it refused ``--storage-opt size=`` (asked once per process).
_storage_refused: dict[str, str] = {}
#: Images waza builds are tagged here, by content hash.
IMAGE_REPOSITORY = "waza-env"
_FROM = re.compile(r"^(?P<lead>\s*FROM\s+(?:--\S+\s+)*)(?P<image>\S+)(?P<rest>.*)$", re.IGNORECASE)


@functools.cache
def engine() -> tuple[str | None, str]:
    """The container engine's program that answers here (docker, else podman) and its server version;
    ``(None, why)`` when none does."""
    why: list[str] = []
    for program in ("docker", "podman"):
        path = shutil.which(program)
        if path is None:
            why.append(f"no {program} on PATH")
            continue
        try:
            done = subprocess.run(
                [path, "info", "--format", "{{.ServerVersion}}" if program == "docker" else "{{.Version.Version}}"],
                capture_output=True,
                text=True,
                timeout=30,
                check=False,
            )
        except subprocess.TimeoutExpired:
            why.append(f"{program} info did not answer in 30 s")
            continue
        if done.returncode == 0:
            return path, f"{program} {done.stdout.strip()}"
        why.append(f"{program} has no engine answering ({done.stderr.strip().splitlines()[-1:] or ['no output']})")
    return None, "; ".join(why)


def context_hash(folder: Path) -> str:
    """A hash of a build context: each entry's relative path, kind and content, symlinks not followed."""
    digest = hashlib.sha256()
    for root, dirs, files in os.walk(folder, followlinks=False):
        dirs.sort()
        for name in sorted(dirs + files):
            path = Path(root, name)
            info = path.lstat()
            rel = path.relative_to(folder).as_posix()
            if stat.S_ISLNK(info.st_mode):
                digest.update(b"L\0" + rel.encode() + b"\0" + os.readlink(path).encode() + b"\0")
            elif stat.S_ISREG(info.st_mode):
                digest.update(b"F\0" + rel.encode() + b"\0" + oct(info.st_mode & 0o111).encode() + b"\0")
                with path.open("rb") as fh:
                    for block in iter(lambda: fh.read(1 << 20), b""):
                        digest.update(block)
                digest.update(b"\0")
            elif stat.S_ISDIR(info.st_mode):
                digest.update(b"D\0" + rel.encode() + b"\0")
    return digest.hexdigest()


def rewrite_from(text: str, base_images: Mapping[str, str]) -> tuple[str, dict[str, str]]:
    """The Dockerfile with each mapped ``FROM`` image replaced, and the replacements made."""
    parsed = dockerfile.parse(text)
    lines = text.splitlines(keepends=True)
    replaced: dict[str, str] = {}
    for step in parsed.instructions:
        if step.keyword != "FROM":
            continue
        match = _FROM.match(lines[step.line - 1])
        if match and match["image"] in base_images:
            local = base_images[match["image"]]
            replaced[match["image"]] = local
            end = "\n" if lines[step.line - 1].endswith("\n") else ""
            lines[step.line - 1] = f"{match['lead']}{local}{match['rest'].rstrip(chr(10))}{end}"
    return "".join(lines), replaced


def base_images_of(text: str) -> list[str]:
    """The images the Dockerfile's stages start from (not earlier stages, not ``scratch``)."""
    stages: set[str] = set()
    images: list[str] = []
    for step in dockerfile.parse(text).instructions:
        if step.keyword != "FROM":
            continue
        words = [w for w in step.args.split() if not w.startswith("--")]
        if not words:
            continue
        if words[0].lower() not in stages and words[0] != "scratch":
            images.append(words[0])
        if len(words) >= 3 and words[1].lower() == "as":
            stages.add(words[2].lower())
    return list(dict.fromkeys(images))


class DockerEnvironment(Environment):
    kind = "docker"
    runs_images = True

    def __init__(self, spec: EnvironmentSpec, trial_dir: Path) -> None:
        super().__init__(spec, trial_dir)
        self._program, self._version = engine()
        self._container: str | None = None
        self.image: str | None = None
        self._stack = AsyncExitStack()
        self._relay: Path | None = None
        self._policy = Sandbox(network=spec.network, ports=spec.ports if spec.network == "loopback" else (), planned=True)
        self._facts: dict[str, str] = {"kind": self.kind, "engine": self._version, "workdir": spec.workdir}
        #: Whether this container shows the prepared pip packages (and uv), and a copy of the npm cache.
        self._pip_shown = self._npm_shown = False

    @classmethod
    def available(cls) -> str | None:
        program, why = engine()
        return None if program is not None else why

    def facts(self) -> dict[str, str]:
        return dict(self._facts)

    async def _engine(self, *args: str, timeout: float = ENGINE_TIMEOUT) -> tuple[int | None, str]:
        assert self._program is not None  # start() checked; not user input
        done = await run_once([self._program, *args], timeout=timeout)
        return done.code, done.stdout.decode("utf-8", "replace") + done.stderr_tail

    async def start(self) -> None:
        if self._program is None:
            raise EnvironmentUnsatisfied([f"a container engine ({self._version})"])
        # the workspace is the container's WORKDIR; the host folder is only where the engine's client runs
        for folder in (self.logs / "agent", self.logs / "verifier", self.logs / "artifacts", self.workspace):
            folder.mkdir(parents=True, exist_ok=True)
        for name in ("agent", "verifier", "artifacts"):  # writable by the task's [agent].user and [verifier].user
            (self.logs / name).chmod(0o777)
        self.image = await self.build()
        self._facts["network"] = self.spec.network
        create = ["run", "-d", "--name", f"waza-{uuid.uuid4().hex[:16]}", "--label", "waza.trial=1"]
        create += ["--network", "bridge" if self.spec.network == "host" else "none", "-w", self.spec.workdir]
        if self.spec.cpus is not None:
            create += ["--cpus", str(self.spec.cpus)]
            self._facts["cpus"] = str(self.spec.cpus)
        if self.spec.memory_mb is not None:
            create += ["--memory", f"{self.spec.memory_mb}m"]
            self._facts["memory_mb"] = str(self.spec.memory_mb)
        create += ["-v", f"{self.logs / 'agent'}:/logs/agent", "-v", f"{self.logs / 'verifier'}:/logs/verifier"]
        create += ["-v", f"{self.logs / 'artifacts'}:/logs/artifacts"]
        if self.spec.network != "host":
            create += await self._prepared_mount()
            if any(m == "npm" and has_npm(n) for m, n in self.spec.verifier_needs):
                own, env, _, said = npm_copy(self.trial_dir, prefix=False)  # root in the container: its own prefix
                self._facts["prepared"] = "; ".join(filter(None, [self._facts.get("prepared"), said]))
                self._npm_shown = True
                create += ["-v", f"{own}:{NPM_MOUNT}", *(a for k, v in env.items() for a in ("-e", f"{k}={v}"))]
        for path in self.spec.read_only:
            create += ["-v", f"{path}:{path}:ro"]
        if self.spec.network == "loopback" and self.spec.ports:
            self._relay = await self._stack.enter_async_context(relayed(self._policy))
            create += ["-v", f"{self._relay}:{RELAY_MOUNT}:ro", "-v", f"{relay_script.__file__}:{RELAY_SCRIPT}:ro"]
            self._facts["loopback"] = "ports " + ",".join(map(str, self.spec.ports)) + " of the host, relayed in"
        create += ["--entrypoint", "sleep", self.image, "2147483647"]
        code, output = await self._create(create)
        if code != 0:
            raise EnvironmentUnsatisfied([f"a container of {self.image}: {output.strip()[-500:]}"])
        self._container = output.strip().splitlines()[-1]
        missing: list[str] = []
        if self._relay is not None and not await self._has("program", "python3"):
            missing.append("python3 in the image (the loopback relay to the host's ports runs on it)")
        if self.spec.network != "host":
            missing += [
                f"tests: {m} package {n!r} (not in the image, and the network is {self.spec.network})"
                for m, n in self.spec.verifier_needs
                if not await self._has(m, n) and not await self._prepared(m, n)
            ]
        if missing:
            raise EnvironmentUnsatisfied(missing)

    async def _create(self, create: list[str]) -> tuple[int | None, str]:
        """``docker run -d``, with ``--storage-opt size=`` for ``storage_mb`` where the engine enforces it;
        where it refuses (its storage driver cannot: overlay2 needs xfs with ``pquota``), without, and said."""
        if self.spec.storage_mb is None:
            return await self._engine(*create)
        if _storage_refused.get(self._version) is None:
            at = create.index("--entrypoint")
            code, output = await self._engine(*create[:at], "--storage-opt", f"size={self.spec.storage_mb}m", *create[at:])
            if code == 0:
                self._facts["storage_mb"] = str(self.spec.storage_mb)
                return code, output
            if "storage-opt" not in output and "quota" not in output:
                return code, output
            said = [line for line in output.splitlines() if "storage-opt" in line or "quota" in line]
            _storage_refused[self._version] = said[0].strip()[-200:]
        self._facts["storage_mb"] = f"{self.spec.storage_mb} (not enforced: {_storage_refused[self._version]})"
        return await self._engine(*create)

    async def _prepared_mount(self) -> list[str]:
        """The ``docker run`` options that show what ``waza prepare`` fetched, read-only, and point pip (and
        uvx, its programs at the end of the image's ``PATH``) at it, offline; none when nothing was."""
        if not (prepared_dir() / "pip").is_dir():
            return []
        assert self.image is not None
        code, out = await self._engine("image", "inspect", "--format", "{{json .Config.Env}}", self.image)
        image_env = dict(e.partition("=")[::2] for e in orjson.loads(out)) if code == 0 and out.strip() != "null" else {}
        prepared = offline_env()
        if prepared is None:
            return []
        env, tail, self._facts["prepared"] = prepared
        self._pip_shown = True
        if tail:
            env["PATH"] = ":".join(
                [image_env.get("PATH") or "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", *tail]
            )
        return ["-v", f"{prepared_dir()}:{MOUNT}:ro", *(a for k, v in env.items() for a in ("-e", f"{k}={v}"))]

    async def _prepared(self, manager: str, name: str) -> bool:
        """Whether ``waza prepare`` fetched it and it is shown in this container (an npm package only where
        the image has npm to install it)."""
        if manager == "npm":
            return self._npm_shown and has_npm(name) and await self._has("program", "npm")
        return self._pip_shown and provides(manager, name)

    async def _has(self, manager: str, name: str) -> bool:
        """Whether the image has what a verifier installs at test time (offline it must already be there);
        manager ``program``: a program of that name."""
        assert self._container is not None
        if manager == "apt":
            probe = ["dpkg-query", "-W", name]
        elif manager == "pip":
            probe = ["python3", "-c", "import importlib.metadata as m, sys; m.version(sys.argv[1])", name]
        else:  # npm, uv and program: a program of that name (an npm package's without its scope and version)
            program = dockerfile.npm_name(name).rsplit("/", 1)[-1] if manager == "npm" else name
            probe = ["sh", "-c", 'command -v "$1"', "sh", program]
        return (await self._engine("exec", self._container, *probe))[0] == 0

    async def build(self) -> str:
        """The task's image, built (or found built) by content hash: what ``start`` runs first, and all
        that ``waza prepare`` needs of it."""
        if self._program is None:
            raise EnvironmentUnsatisfied([f"a container engine ({self._version})"])
        context = self.spec.environment_dir
        has_dockerfile = context is not None and (context / "Dockerfile").is_file()
        if self.spec.image is not None:
            prebuilt = await self._prebuilt(self.spec.image, fallback=has_dockerfile)
            if prebuilt is not None:
                return prebuilt
        if context is None or not has_dockerfile:
            found = "a compose file" if context and any(context.glob("*compose*.y*ml")) else "no Dockerfile"
            raise EnvironmentUnsatisfied([f"a Dockerfile in the task's environment ({found})"])
        text, replaced = rewrite_from((context / "Dockerfile").read_text(encoding="utf-8"), self.spec.base_images)
        for image, local in replaced.items():
            self._facts[f"base_image {image}"] = f"replaced by {local} (--base-image)"
        key = hashlib.sha256(f"{context_hash(context)}\0{text}".encode()).hexdigest()[:24]
        tag = f"{IMAGE_REPOSITORY}:{key}"
        if (await self._engine("image", "inspect", "--format", "{{.Id}}", tag))[0] == 0:
            self._facts.update(image=tag, image_built="no (cached)")
            return tag
        missing = []
        for base in base_images_of(text):
            if (await self._engine("image", "inspect", "--format", "{{.Id}}", base))[0] != 0 and self.spec.network != "host":
                missing.append(f"base image {base!r} (not in the engine, none pulled offline; map it: --base-image {base}=LOCAL)")
        if missing:
            raise EnvironmentUnsatisfied(missing)
        build_dir = self.trial_dir / "build-context"
        shutil.rmtree(build_dir, ignore_errors=True)
        shutil.copytree(context, build_dir, symlinks=True)
        (build_dir / "Dockerfile").write_text(text, encoding="utf-8")
        network = "default" if self.spec.network == "host" else "none"
        code, output = await self._engine(
            "build", "-q", "--force-rm", "-t", tag, "--network", network, str(build_dir), timeout=self.spec.build_timeout_sec
        )
        shutil.rmtree(build_dir, ignore_errors=True)
        if code != 0:
            why = "timed out" if code is None else output.strip()[-800:]
            raise EnvironmentUnsatisfied([f"an image built from {context}/Dockerfile: {why}"])
        self._facts.update(image=tag, image_built="yes")
        return tag

    async def _prebuilt(self, image: str, *, fallback: bool) -> str | None:
        """The task's ``docker_image`` (mapped by ``--base-image`` when it is), as Harbor prefers it to
        building: found in the engine, or pulled when the network is allowed; None when it cannot be had and
        the Dockerfile is built instead (``fallback``, said in the facts), else unsatisfied, naming it."""
        local = self.spec.base_images.get(image, image)
        found = (await self._engine("image", "inspect", "--format", "{{.Id}}", local))[0] == 0
        if not found and self.spec.network == "host":
            found = (await self._engine("pull", local, timeout=self.spec.build_timeout_sec))[0] == 0
        if found:
            self._facts.update(image=local, image_built="no (the task's docker_image)")
            if local != image:
                self._facts[f"base_image {image}"] = f"replaced by {local} (--base-image)"
            return local
        why = f"{local!r} is not in the engine and none is pulled offline"
        if fallback:
            self._facts["docker_image"] = f"{why}: environment/Dockerfile built instead"
            return None
        raise EnvironmentUnsatisfied([f"the image {why} ([environment].docker_image; map it: --base-image {image}=LOCAL)"])

    def _exec_argv(self, argv: Sequence[str], env: Mapping[str, str], phase: Phase, user: str | None) -> list[str]:
        assert self._program is not None and self._container is not None  # start() ran: the interface's order
        names = [arg for key in env for arg in ("-e", key)]  # values pass through the client's environment
        if phase == "agent" and self._relay is not None:  # the agent's loopback gets the host's ports, relayed
            ports = ",".join(str(p) for p in self.spec.ports)
            argv = ["python3", "-I", "-S", RELAY_SCRIPT, RELAY_MOUNT, ports, "--", *argv]
        as_user = ["--user", user] if user is not None else []
        return [self._program, "exec", "-i", *as_user, "-w", self.spec.workdir, *names, self._container, *argv]

    def _copy_argvs(self, mounts: Mapping[str, Path]) -> list[list[str]]:
        assert self._program is not None and self._container is not None
        out: list[list[str]] = []
        for place, source in mounts.items():
            clear = 'rm -rf -- "$1" && mkdir -p -- "${1%/*}/"'  # the place's folder made (an artifact's, say)
            out.append([self._program, "exec", self._container, "sh", "-c", clear, "sh", place])
            out.append([self._program, "cp", f"{source}/." if source.is_dir() else str(source), f"{self._container}:{place}"])
        return out

    def command(
        self,
        argv: Sequence[str],
        *,
        phase: Phase,
        env: Mapping[str, str],
        mounts: Mapping[str, Path] | None = None,
        user: str | None = None,
    ) -> tuple[list[str], dict[str, str]]:
        for copy in self._copy_argvs(mounts or {}):
            done = subprocess.run(copy, capture_output=True, timeout=ENGINE_TIMEOUT, check=False)
            if done.returncode != 0:
                raise OSError(f"{copy[-1]} could not be copied into the container: {done.stderr.decode(errors='replace')[-300:]}")
        # Only what waza or the task sets goes in, and the variables the user keeps (--sandbox-env), not the
        # host's own environment (its PATH, HOME, secrets): an adapter hands over os.environ plus its own.
        kept = set(self.spec.keep_env)
        inside = {**self.spec.env, **{k: v for k, v in env.items() if k in kept or os.environ.get(k) != v}}
        return self._exec_argv(self._shown_program(argv), inside, phase, user), {**os.environ, **inside}

    def _shown_program(self, argv: Sequence[str]) -> list[str]:
        """``argv`` with a bare program name that the host finds in an installation shown read-only (an
        agent's CLI) made that absolute path, which the container has at the same place; any other bare
        name is left to the image's own ``PATH``."""
        if not argv or os.sep in argv[0] or (found := shutil.which(argv[0])) is None:
            return list(argv)
        real = os.path.realpath(found)
        shown = any(Path(real).is_relative_to(folder) for folder in self.spec.read_only)
        return [real if shown else argv[0], *argv[1:]]

    async def _sweep(self) -> None:
        """Kill every process in the container but its first (``kill -1`` spares the caller and PID 1)."""
        assert self._container is not None
        await self._engine("exec", self._container, "sh", "-c", "kill -9 -1 2>/dev/null; true")

    async def exec(
        self,
        argv: Sequence[str],
        *,
        phase: Phase,
        env: Mapping[str, str],
        timeout: float | None,
        mounts: Mapping[str, Path] | None = None,
        user: str | None = None,
    ) -> Completed:
        await self._sweep()
        if phase == "verifier":
            _empty(self.logs / "verifier")
        for copy in self._copy_argvs(mounts or {}):
            code, output = await self._engine(*copy[1:])
            if code != 0:
                raise OSError(f"{copy[-1]} could not be copied into the container: {output.strip()[-300:]}")
        merged = {**self.spec.env, **env}
        done = await run_once(
            self._exec_argv(argv, merged, phase, user), env={**os.environ, **merged}, timeout=timeout, stdout_limit=OUTPUT_LIMIT
        )
        await self._sweep()
        for place in mounts or {}:
            await self._engine("exec", self._container or "", "rm", "-rf", place)
        output = done.stdout.decode("utf-8", "replace") + done.stderr_tail
        return Completed(exit_code=done.code, timed_out=done.timed_out, output=output, seconds=round(done.duration_ms / 1000, 3))

    async def collect(self, source: str, dest: Path) -> str | None:
        assert self._container is not None
        place = posixpath.normpath(posixpath.join(self.spec.workdir, source))
        dest.parent.mkdir(parents=True, exist_ok=True)
        code, output = await self._engine("cp", f"{self._container}:{place}", str(dest))
        return None if code == 0 else output.strip()[-300:] or f"docker cp exited {code}"

    async def stop(self) -> None:
        if self._container is not None:
            container, self._container = self._container, None
            await self._engine("rm", "-f", container)
        await self._stack.aclose()


def _empty(folder: Path) -> None:
    """Empty a bind-mounted folder in place (replacing it would leave the container the old one)."""
    folder.mkdir(parents=True, exist_ok=True)
    for entry in folder.iterdir():
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry, ignore_errors=True)
        else:
            entry.unlink(missing_ok=True)


#: After ``host``: most tasks' base images are not in a fresh engine offline, and the host's system runs them
#: without one; ``--env docker`` is asked for by name (with ``--base-image`` where needed).
register(DockerEnvironment)
