"""The original waza's current tool graders: tool_calls' exact names, bounds and ``expect`` with argument
matchers; tool_constraint's ``args`` and ``allow_only``. Each case runs in-process and as a process."""

from __future__ import annotations

from typing import Any

import pytest

from waza.protocol.errors import ConfigError

from .graders_support import grade_both, in_process, step

SEARCH = step("mcp_search_docs", 1, input={"query": "auth tokens", "limit": 5, "filters": {"lang": "py"}})
BASH = step("bash", 2, input={"command": "az webapp list --output json"})
EDIT = step("edit", 3, input={"path": "src/app.py", "dry": True})
CALLS = [SEARCH, BASH, EDIT]

# (args, pass): every matcher kind, passing and failing, all on the search call
MATCHERS: list[tuple[dict[str, Any], bool]] = [
    ({"query": {"equals": "auth tokens"}}, True),
    ({"query": {"equals": "auth"}}, False),
    ({"limit": {"equals": 5.0}}, True),  # JSON numbers: 5 == 5.0
    ({"filters": {"equals": {"lang": "py"}}}, True),
    ({"query": {"regex": "^auth"}}, True),
    ({"query": {"regex": "^AUTH"}}, False),  # argument regexes are case-sensitive, as the original's
    ({"filters": {"regex": '"lang":"py"'}}, True),  # a non-string is matched as compact JSON
    ({"query": {"contains": "tok"}}, True),
    ({"query": {"contains": "session"}}, False),
    ({"limit": {"range": {"gte": 1, "lte": 5}}}, True),
    ({"limit": {"range": {"gt": 5}}}, False),
    ({"limit": {"range": {"lt": 5}}}, False),
    ({"query": {"range": {"gte": 0}}}, False),  # not a number
    ({"filters": {"json_schema": {"type": "object", "required": ["lang"]}}}, True),
    ({"limit": {"json_schema": {"type": "string"}}}, False),
    ({"missing": {"contains": "x"}}, False),  # an argument the call lacks fails its matcher
    ({"query": {"contains": "auth"}, "limit": {"range": {"gte": 1}}}, True),
]


@pytest.mark.parametrize("args,passed", MATCHERS)
def test_tool_calls_expect_argument_matchers(args: dict[str, Any], passed: bool) -> None:
    grade = grade_both("tool_calls", {"expect": [{"tool": "search", "args": args}]}, trajectory=CALLS)
    assert grade.passed is passed, grade.reasoning


def test_all_matchers_of_one_expectation_must_hold_on_the_same_call() -> None:
    two = [step("bash", 1, input={"command": "git status"}), step("bash", 2, input={"command": "ls", "cwd": "/repo"})]
    expect = [{"tool": "bash", "args": {"command": {"contains": "git"}, "cwd": {"equals": "/repo"}}}]
    assert not grade_both("tool_calls", {"expect": expect}, trajectory=two).passed
    expect = [{"tool": "BASH", "args": {"command": {"contains": "ls"}, "cwd": {"equals": "/repo"}}}]  # name: case-insensitive
    assert grade_both("tool_calls", {"expect": expect}, trajectory=two).passed


# (config, pass, score): the original's exact-name keys and bounds, one check each
TOOL_CALLS: list[tuple[dict[str, Any], bool, float]] = [
    ({"required_tools": ["bash", "edit"]}, True, 1.0),
    ({"required_tools": ["bas"]}, False, 0.0),  # exact names, not patterns
    ({"forbidden_tools": ["view"]}, True, 1.0),
    ({"forbidden_tools": ["bash", "view"]}, False, 0.5),
    ({"min_calls": 3, "max_calls": 3}, True, 1.0),
    ({"min_calls": 4}, False, 0.0),
    ({"max_calls": 2, "required_tools": ["edit"]}, False, 0.5),
    ({"expect": [{"tool": "^mcp_"}, {"tool": "view"}]}, False, 0.5),
    ({"required": ["az webapp"], "required_tools": ["bash"]}, True, 1.0),  # the older pattern keys still work
]


@pytest.mark.parametrize("config,passed,score", TOOL_CALLS)
def test_tool_calls_original_keys(config: dict[str, Any], passed: bool, score: float) -> None:
    grade = grade_both("tool_calls", config, trajectory=CALLS)
    assert (grade.passed, grade.score) == (passed, pytest.approx(score))


@pytest.mark.parametrize(
    "config,text",
    [
        ({"min_calls": 3, "max_calls": 1}, "min_calls"),
        ({"expect": [{"tool": "x", "args": {"a": {"regex": "("}}}]}, "expect[0].args.a.regex"),
        ({"expect": [{"tool": "x", "args": {"a": {"range": {}}}}]}, ""),
        ({"expect": [{"tool": "x", "args": {"a": {"equals": 1, "contains": "1"}}}]}, ""),
        ({"expect": [{"tool": "x", "args": {"a": {"like": "1"}}}]}, ""),
    ],
)
def test_bad_matchers_are_config_errors(config: dict[str, Any], text: str) -> None:
    from waza.protocol.records import GraderRequest

    with pytest.raises(ConfigError) as caught:
        in_process("tool_calls", config, GraderRequest())
    assert text in str(caught.value)


