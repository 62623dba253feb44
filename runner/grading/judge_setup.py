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
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import msgspec

from waza.protocol.errors import ConfigError
from waza.protocol.records import Grade, GraderRequest
from waza.runner.grading.grader_runners import GraderRunner
from waza.runner.grading.grader_specs import Builtin, GraderSpecT

LLM_GRADERS = frozenset({"llm", "llm_comparison", "prompt"})
#: Config keys that say where the judge is; choosing one on the command line drops all of them.
DESTINATION_KEYS = frozenset({"judge", "base_url", "command", "model_path"})
#: Small local models can repeat themselves until max_tokens; the grammar stops their reasoning here.
LOCAL_REASONING_CHARS = 400


def is_llm(spec: GraderSpecT) -> bool:
    """A built-in LLM grader (named canonically, as parsed and resolved specs are; a ``Judge`` is one once resolved)."""
    return isinstance(spec, Builtin) and spec.grader in LLM_GRADERS


def merged_config(config: Mapping[str, Any], given: Mapping[str, Any]) -> dict[str, Any]:
    """An LLM grader's config with a judge's choice merged in: the run-time choice overrides what the config says,
    and a judge chosen replaces the one the config chose, not just some of its keys."""
    replaced = DESTINATION_KEYS if DESTINATION_KEYS & set(given) else frozenset()
    return {**{k: v for k, v in config.items() if k not in replaced}, **given}


def check_used(specs: Sequence[GraderSpecT], given: Mapping[str, Any], *, others: bool = False) -> None:
    """Refuse a judge's choice that no LLM grader of ``specs`` would use (``others``: something besides
    graders uses the judge, a suite's responder)."""
    if given and not others and not any(is_llm(s) for s in specs):
        fields = ", ".join("Judge." + ("local" if k == "judge" else k) for k in given)
        raise ConfigError(f"{fields} does nothing without an LLM grader (builtin:llm, builtin:llm_comparison, builtin:prompt)")


def apply(specs: list[GraderSpecT], given: Mapping[str, Any], *, others: bool = False) -> list[GraderSpecT]:
    """``specs`` with a ``Judge``'s choice (its grader-config keys, ``Judge.judge_config``) merged into the LLM
    graders' configs (before they are checked); ``others``: something besides graders uses the judge (a
    suite's responder), so none is needed."""
    check_used(specs, given, others=others)
    return [msgspec.structs.replace(s, config=merged_config(s.config, given)) if is_llm(s) else s for s in specs]


def pass_api_key(runner: GraderRunner) -> None:
    """Isolated graders run with secrets scrubbed from their env; give back the one key the judge needs."""
    name = runner.config.get("api_key_env")
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
        config = {k: v for k, v in self.inner.config.items() if k not in ("judge", "model_path")}
        config.setdefault("reasoning_max_chars", LOCAL_REASONING_CHARS)
        # The server's port is new each run; the cache knows the judge by the model it serves.
        self.config = self.inner.config = {
            **config,
            "base_url": url,
            "model": MODEL_NAME,
            "cache_as": identity(self.server.model),
        }
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
    if not (is_llm(runner.spec) and runner.config.get("judge") == "local"):
        return runner
    from waza.runner.local_model.server import resolve_model, shared

    path = runner.config.get("model_path")
    return LocalJudgeRunner(runner, shared(resolve_model(Path(path) if path else None)))
