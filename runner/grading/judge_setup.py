"""Pointing the LLM graders at a judge: a ``Judge``'s choice (the CLI's ``--judge`` options), and the local model server.

A judge choice is merged into the config of every LLM grader of the
run (``llm``, ``llm_comparison``, ``prompt``), overriding what a grader config
says: the command line is the run-time choice. They are rejected when no LLM
grader is there to use them, and in combinations that contradict each other.

``--judge local`` (or ``judge: local`` in a grader's config) makes the run
start one local model server (``local_model``) shared by all those graders,
before the first prompt, and stop it after the last result, whatever ends the
run.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import msgspec

from waza.protocol.errors import ConfigError
from waza.protocol.records import Grade, GraderRequest
from waza.runner.grading.grader_runners import GraderRunner
from waza.runner.grading.grader_specs import GraderSpec

LLM_GRADERS = frozenset({"llm", "llm_comparison", "prompt"})
#: Config keys that say where the judge is; choosing one on the command line drops all of them.
DESTINATION_KEYS = frozenset({"judge", "base_url", "command", "model_path"})
#: Small local models can repeat themselves until max_tokens; the grammar stops their reasoning here.
LOCAL_REASONING_CHARS = 400


class JudgeChoice(msgspec.Struct):
    """The judge options of one command line."""

    judge: str | None = None
    base_url: str | None = None
    model: str | None = None
    api_key_env: str | None = None
    command: str | None = None
    model_path: Path | None = None
    #: False with --no-cache: every judge call is made, none is kept.
    cache: bool = True

    def config(self) -> dict[str, Any]:
        """The grader-config keys these options set (``--judge`` is ``judge``, and so on)."""
        values = {
            "judge": self.judge,
            "base_url": self.base_url,
            "model": self.model,
            "api_key_env": self.api_key_env,
            "command": self.command,
            "model_path": str(self.model_path) if self.model_path else None,
            "cache": None if self.cache else False,
        }
        return {k: v for k, v in values.items() if v is not None}

    def check(self) -> None:
        """Refuse choices that contradict each other, in the ``Judge`` spec's terms."""
        if self.judge == "local" and (self.base_url or self.command):
            raise ConfigError("Judge.local starts its own server; drop Judge.base_url / Judge.command")
        if self.base_url and self.command:
            raise ConfigError("give Judge.base_url or Judge.command, not both")
        if self.model_path and self.judge != "local":
            raise ConfigError("Judge.model_path is for Judge.local", field="Judge.model_path")


def is_llm(spec: GraderSpec) -> bool:
    return spec.kind == "builtin" and spec.target in LLM_GRADERS


def apply(specs: list[GraderSpec], choice: JudgeChoice | None) -> None:
    """Merge the command line's judge options into the LLM graders' configs (before they are checked)."""
    if choice is None:
        return
    choice.check()
    given = choice.config()
    if not given:
        return
    llm_specs = [s for s in specs if is_llm(s)]
    if not llm_specs:
        fields = ", ".join("Judge." + ("local" if k == "judge" else k) for k in given)
        raise ConfigError(f"{fields} does nothing without an LLM grader (builtin:llm, builtin:llm_comparison, builtin:prompt)")
    # A judge chosen on the command line replaces the one a config chose, not just some of its keys.
    replaced = DESTINATION_KEYS if DESTINATION_KEYS & set(given) else frozenset()
    for spec in llm_specs:
        spec.config = {**{k: v for k, v in spec.config.items() if k not in replaced}, **given}


def pass_api_key(runner: GraderRunner) -> None:
    """Isolated graders run with secrets scrubbed from their env; give back the one key the judge needs."""
    name = runner.spec.config.get("api_key_env")
    keep = getattr(runner, "keep_env", None)
    if not name or keep is None:
        return
    if name not in os.environ:
        raise ConfigError(f"environment variable {name} (the judge's api_key_env) is not set")
    keep.append(name)


class LocalJudgeRunner(GraderRunner):
    """An LLM grader whose judge is the run's local model server: entering it starts (or shares) the server."""

    def __init__(self, inner: GraderRunner, server: Any) -> None:
        super().__init__(inner.spec)
        self.inner = inner
        self.server = server
        self._use: Any = None

    async def __aenter__(self) -> LocalJudgeRunner:
        from waza.runner.local_model.server import MODEL_NAME, identity

        self._use = self.server.use()
        url = await self._use.__aenter__()
        config = {k: v for k, v in self.spec.config.items() if k not in ("judge", "model_path")}
        config.setdefault("reasoning_max_chars", LOCAL_REASONING_CHARS)
        # The server's port is new each run; the cache knows the judge by the model it serves.
        self.spec.config = {**config, "base_url": url, "model": MODEL_NAME, "cache_as": identity(self.server.model)}
        try:
            await self.inner.__aenter__()
        except BaseException as exc:
            await self._use.__aexit__(type(exc), exc, exc.__traceback__)
            raise
        return self

    async def __aexit__(self, *exc: Any) -> None:
        try:
            await self.inner.__aexit__(*exc)
        finally:
            await self._use.__aexit__(*exc)

    async def grade(self, request: GraderRequest) -> Grade:
        return await self.inner.grade(request)


def finish(runner: GraderRunner) -> GraderRunner:
    """An LLM grader's runner made ready: its API key passed through, the local judge wrapped around it.

    Local judges with the same model share one server (``local_model.shared``);
    the model file is checked here, before anything runs.
    """
    pass_api_key(runner)
    if not (is_llm(runner.spec) and runner.spec.config.get("judge") == "local"):
        return runner
    from waza.runner.local_model.server import resolve_model, shared

    path = runner.spec.config.get("model_path")
    return LocalJudgeRunner(runner, shared(resolve_model(Path(path) if path else None)))
