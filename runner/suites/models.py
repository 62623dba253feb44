"""A loaded suite as plain msgspec Structs: what the loader checked and the runner needs.

Nothing here parses or validates; ``loader`` builds these only from files that
passed their schema and every semantic check, so code that runs a suite can
trust them.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

import msgspec

from waza.runner.grading.grader_specs import Builtin

Confidence = Literal["high", "medium"]

#: Trigger prompt weight by confidence (the reference format's scale).
CONFIDENCE_WEIGHT: dict[str, float] = {"high": 1.0, "medium": 0.5}

#: Built-in grader types that judge how the agent behaved (behavior_quality averages their scores).
BEHAVIOUR_GRADERS = frozenset({"behavior", "action_sequence", "skill_invocation", "tool_calls", "tool_constraint"})


class SuiteConfig(msgspec.Struct):
    """A suite's ``config:`` block: defaults for the run that command-line options may override."""

    trials_per_task: int = 1
    timeout_seconds: float | None = None
    parallel: bool = False
    #: Trials at once when parallel: the suite's ``workers`` (or its older name ``max_workers``).
    max_workers: int = 4
    fail_fast: bool = False
    executor: str | None = None
    command: list[str] = msgspec.field(default_factory=list)
    model: str | None = None
    judge_model: str | None = None


class Metric(msgspec.Struct):
    """One entry of a suite's ``metrics:``: which measure, its weight in the overall score, its threshold."""

    name: str
    weight: float = 1.0
    threshold: float | None = None
    description: str = ""
    enabled: bool = True


class FixtureFile(msgspec.Struct):
    """One file a task's workspace starts with: copied from the fixture root, or inline content."""

    path: str
    content: str | None = None


class RepoCheckout(msgspec.Struct, frozen=True):
    """One entry of a task's ``inputs.repos``: a local repository checked out at ``commit`` into ``dest``."""

    source: Path
    dest: str
    commit: str


class Responder(msgspec.Struct):
    """A task's ``inputs.responder``: a model playing the user from ``instructions``."""

    instructions: str
    max_followups: int
    #: The model name asked for (``responder.model``); None: the judge's own (``--judge-model``).
    model: str | None = None
    #: Where the model is, in a judge's config keys (base_url, command, api_key_env, judge, model_path);
    #: filled from the run's judge options, empty until then.
    judge: dict[str, Any] = msgspec.field(default_factory=dict)


class SuiteGrader(Builtin, frozen=True, kw_only=True):
    """A suite's built-in grader: a ``Builtin`` whose name may be any string, as the original's format allows
    (the API's names are plain ones)."""

    @staticmethod
    def plain_name(name: str) -> bool:
        return bool(name)


class Checkpoint(msgspec.Struct):
    """One entry of a task's ``checkpoints``: graders run after user turn ``after_turn`` (from 1)."""

    after_turn: int
    graders: Sequence[Builtin]
    #: on_failure: stop: a failed checkpoint sends no later turn.
    stop: bool = False


class Task(msgspec.Struct):
    """One task file: the prompt, its starting workspace and the graders that judge the agent's attempt."""

    id: str
    name: str
    file: str
    prompt: str
    fixture_root: Path
    description: str = ""
    enabled: bool = True
    tags: list[str] = msgspec.field(default_factory=list)
    timeout: float | None = None
    weight: float = 1.0
    golden: bool = False
    files: list[FixtureFile] = msgspec.field(default_factory=list)
    context: dict[str, Any] | None = None
    graders: list[Builtin] = msgspec.field(default_factory=list)
    mock: list[Any] | None = None
    #: ``inputs.context.fixture``: a file or folder under ``fixture_root`` copied to the workspace root.
    fixture: str | None = None
    repos: list[RepoCheckout] = msgspec.field(default_factory=list)
    #: The task's own ``command_mocks`` (resolved), replacing the suite's; None: the suite's apply.
    command_mocks: list[dict[str, Any]] | None = None
    #: ``inputs.follow_up_prompts``: user turns after the prompt, in the same session.
    follow_ups: list[str] = msgspec.field(default_factory=list)
    responder: Responder | None = None
    checkpoints: list[Checkpoint] = msgspec.field(default_factory=list)
    #: ``inputs.workdir``: where in the workspace the agent starts (relative, checked).
    workdir: str | None = None

    def grader_type(self, name: str) -> str | None:
        """The built-in type of this task's grader ``name`` (None for a command-line grader)."""
        for spec in self.graders:
            if spec.name == name:
                return spec.grader
        return None


class TriggerPrompt(msgspec.Struct):
    """One trigger test: a prompt and whether the skill should be invoked for it."""

    prompt: str
    should_trigger: bool
    confidence: Confidence = "high"
    reason: str = ""
    mock: list[Any] | None = None

    @property
    def weight(self) -> float:
        return CONFIDENCE_WEIGHT[self.confidence]


class TriggerTests(msgspec.Struct):
    """A suite's trigger tests file: prompts that check when the skill is (and is not) invoked."""

    skill: str
    file: str
    prompts: list[TriggerPrompt]


class Suite(msgspec.Struct):
    """A loaded suite: its config, tasks, metrics and trigger tests, everything a run needs."""

    name: str
    file: Path
    config: SuiteConfig
    description: str = ""
    skill: str | None = None
    #: A 2.0 suite's workflow (the original's ``scenario``), recorded in each case's metadata.
    scenario: str | None = None
    version: str | None = None
    graders: list[Builtin] = msgspec.field(default_factory=list)
    metrics: list[Metric] = msgspec.field(default_factory=list)
    tasks: list[Task] = msgspec.field(default_factory=list)
    triggers: TriggerTests | None = None
    #: ``mcp_mocks`` as the mock server reads them (fixtures folders read in).
    mcp_mocks: list[dict[str, Any]] = msgspec.field(default_factory=list)
    #: ``command_mocks`` as the shims read them (fixture files read in).
    command_mocks: list[dict[str, Any]] = msgspec.field(default_factory=list)
    #: Keys of the original waza's format that waza accepts but does not act on, one line each.
    notices: list[str] = msgspec.field(default_factory=list)
