"""Graders of what the agent did: tool_calls, behavior, action_sequence, skill_invocation, tool_constraint.

Trajectories are shaped as our adapters write them (tool_call steps with name,
title, kind, input; skill events as ``event`` steps). Each case runs
in-process and as a process.
"""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from .conftest import compat_path
from .graders_support import grade_both, step, tools

# --- action_sequence: the reference's worked examples, then edge cases --------------------------------
# (mode, expected, actual, pass, precision, recall, f1)
ACTION_SEQUENCE: list[tuple[str, list[str], list[str], bool, float, float, float]] = [
    ("exact_match", ["bash", "edit"], ["bash", "edit"], True, 1, 1, 1),
    ("exact_match", ["bash", "edit"], ["edit", "bash"], False, 1, 1, 1),
    ("exact_match", ["bash", "edit"], ["bash", "edit", "view"], False, 2 / 3, 1, 0.8),
    ("in_order_match", ["bash", "edit"], ["bash", "view", "edit", "report_progress"], True, 0.5, 1, 2 / 3),
    ("in_order_match", ["bash", "edit"], ["edit", "view", "bash"], False, 2 / 3, 1, 0.8),
    ("any_order_match", ["edit", "bash"], ["bash", "view", "edit"], True, 2 / 3, 1, 0.8),
    # frequency must match: two bash expected, one seen
    ("any_order_match", ["bash", "bash"], ["bash", "view"], False, 0.5, 0.5, 0.5),
    ("in_order_match", ["view", "edit", "view"], ["view", "edit", "bash", "view"], True, 0.75, 1, 6 / 7),
    # no tool calls at all
    ("in_order_match", ["bash"], [], False, 0, 0, 0),
]


@pytest.mark.parametrize("mode,expected,actual,passed,precision,recall,f1", ACTION_SEQUENCE)
def test_action_sequence(mode, expected, actual, passed, precision, recall, f1):
    grade = grade_both("action_sequence", {"matching_mode": mode, "expected_actions": expected}, trajectory=tools(*actual))
    assert grade.passed is passed
    assert grade.score == pytest.approx(f1, abs=1e-6)
    assert grade.details["precision"] == pytest.approx(precision, abs=1e-6)
    assert grade.details["recall"] == pytest.approx(recall, abs=1e-6)
    assert grade.details["actual"] == actual


def test_action_sequence_ignores_steps_that_are_not_tool_calls():
    trajectory = [{"type": "message", "stepId": "m", "timestamp": 0, "role": "agent", "content": "hi"}, *tools("bash")]
    assert grade_both(
        "action_sequence", {"expected_actions": ["bash"], "matching_mode": "exact_match"}, trajectory=trajectory
    ).passed


# --- skill_invocation --------------------------------------------------------------------------------
def skill_events(*names: str) -> list[dict[str, Any]]:
    return [
        {
            "type": "event",
            "stepId": f"e{i}",
            "timestamp": i,
            "name": "skill.invoked",
            "extra": {"kind": "skill.invoked", "data": {"name": n, "path": f"/skills/{n}/SKILL.md"}},
        }
        for i, n in enumerate(names, 1)
    ]


def skill_calls(*names: str) -> list[dict[str, Any]]:
    return [step("skill", i, input={"skill": n}) for i, n in enumerate(names, 1)]


P, D, M, V = "azure-prepare", "azure-deploy", "azure-monitor", "azure-validate"
# (mode, required, invoked, allow_extra, pass, score)
SKILLS: list[tuple[str, list[str], list[str], bool, bool, float]] = [
    # the reference's three examples
    ("exact_match", [P, D], [P, D], True, True, 1.0),
    ("in_order", [P, D], [P, V, D], True, True, 0.8),
    ("any_order", [D, P], [P, V, D], True, True, 0.8),
    ("exact_match", [P, D], [D, P], True, False, 1.0),
    ("in_order", [P, D], [D, P], True, False, 1.0),
    ("any_order", [P, D, M], [P, D], True, False, 0.8),
    # allow_extra false: the original passes and scales F1 by 1 - 0.6 x extra/invoked
    ("in_order", [P, D], [P, V, D], False, True, 0.8 * (1 - 0.6 / 3)),
    ("any_order", [P, D], [D, P], False, True, 1.0),
    # frequency: required twice, invoked once
    ("any_order", [P, P], [P], True, False, 2 / 3),
]