# (config, pass, score)
CONSTRAINTS: list[tuple[dict[str, Any], bool, float]] = [
    ({"expect_tools": [{"tool": "bash", "args": {"command": {"regex": "^az webapp"}}}]}, True, 1.0),
    ({"expect_tools": [{"tool": "bash", "args": {"command": {"contains": "rm"}}}]}, False, 0.0),
    ({"reject_tools": [{"tool": "edit", "args": {"dry": {"equals": False}}}]}, True, 1.0),
    ({"allow_only": [{"tool": "bash"}, {"tool": "EDIT"}, {"tool": "mcp_search_docs"}]}, True, 1.0),
    ({"allow_only": [{"tool": "bas"}, {"tool": "edit"}, {"tool": "mcp_search_docs"}]}, False, 0.0),  # exact, not a regex
    ({"allow_only": [{"tool": "bash"}, {"tool": "edit", "path_pattern": "^tests/"}, {"tool": "mcp_search_docs"}]}, False, 0.0),
    ({"allow_only": []}, False, 0.0),  # an empty allow-list allows nothing
    (
        {"allow_only": [{"tool": "bash"}, {"tool": "edit"}, {"tool": "mcp_search_docs"}], "reject_tools": [{"tool": "bash"}]},
        False,
        0.5,
    ),
]


@pytest.mark.parametrize("config,passed,score", CONSTRAINTS)
def test_tool_constraint_args_and_allow_only(config: dict[str, Any], passed: bool, score: float) -> None:
    grade = grade_both("tool_constraint", config, trajectory=CALLS)
    assert (grade.passed, grade.score) == (passed, pytest.approx(score)), grade.reasoning


def test_an_empty_allow_list_passes_when_no_tool_is_called() -> None:
    assert grade_both("tool_constraint", {"allow_only": []}, trajectory=[]).passed


# --- skill_invocation: forbidden skills ---------------------------------------------------------------
def skill_events(*names: str) -> list[dict[str, Any]]:
    return [
        {
            "type": "event",
            "stepId": f"e{i}",
            "timestamp": i,
            "name": "skill.invoked",
            "extra": {"kind": "skill.invoked", "data": {"name": n}},
        }
        for i, n in enumerate(names, 1)
    ]


# (config, invoked, pass, score)
FORBIDDEN: list[tuple[dict[str, Any], list[str], bool, float]] = [
    ({"forbidden_skills": ["azure-delete"]}, ["azure-prepare"], True, 1.0),
    ({"forbidden_skills": ["azure-delete", "azure-nuke"]}, ["azure-delete"], False, 0.5),
    ({"forbidden_skills": ["azure-delete"]}, [], True, 1.0),
    (
        {"mode": "in_order", "required_skills": ["azure-prepare"], "forbidden_skills": ["azure-delete"]},
        ["azure-prepare"],
        True,
        1.0,
    ),
    (
        {"mode": "in_order", "required_skills": ["azure-prepare"], "forbidden_skills": ["azure-delete"]},
        ["azure-prepare", "azure-delete"],
        False,
        0.0,
    ),
]


@pytest.mark.parametrize("config,invoked,passed,score", FORBIDDEN)
def test_skill_invocation_forbidden_skills(config: dict[str, Any], invoked: list[str], passed: bool, score: float) -> None:
    grade = grade_both("skill_invocation", config, trajectory=skill_events(*invoked))
    assert (grade.passed, grade.score) == (passed, pytest.approx(score)), grade.reasoning


# --- json_schema: extract_json ------------------------------------------------------------------------
SCHEMA = {"type": "object", "required": ["name"]}
# (output, pass, reason fragment)
EXTRACT: list[tuple[str, bool, str]] = [
    ('{"name": "waza"}', True, ""),
    ('Here it is: {"name": "waza"} as asked.', True, ""),
    ('Result:\n```json\n{"name": "waza"}\n```\nAlso {"other": 1} in prose.', True, ""),  # the fenced block wins
    ('First {"name": "a"} then {"name": "b"}.', False, "2 JSON values"),
    ("No JSON here.", False, "no JSON object"),
    ('Here: {"title": "waza"}', False, "name"),
    ("A list [1, 2] of things", False, "not of type"),  # an array is a JSON value too
]


@pytest.mark.parametrize("output,passed,why", EXTRACT)
def test_json_schema_extract_json(output: str, passed: bool, why: str) -> None:
    grade = grade_both("json_schema", {"schema": SCHEMA, "extract_json": True}, output=output)
    assert grade.passed is passed, grade.reasoning
    assert why in (grade.reasoning or "")


# --- trigger: the original's keyword heuristic over SKILL.md ------------------------------------------
SKILL_MD = """---
name: azure-deploy
description: "Deploys web apps to Azure App Service. USE FOR: deploy my app to azure, publish a web app. DO NOT USE FOR: billing questions."
---
# Azure deploy

Build the container, push it to the registry and roll out the web app.
"""


@pytest.mark.parametrize(
    "prompt,mode,passed,score",
    [
        ("Please deploy my app to Azure today", "positive", True, 1.0),  # a trigger phrase, whole
        ("publish the web app", "positive", True, 1.0),  # every word of 'publish a web app'
        ("What is the weather in Paris?", "negative", True, 0.0),
        ("What is the weather in Paris?", "positive", False, 0.0),
        ("Explain my billing questions", "negative", True, 0.0),  # DO NOT USE FOR words are not skill words
        ("push the container", "positive", True, 1.0),  # body words count
    ],
)
def test_trigger_heuristic(tmp_path, prompt: str, mode: str, passed: bool, score: float) -> None:
    (tmp_path / "SKILL.md").write_text(SKILL_MD)
    grade = grade_both("trigger", {"skill_path": str(tmp_path), "mode": mode}, input=prompt, output="")
    assert (grade.passed, grade.score) == (passed, pytest.approx(score)), grade.reasoning


def test_trigger_needs_a_readable_skill_file(tmp_path) -> None:
    from waza.protocol.records import GraderRequest

    with pytest.raises(ConfigError, match="skill_path"):
        in_process("trigger", {"skill_path": str(tmp_path / "missing"), "mode": "positive"}, GraderRequest(input="x"))
