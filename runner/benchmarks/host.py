"""``--env host``: a trial under bubblewrap over the host's own system.

No image is built: the host's ``/usr``, ``/etc`` and the like are shown
read-only, the trial's workspace at the task's ``WORKDIR``, ``/logs/agent`` and
``/logs/verifier`` from the trial's folder, ``/tests`` and ``/solution`` only
for the commands that may see them; each command gets its own process and IPC
namespaces, a private ``/tmp`` and home, and no network unless the spec allows
it. The Dockerfile is read, not run (see :mod:`.dockerfile`): its ``WORKDIR``,
``ENV`` and ``COPY`` of the build context into the workspace are honoured, the
packages it and the verifier install are checked on the host, or among those
``waza prepare`` fetched (shown read-only at :data:`~.prepared.MOUNT` with the
variables that point pip and uvx there, as under ``--env docker``); a missing one
makes :meth:`HostEnvironment.start` raise :class:`EnvironmentUnsatisfied`, and
what cannot be honoured (the base image, other ``RUN`` steps) is listed in
:meth:`HostEnvironment.facts`. This is as isolated as the bubblewrap sandbox
(see :mod:`waza.adapters.sandbox.bwrap`) and no more: same kernel, the host's
programs.
"""

from __future__ import annotations

import functools
import os
import posixpath
import shutil
import subprocess
from collections.abc import Mapping, Sequence
from contextlib import AsyncExitStack
from pathlib import Path

from waza.adapters.sandbox.bwrap import Sandbox, check_available, relayed, sandbox_env, wrap_command
from waza.protocol.errors import ConfigError
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

__all__ = ["HostEnvironment", "installed"]

#: The most output of a command kept as evidence (its last bytes).
OUTPUT_LIMIT = 10 * 1024 * 1024


@functools.cache
def installed(manager: str, name: str) -> bool:
    """Whether the host has package ``name`` of ``manager`` (apt: dpkg's status; pip: the host's python3;
    npm and uv: a program of that name on PATH, an npm package's without its scope and version)."""
    if manager == "apt":
        query = ["dpkg-query", "-W", "-f=${Status}", name]
        done = subprocess.run(query, capture_output=True, text=True, check=False) if shutil.which("dpkg-query") else None
        return done is not None and done.stdout.endswith("installed") and "not-installed" not in done.stdout
    if manager == "pip":
        python = shutil.which("python3")
        code = "import importlib.metadata as m, sys; m.version(sys.argv[1])"
        return python is not None and subprocess.run([python, "-c", code, name], capture_output=True, check=False).returncode == 0
    return shutil.which(dockerfile.npm_name(name).rsplit("/", 1)[-1] if manager == "npm" else name) is not None