@pytest.mark.parametrize("mode,required,invoked,allow_extra,passed,score", SKILLS)
@pytest.mark.parametrize("source", [skill_events, skill_calls])
def test_skill_invocation(source, mode, required, invoked, allow_extra, passed, score):
    config = {"mode": mode, "required_skills": required, "allow_extra": allow_extra}
    grade = grade_both("skill_invocation", config, trajectory=source(*invoked))
    assert (grade.passed, grade.score) == (passed, pytest.approx(score, abs=1e-6))
    assert grade.details["invoked"] == invoked


def test_skill_events_win_over_skill_tool_calls_so_one_invocation_counts_once():
    trajectory = [*skill_calls("example"), *skill_events("example")]
    grade = grade_both("skill_invocation", {"mode": "exact_match", "required_skills": ["example"]}, trajectory=trajectory)
    assert grade.passed and grade.details["invoked"] == ["example"] and grade.details["source"] == "skill events"


def test_skills_from_a_recorded_copilot_session():
    """The compat transcript, reduced the way an adapter would: tool calls plus the raw skill.invoked event."""
    raw = compat_path("waza-transcripts/copilot_events_using_skill.json").read_text()
    decoder, events, pos = __import__("json").JSONDecoder(), [], 0
    while pos < len(raw):
        value, pos = decoder.raw_decode(raw, pos)
        events.append(value)
        while pos < len(raw) and raw[pos].isspace():
            pos += 1
    trajectory = []
    for i, ev in enumerate(events):
        if ev["type"] == "tool.execution_start":
            trajectory.append(step(ev["data"]["toolName"], i, input=ev["data"]["arguments"]))
        elif ev["type"] == "skill.invoked":
            trajectory.append(
                {
                    "type": "event",
                    "stepId": f"e{i}",
                    "timestamp": i,
                    "name": ev["type"],
                    "extra": {"kind": ev["type"], "data": orjson.loads(orjson.dumps(ev["data"]))},
                }
            )
    grade = grade_both("skill_invocation", {"mode": "exact_match", "required_skills": ["example"]}, trajectory=trajectory)
    assert grade.passed and grade.score == 1.0


# --- behavior ----------------------------------------------------------------------------------------
USAGE = {"inputTokens": 1000, "outputTokens": 200}
# (config, tool names, usage, timing, pass, score, text in reasoning)
BEHAVIOR: list[tuple[dict[str, Any], list[str], Any, Any, bool, float, str]] = [
    (
        {
            "max_tool_calls": 10,
            "max_tokens": 5000,
            "max_duration_ms": 300000,
            "required_tools": ["view"],
            "forbidden_tools": ["bash", "edit"],
        },
        ["view", "view"],
        USAGE,
        {"start": 0, "end": 900, "total": 900},
        True,
        1.0,
        "6/6",
    ),
    # 0 means "not set" (the original's behavior_grader_test zero-limit cases)
    ({"max_tool_calls": 0, "required_tools": ["view"]}, ["view", "bash"], None, None, True, 1.0, "1/1"),
    ({"max_tool_calls": 1}, ["view", "view"], None, None, False, 0.0, "2 tool calls"),
    ({"max_tokens": 1100}, [], USAGE, None, False, 0.0, "1200 tokens"),
    ({"max_tokens": 5000}, [], {"totalTokens": 4000, "inputTokens": 9999}, None, True, 1.0, ""),
    # no usage reported: the original skips the token limit (counted as passed)
    ({"max_tokens": 5000}, [], None, None, True, 1.0, ""),
    ({"max_tokens": 5000, "required_tools": ["view"]}, ["view"], None, None, True, 1.0, ""),
    ({"max_duration_ms": 1000}, [], None, {"start": 0, "end": 2500, "total": 2500}, False, 0.0, "2500 ms"),
    # exact names: "Bash" is not "bash"
    ({"forbidden_tools": ["bash"]}, ["Bash"], None, None, True, 1.0, ""),
    ({"required_tools": ["view", "edit"]}, ["view"], None, None, False, 0.5, "required tool 'edit': never called"),
]


