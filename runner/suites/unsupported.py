"""Keys of the original waza's suites that waza accepts but does not act on.

A suite written for the original must pass ``waza check`` and run, so its
schemas' keys are accepted; those waza has no equivalent for are never
silently dropped: each becomes one notice, ``file:line: key: not supported by
waza, ignored (why)``, printed by ``waza check`` and at the start of
``waza run``.
"""

from __future__ import annotations

from typing import Any

from waza.runner.suites.located import Located, PathKey, dotted

__all__ = ["config_notice", "grader_notice", "suite_notices", "task_notices"]

#: eval.yaml top-level keys, and why waza does not act on them.
SUITE_KEYS = {
    "hooks": "run the commands yourself around waza run",
    "inputs": "write the values into the task prompts",
    "baseline": "compare runs with waza compare",
}
#: eval.yaml config keys, and why.
CONFIG_KEYS = {
    "max_attempts": "a failed trial is not retried; use --trials for more trials",
    "group_by": "group results with waza balance / waza report",
    "skill_directories": "give the agent its skills through its own options",
    "required_skills": "skills are not checked before the run",
    "mcp_servers": "configure MCP servers in the agent (acp adapters pass theirs)",
    "first_event_timeout_seconds": "a Copilot SDK session watchdog; timeout_seconds bounds the whole trial",
    "reasoning_effort": "a Copilot SDK session setting; set it in the agent's own options",
    "judge_reasoning_effort": "a Copilot SDK judge setting; waza's judges take their model's options",
    "inject_skill_body": "the original's Copilot system prompt; waza's adapters run the agent with its own prompt",
    "trigger_skill_routing": "the original's Copilot system prompt; waza's adapters run the agent with its own prompt",
    "disabled_skills": "the agent's skills are configured in the agent, not by waza",
}
#: Task expected.* keys, and why.
EXPECTED_KEYS = {
    "tool_calls": "use a tool_calls or tool_constraint grader",
    "should_trigger": "use trigger_tests.yaml",
}
#: Task keys of the original waza's 1.x format that waza checks but does not act on, and why.
TASK_KEYS_NOT_APPLIED = {
    "first_event_timeout_seconds": "a Copilot SDK session watchdog; timeout_seconds bounds the whole trial",
    "skill_directories": "give the agent its skills through its own options",
}
#: Task inputs.* keys waza checks but does not act on, and why.
INPUT_KEYS = {
    "environment": "set the variables in the agent's environment",
}
#: Task keys waza reads (anything else in a task file is the original's open schema).
TASK_KEYS = frozenset(
    {
        "id",
        "name",
        "description",
        "enabled",
        "tags",
        "timeout_seconds",
        "context_dir",
        "weight",
        "golden",
        "inputs",
        "expected",
        "graders",
        "mock",
        "instruction_files",
        "command_mocks",
        "checkpoints",
        *TASK_KEYS_NOT_APPLIED,
    }
)


def _notice(doc: Located, path: PathKey, why: str) -> str:
    return f"{doc.source}:{doc.line(path)}: {dotted(path)}: not supported by waza, ignored ({why})"


def suite_notices(doc: Located) -> list[str]:
    raw: dict[str, Any] = doc.value
    # inputs fill the prompts of CSV rows (tasks_from: FILE.csv); only then are they used.
    used = {"inputs"} if str(raw.get("tasks_from", "")).lower().endswith(".csv") else set()
    out = [_notice(doc, (key,), why) for key, why in SUITE_KEYS.items() if key in raw and key not in used]
    config = raw.get("config") or {}
    out += [_notice(doc, ("config", key), why) for key, why in CONFIG_KEYS.items() if key in config]
    return out


def task_notices(doc: Located) -> list[str]:
    raw: dict[str, Any] = doc.value
    out = [_notice(doc, (key,), "not a key of waza's task files") for key in raw if key not in TASK_KEYS]
    out += [_notice(doc, (key,), why) for key, why in TASK_KEYS_NOT_APPLIED.items() if key in raw]
    inputs = raw.get("inputs") or {}
    out += [_notice(doc, ("inputs", key), why) for key, why in INPUT_KEYS.items() if key in inputs]
    expected = raw.get("expected") or {}
    out += [_notice(doc, ("expected", key), why) for key, why in EXPECTED_KEYS.items() if key in expected]
    if "max_iterations" in (expected.get("behavior") or {}):
        out.append(_notice(doc, ("expected", "behavior", "max_iterations"), "use max_tool_calls"))
    for i, outcome in enumerate(expected.get("outcomes") or []):
        if outcome.get("type") != "task_completed":
            out.append(_notice(doc, ("expected", "outcomes", i, "type"), "only task_completed is checked"))
    return out


def config_notice(doc: Located, path: PathKey, why: str) -> str:
    return _notice(doc, path, why)


def grader_notice(doc: Located, where: PathKey, key: str, kind: str) -> str:
    return _notice(doc, (*where, key), f"the {kind} grader has no {key!r}")