class HostEnvironment(Environment):
    kind = "host"

    def __init__(self, spec: EnvironmentSpec, trial_dir: Path) -> None:
        super().__init__(spec, trial_dir)
        self._stack = AsyncExitStack()
        self._relay: Path | None = None
        self._facts: dict[str, str] = {"kind": self.kind, "workdir": spec.workdir}
        self._env: dict[str, str] = {}
        #: The variables that point pip, uvx and npm at what ``waza prepare`` fetched (shown at MOUNT, and a
        #: copy of npm's cache at NPM_MOUNT), and the folders put at the end of PATH; empty: nothing was
        self._prepared: dict[str, str] = {}
        self._path_tail: list[str] = []
        self.policy = Sandbox(
            network=spec.network,
            ports=spec.ports if spec.network == "loopback" else (),
            read_only=spec.read_only,
            keep_env=spec.keep_env,
            planned=True,  # read_only was planned once for the run (run.shown_of_host)
        )

    @classmethod
    def available(cls) -> str | None:
        try:
            check_available()
        except ConfigError as exc:
            return exc.message
        return None

    def facts(self) -> dict[str, str]:
        return dict(self._facts)

    async def start(self) -> None:
        for folder in (self.workspace, self.logs / "agent", self.logs / "verifier", self.logs / "artifacts"):
            folder.mkdir(parents=True, exist_ok=True)
        missing: list[str] = []
        not_run: list[str] = []
        if self.spec.dockerfile is None and self.spec.image is not None:
            self._facts["base_image"] = f"{self.spec.image} (replaced by the host's system)"
        if self.spec.dockerfile is not None:
            parsed = dockerfile.parse(self.spec.dockerfile, self.spec.workdir)
            self._env.update(parsed.env)
            if parsed.base:
                self._facts["base_image"] = f"{parsed.base} (replaced by the host's system)"
            for step in parsed.instructions:
                if step.keyword == "RUN":
                    wanted = dockerfile.installs(step.args)
                    missing += [f"Dockerfile:{step.line}: {m} package {n!r}" for m, n in wanted if not installed(m, n)]
                    if not wanted:
                        not_run.append(f"{step.line}")
                elif step.keyword in ("COPY", "ADD"):
                    problem = self._copy(step)
                    if problem:
                        missing.append(f"Dockerfile:{step.line}: {problem}")
        limits = [
            f"{k}={v:g}"
            for k, v in (("cpus", self.spec.cpus), ("memory_mb", self.spec.memory_mb), ("storage_mb", self.spec.storage_mb))
            if v is not None
        ]
        if limits:
            self._facts["limits_not_enforced"] = ", ".join(limits)
        if not_run:
            self._facts["dockerfile_not_run"] = "RUN at line " + ", ".join(not_run) + " (not run on the host)"
        if self.spec.network != "host":
            prepared = offline_env()
            if prepared is not None:
                self._prepared, self._path_tail, self._facts["prepared"] = prepared
            if any(m == "npm" and not installed(m, n) and has_npm(n) for m, n in self.spec.verifier_needs):
                self._npm_copy()
            for manager, name in self.spec.verifier_needs:
                shown = (prepared is not None or manager == "npm") and provides(manager, name)
                if (manager == "uv" or not installed(manager, name)) and not shown:
                    what = "uvx (fetches its tools at test time)" if manager == "uv" else f"{manager} package {name!r}"
                    missing.append(f"tests: {what}, and the network is {self.spec.network}")
        self._env.update(self.spec.env)
        if missing:
            raise EnvironmentUnsatisfied(missing)
        self._relay = await self._stack.enter_async_context(relayed(self.policy))

    def _npm_copy(self) -> None:
        """The trial's own copy of the prepared npm cache (npm writes into its cache; npx installs there), and
        a global prefix for ``npm install -g``: shown read-write at NPM_MOUNT, npm pointed at them."""
        _, env, tail, said = npm_copy(self.trial_dir, prefix=True)
        self._prepared |= env
        self._path_tail += tail
        self._facts["prepared"] = "; ".join(filter(None, [self._facts.get("prepared"), said]))

    def _copy(self, step: dockerfile.Instruction) -> str | None:
        """Copy a COPY/ADD of the build context into the workspace; what stops it, or None."""
        found = dockerfile.copies(step)
        context = self.spec.environment_dir
        if found is None or context is None:
            return f"{step.keyword} {step.args!r} cannot be honoured on the host"
        sources, dest = found
        target = posixpath.normpath(posixpath.join(self.spec.workdir, dest))
        if target != self.spec.workdir and not target.startswith(self.spec.workdir.rstrip("/") + "/"):
            return f"{step.keyword} to {target}, outside WORKDIR {self.spec.workdir}"
        inside = self.workspace / posixpath.relpath(target, self.spec.workdir)
        for source in sources:
            origin = (context / source).resolve()
            if not origin.is_relative_to(context.resolve()) or not origin.exists():
                return f"{step.keyword} source {source!r} is not in the build context"
            into_dir = dest.endswith("/") or len(sources) > 1 or origin.is_dir()
            if origin.is_dir():
                shutil.copytree(origin, inside, symlinks=True, dirs_exist_ok=True)
            else:
                (inside if into_dir else inside.parent).mkdir(parents=True, exist_ok=True)
                shutil.copy2(origin, inside / origin.name if into_dir else inside, follow_symlinks=False)
        return None

    def command(
        self,
        argv: Sequence[str],
        *,
        phase: Phase,
        env: Mapping[str, str],
        mounts: Mapping[str, Path] | None = None,
        user: str | None = None,
    ) -> tuple[list[str], dict[str, str]]:
        self._as(phase, user)
        # secret-like variables are dropped from what the caller passes too (an adapter passes os.environ)
        return self._wrapped(argv, phase, sandbox_env(self.policy, env), mounts)

    def _as(self, phase: Phase, user: str | None) -> None:
        """Name a user the task asks for: bubblewrap over the host's system runs every command as waza's
        own user (the task's users are made by its Dockerfile, which is not run here)."""
        if user is not None:
            said = self._facts.get("user_not_applied", "")
            entry = f"{phase} as {user!r}"
            if entry not in said.split("; "):
                self._facts["user_not_applied"] = f"{said}; {entry}" if said else entry

    def _wrapped(
        self, argv: Sequence[str], phase: Phase, env: Mapping[str, str], mounts: Mapping[str, Path] | None
    ) -> tuple[list[str], dict[str, str]]:
        binds: list[tuple[Path, str, bool]] = [
            (self.workspace, self.spec.workdir, True),
            (self.logs / "agent", "/logs/agent", True),
            (self.logs / "artifacts", "/logs/artifacts", True),
        ]
        if phase == "verifier":
            binds.append((self.logs / "verifier", "/logs/verifier", True))
        binds += [(source, place, True) for place, source in (mounts or {}).items()]
        if "PIP_FIND_LINKS" in self._prepared:
            binds.append((prepared_dir(), MOUNT, False))
        if "npm_config_cache" in self._prepared:
            binds.append((self.trial_dir / "npm", NPM_MOUNT, True))
        wrapped = wrap_command(argv, self.policy, self.workspace, self._relay, mounts=binds, chdir=self.spec.workdir)
        merged = {**sandbox_env(self.policy, os.environ), **self._env, **env}
        if self._prepared:  # every phase, as a container's variables are; prepared programs after the caller's PATH
            merged |= {**self._prepared, "PATH": ":".join([merged.get("PATH") or os.defpath, *self._path_tail])}
        return wrapped, merged

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
        self._as(phase, user)
        if phase == "verifier":
            shutil.rmtree(self.logs / "verifier", ignore_errors=True)
            (self.logs / "verifier").mkdir(parents=True)
        # ``env`` is the task's own (its [verifier.env], [solution.env]): kept whole, a judge's key included
        wrapped, merged = self._wrapped(argv, phase, env, mounts)
        done = await run_once(wrapped, cwd=self.workspace, env=merged, timeout=timeout, stdout_limit=OUTPUT_LIMIT)
        output = done.stdout.decode("utf-8", "replace") + done.stderr_tail
        return Completed(exit_code=done.code, timed_out=done.timed_out, output=output, seconds=round(done.duration_ms / 1000, 3))

    async def collect(self, source: str, dest: Path) -> str | None:
        place = posixpath.normpath(posixpath.join(self.spec.workdir, source))
        for inside, host in ((self.spec.workdir, self.workspace), ("/logs", self.logs)):
            if place == inside or place.startswith(inside.rstrip("/") + "/"):
                origin = host / posixpath.relpath(place, inside)
                break
        else:
            return f"{place} is neither in {self.spec.workdir} nor in /logs (the host environment keeps nothing else)"
        if not origin.exists() and not origin.is_symlink():
            return f"{place} does not exist"
        dest.parent.mkdir(parents=True, exist_ok=True)
        if origin.is_dir() and not origin.is_symlink():
            shutil.copytree(origin, dest, symlinks=True, dirs_exist_ok=True)
        else:
            shutil.copy2(origin, dest, follow_symlinks=False)
        return None

    async def stop(self) -> None:
        await self._stack.aclose()


register(HostEnvironment)