@pytest.mark.parametrize("config,names,usage,timing,passed,score,reason", BEHAVIOR)
def test_behavior(config, names, usage, timing, passed, score, reason):
    grade = grade_both("behavior", config, trajectory=tools(*names), usage=usage, timing=timing)
    assert (grade.passed, grade.score) == (passed, pytest.approx(score))
    assert reason in grade.reasoning


# --- tool_calls --------------------------------------------------------------------------------------
SHELL = [
    step("bash", 1, input={"command": "azd up --no-prompt"}),
    step("bash", 2, input={"command": "git commit -m 'ship it'"}),
    step("Read README.md", 3, title="Read README.md", kind="read", input={"path": "README.md"}),
]
# (config, pass, score)
TOOL_CALLS: list[tuple[dict[str, Any], bool, float]] = [
    (
        {
            "required": [{"pattern": "azd up"}, {"pattern": "git commit"}],
            "forbidden": [{"pattern": "rm -rf"}, {"pattern": "sudo"}],
            "max_calls": 20,
        },
        True,
        1.0,
    ),
    ({"forbidden": ["git commit"]}, False, 0.0),
    ({"max_calls": 2}, False, 0.0),
    ({"max_calls": 3}, True, 1.0),
    # the ACP kind and title are searchable too, and matching ignores case
    ({"required": ["^read\\b", "readme"]}, True, 1.0),
    ({"required": ["deploy"], "forbidden": ["AZD"]}, False, 0.0),
]


@pytest.mark.parametrize("config,passed,score", TOOL_CALLS)
def test_tool_calls(config, passed, score):
    grade = grade_both("tool_calls", config, trajectory=SHELL)
    assert (grade.passed, grade.score) == (passed, pytest.approx(score))


# --- tool_constraint ---------------------------------------------------------------------------------
WORK = [
    step("edit", 1, kind="edit", input={"file_path": "src/app.py"}),
    step("bash", 2, kind="execute", input={"command": "python -m pytest -q"}),
    step("skill", 3, input={"skill": "azure-deploy"}),
    step("Write tests/test_app.py", 4, kind="edit", locations=[{"path": "tests/test_app.py"}]),
]
# (config, pass, score)
TOOL_CONSTRAINT: list[tuple[dict[str, Any], bool, float]] = [
    ({"expect_tools": [{"tool": "bash", "command_pattern": "pytest"}]}, True, 1.0),
    ({"expect_tools": [{"tool": "bash", "command_pattern": "npm test"}]}, False, 0.0),
    # the kind counts as the tool's name; locations count as paths
    ({"reject_tools": [{"tool": "edit", "path_pattern": "^tests/"}]}, False, 0.0),
    ({"reject_tools": [{"tool": "edit|write", "path_pattern": "\\.env$"}]}, True, 1.0),
    (
        {
            "expect_tools": [{"tool": "skill", "skill_pattern": "^azure-"}],
            "reject_tools": [{"tool": "execute", "command_pattern": "rm -rf"}],
        },
        True,
        1.0,
    ),
    ({"expect_tools": [{"tool": "execute"}, {"tool": "fetch"}]}, False, 0.5),
    # a pattern on a field the call lacks does not match
    ({"expect_tools": [{"tool": "skill", "command_pattern": "."}]}, False, 0.0),
]


@pytest.mark.parametrize("config,passed,score", TOOL_CONSTRAINT)
def test_tool_constraint(config, passed, score):
    grade = grade_both("tool_constraint", config, trajectory=WORK)
    assert (grade.passed, grade.score) == (passed, pytest.approx(score))
