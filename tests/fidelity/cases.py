"""The original waza's own grader test cases, transcribed as data (config, input, expected verdict).

Each case names the Go test it comes from (microsoft/waza,
internal/graders/*_test.go); the behaviour is read from those tests, the
values are restated in our request shapes: the original's session
``ToolsUsed``/``ToolCalls`` become tool_call steps, its ``SkillInvocations``
skill.invoked events, its ``Usage`` our usage, its ``DurationMS`` our timing,
its workspace files a temporary directory. ``expect`` is the verdict: True /
False (pass or fail), or "config" where the original rejects the config before
grading. ``score`` is the exact score the original asserts, or None where it
asserts only a range (the verdict is then what is compared).

Cases that cannot be stated in our records are left out and counted in
``NOT_TRANSCRIBED`` with the reason (for example a nil session: our results
always carry a trajectory, possibly empty).
"""

from __future__ import annotations

from typing import Any

Case = dict[str, Any]

T = "text_grader_test.go"
A = "action_sequence_grader_test.go"
S = "skill_invocation_grader_test.go"
B = "behavior_grader_test.go"
C = "tool_constraint_grader_test.go"
F = "file_grader_test.go"
I = "inline_script_grader_test.go"


def text(src: str, config: dict[str, Any], output: str, expect: bool, score: float | None) -> Case:
    return {"src": f"{T}: {src}", "grader": "text", "config": config, "output": output, "expect": expect, "score": score}


def seq(src: str, mode: str | None, expected: list[str], used: list[str], expect: bool | str, score: float | None) -> Case:
    config: dict[str, Any] = {"expected_actions": expected}
    if mode is not None:
        config["matching_mode"] = mode
    return {"src": f"{A}: {src}", "grader": "action_sequence", "config": config, "tools": used, "expect": expect, "score": score}


def skill(src: str, config: dict[str, Any], invoked: list[str], expect: bool | str, score: float | None) -> Case:
    return {
        "src": f"{S}: {src}",
        "grader": "skill_invocation",
        "config": config,
        "skills": invoked,
        "expect": expect,
        "score": score,
    }


def behavior(
    src: str,
    config: dict[str, Any],
    expect: bool | str,
    score: float | None,
    *,
    tools: list[str] | None = None,
    tokens: int | None = None,
    duration: int | None = None,
) -> Case:
    return {
        "src": f"{B}: {src}",
        "grader": "behavior",
        "config": config,
        "tools": tools or [],
        "tokens": tokens,
        "duration": duration,
        "expect": expect,
        "score": score,
    }


def constraint(src: str, config: dict[str, Any], calls: list[Any], expect: bool | str, score: float | None) -> Case:
    """``calls``: tool names, or (name, command) pairs."""
    return {"src": f"{C}: {src}", "grader": "tool_constraint", "config": config, "calls": calls, "expect": expect, "score": score}


def file(src: str, config: dict[str, Any], files: dict[str, str], expect: bool | str, score: float | None) -> Case:
    return {"src": f"{F}: {src}", "grader": "file", "config": config, "files": files, "expect": expect, "score": score}


def code(src: str, assertions: list[str] | None, expect: bool | str, score: float | None, **request: Any) -> Case:
    """``request``: output, steps (trajectory steps), outcome, duration; ``assertions`` None = no key at all."""
    config: dict[str, Any] = {} if assertions is None else {"assertions": assertions}
    return {"src": f"{I}: {src}", "grader": "code", "config": config, "expect": expect, "score": score, **request}


#: TestWithRealContextPython's assertions after its first (``len(transcript) == N``, N the events its
#: collector keeps of the recording: tests/test_fidelity.py checks it on the recording itself).
REAL_CONTEXT = [
    "len(errors) == 0",
    "len(tool_calls) == 1",
    "outcome['hello'] == 'world'",
    "output == 'hello world'",
    "duration_ms < 102 and duration_ms > 100",
    "len(tool_calls[0]['result']['content']) > 0",
]

RF, WF = "read_file", "write_file"
P, D = "azure-prepare", "azure-deploy"

CASES: list[Case] = [
    # --- text -------------------------------------------------------------------------------------
    text("RegexMatch/all regex_match patterns match", {"regex_match": ["he.*", "world"]}, "hello world", True, 1.0),
    text("RegexMatch/regex_match pattern missing", {"regex_match": ["hello", "missing"]}, "hello world", False, 0.5),
    text("RegexMatch/invalid regex_match reports failure", {"regex_match": ["[invalid"]}, "anything", False, 0.0),
    text("RegexNotMatch/passes when pattern absent", {"regex_not_match": ["err.*", "fail"]}, "all good here", True, 1.0),
    text(
        "RegexNotMatch/fails when forbidden pattern found",
        {"regex_not_match": ["error", "warning"]},
        "found an error in output",
        False,
        0.5,
    ),
    text("RegexNotMatch/invalid regex_not_match reports failure", {"regex_not_match": ["[invalid"]}, "anything", False, 0.0),
    text("Contains/case-insensitive match passes", {"contains": ["hello", "WORLD"]}, "Hello World", True, 1.0),
    text("Contains/case-insensitive match fails when missing", {"contains": ["hello", "missing"]}, "Hello World", False, 0.5),
    text("NotContains/passes when forbidden substring absent", {"not_contains": ["error", "fail"]}, "all good here", True, 1.0),
    text("NotContains/fails case-insensitive", {"not_contains": ["ERROR"]}, "found an error here", False, 0.0),
    text("ContainsCS/case-sensitive match passes", {"contains_cs": ["Hello", "World"]}, "Hello World", True, 1.0),
    text("ContainsCS/fails on wrong case", {"contains_cs": ["hello"]}, "Hello World", False, 0.0),
    text("NotContainsCS/passes when case differs", {"not_contains_cs": ["ERROR"]}, "found an error here", True, 1.0),
    text("NotContainsCS/fails on exact match", {"not_contains_cs": ["ERROR"]}, "got an ERROR here", False, 0.0),
    text(
        "Combined/all six fields pass together",
        {
            "contains": ["hello"],
            "not_contains": ["error"],
            "contains_cs": ["Hello"],
            "not_contains_cs": ["ERROR"],
            "regex_match": ["He.*ld"],
            "regex_not_match": ["panic"],
        },
        "Hello World",
        True,
        1.0,
    ),
    text(
        "Combined/mixed failures across field types",
        {
            "contains": ["hello"],
            "not_contains": ["world"],
            "contains_cs": ["Missing"],
            "not_contains_cs": ["xyz"],
            "regex_match": ["func"],
            "regex_not_match": ["panic"],
        },
        "hello world func panic()",
        False,
        0.5,
    ),
    text("EdgeCases/no fields yields score 1 and passes", {}, "anything", True, 1.0),
    text("EdgeCases/empty output fails contains", {"contains": ["something"]}, "", False, 0.0),
    text("EdgeCases/result details", {"contains": ["a"], "regex_match": ["b"]}, "abc", True, 1.0),
    text("EdgeCases/duration is recorded", {"contains": ["ok"]}, "ok", True, 1.0),
    text("ViaCreate", {"contains": ["hello"], "regex_match": ["world"], "regex_not_match": ["bye"]}, "hello world", True, 1.0),
    # --- action_sequence ----------------------------------------------------------------------------
    seq("Constructor/nil expected_actions", "exact_match", [], [], "config", None),
    seq("Constructor/invalid mode", "invalid_mode", [RF], [], "config", None),
    seq("Constructor/missing mode", None, [RF], [RF], "config", None),
    seq("ExactMatch/identical", "exact_match", [RF, WF, "search"], [RF, WF, "search"], True, 1.0),
    seq("ExactMatch/extra action", "exact_match", [RF, WF], [RF, WF, "search"], False, 0.8),
    seq("ExactMatch/missing action", "exact_match", [RF, WF, "search"], [RF, WF], False, 0.8),
    seq("ExactMatch/wrong order", "exact_match", [RF, WF], [WF, RF], False, 1.0),
    seq("ExactMatch/empty actual", "exact_match", [RF], [], False, 0.0),
    seq("ExactMatch/single", "exact_match", [RF], [RF], True, 1.0),
    seq("InOrderMatch/identical", "in_order_match", [RF, WF, "search"], [RF, WF, "search"], True, 1.0),
    seq("InOrderMatch/extras interleaved", "in_order_match", [RF, WF], ["init", RF, "search", WF, "cleanup"], True, 4 / 7),
    seq("InOrderMatch/wrong order", "in_order_match", [RF, WF], [WF, RF], False, 1.0),
    seq("InOrderMatch/missing", "in_order_match", [RF, WF, "deploy"], [RF, WF], False, 0.8),
    seq("InOrderMatch/sparse", "in_order_match", [RF, "deploy"], ["init", RF, WF, "test", "deploy", "cleanup"], True, 0.5),
    seq("AnyOrderMatch/reordered", "any_order_match", [RF, WF, "search"], ["search", WF, RF], True, 1.0),
    seq("AnyOrderMatch/extras", "any_order_match", [RF, WF], ["init", WF, "search", RF, "cleanup"], True, 4 / 7),
    seq("AnyOrderMatch/missing", "any_order_match", [RF, WF, "deploy"], [RF, WF], False, 0.8),
    seq("AnyOrderMatch/frequency satisfied", "any_order_match", [RF, RF, WF], [WF, RF, RF], True, 1.0),
    seq("AnyOrderMatch/frequency short", "any_order_match", [RF, RF, WF], [WF, RF], False, 0.8),
    seq("ScoreCalculations/perfect", "exact_match", ["a", "b", "c"], ["a", "b", "c"], True, 1.0),
    seq("ScoreCalculations/partial", "any_order_match", ["a", "b", "c", "d"], ["a", "c"], False, 2 / 3),
    seq("ScoreCalculations/no overlap", "exact_match", ["a", "b"], ["x", "y"], False, 0.0),
    seq("ScoreCalculations/details", "any_order_match", ["a", "b"], ["a", "b"], True, 1.0),
    seq("EdgeCases/nil tools used", "exact_match", [RF], [], False, 0.0),
    seq("EdgeCases/duration", "exact_match", ["a"], ["a"], True, 1.0),
    seq("ViaCreate", "exact_match", [RF, WF], [RF, WF], True, 1.0),
    seq("ViaCreate/invalid mode", "invalid", ["a"], [], "config", None),
    # --- skill_invocation ---------------------------------------------------------------------------
    skill("Constructor/nil required_skills", {"mode": "exact_match", "required_skills": []}, [], "config", None),
    skill("Constructor/invalid mode", {"mode": "invalid_mode", "required_skills": ["skill1"]}, [], "config", None),
    skill("Constructor/missing mode", {"required_skills": ["skill1"]}, ["skill1"], "config", None),
    skill("ExactMatch/identical", {"mode": "exact_match", "required_skills": [P, D]}, [P, D], True, 1.0),
    skill("ExactMatch/extra", {"mode": "exact_match", "required_skills": [P, D]}, [P, D, "azure-monitor"], False, 0.8),
    skill("ExactMatch/missing", {"mode": "exact_match", "required_skills": [P, D]}, [P], False, 2 / 3),
    skill("ExactMatch/wrong order", {"mode": "exact_match", "required_skills": [P, D]}, [D, P], False, 1.0),
    skill("ExactMatch/none", {"mode": "exact_match", "required_skills": [P, D]}, [], False, 0.0),
    skill("InOrder/identical", {"mode": "in_order", "required_skills": [P, D]}, [P, D], True, 1.0),
    skill("InOrder/extra between", {"mode": "in_order", "required_skills": [P, D]}, [P, "azure-validate", D], True, 0.8),
    skill("InOrder/wrong order", {"mode": "in_order", "required_skills": [P, D]}, [D, P], False, 1.0),
    skill("InOrder/missing", {"mode": "in_order", "required_skills": [P, D]}, [P], False, 2 / 3),
    skill("AnyOrder/identical", {"mode": "any_order", "required_skills": [P, D]}, [P, D], True, 1.0),
    skill("AnyOrder/reordered", {"mode": "any_order", "required_skills": [P, D]}, [D, P], True, 1.0),
    skill("AnyOrder/extra", {"mode": "any_order", "required_skills": [P, D]}, ["azure-validate", P, D], True, 0.8),
    skill("AnyOrder/missing", {"mode": "any_order", "required_skills": [P, D]}, [P], False, 2 / 3),
    skill(
        "AnyOrder/duplicates",
        {"mode": "any_order", "required_skills": ["skill1", "skill1", "skill2"]},
        ["skill1", "skill1", "skill2"],
        True,
        1.0,
    ),
    skill(
        "AllowExtra/true",
        {"mode": "in_order", "required_skills": ["skill1"], "allow_extra": True},
        ["skill1", "skill2"],
        True,
        2 / 3,
    ),
    skill(
        "AllowExtra/false",
        {"mode": "in_order", "required_skills": ["skill1"], "allow_extra": False},
        ["skill1", "skill2"],
        True,
        2 / 3 * (1 - 0.6 * 0.5),
    ),
    skill("EdgeCases/nil invocations", {"mode": "any_order", "required_skills": ["skill1"]}, [], False, 0.0),
    skill("EdgeCases/empty name counts", {"mode": "exact_match", "required_skills": ["skill1"]}, ["", "skill1"], False, 2 / 3),
    skill("EdgeCases/details", {"mode": "exact_match", "required_skills": ["skill1"]}, ["skill1"], True, 1.0),
    skill(
        "PrecisionRecall/perfect", {"mode": "any_order", "required_skills": ["skill1", "skill2"]}, ["skill1", "skill2"], True, 1.0
    ),
    skill(
        "PrecisionRecall/half recall", {"mode": "any_order", "required_skills": ["skill1", "skill2"]}, ["skill1"], False, 2 / 3
    ),
    skill(
        "PrecisionRecall/extra",
        {"mode": "any_order", "required_skills": ["skill1", "skill2"]},
        ["skill1", "skill2", "skill3"],
        True,
        0.8,
    ),
    # --- behavior -----------------------------------------------------------------------------------
    behavior("Constructor/no rules", {}, "config", None),
    behavior("MaxToolCalls/under", {"max_tool_calls": 10}, True, 1.0, tools=["t"] * 5),
    behavior("MaxToolCalls/at limit", {"max_tool_calls": 10}, True, 1.0, tools=["t"] * 10),
    behavior("MaxToolCalls/over", {"max_tool_calls": 5}, False, 0.0, tools=["t"] * 8),
    behavior(
        "MaxToolCalls/zero means not set", {"max_tool_calls": 0, "max_tokens": 1000}, True, 1.0, tools=["t"] * 999, tokens=500
    ),
    behavior("MaxTokens/under", {"max_tokens": 1000}, True, 1.0, tokens=500),
    behavior("MaxTokens/at limit", {"max_tokens": 1000}, True, 1.0, tokens=1000),
    behavior("MaxTokens/over", {"max_tokens": 500}, False, 0.0, tokens=1200),
    behavior("MaxTokens/no usage data", {"max_tokens": 500}, True, 1.0),
    behavior("RequiredTools/all used", {"required_tools": [RF, WF]}, True, 1.0, tools=[RF, WF, "search"]),
    behavior("RequiredTools/one missing", {"required_tools": [RF, WF]}, False, 0.5, tools=[RF, "search"]),
    behavior("RequiredTools/none used", {"required_tools": [RF]}, False, 0.0),
    behavior("ForbiddenTools/absent", {"forbidden_tools": ["exec", "shell"]}, True, 1.0, tools=[RF, WF]),
    behavior("ForbiddenTools/used", {"forbidden_tools": ["exec", "shell"]}, False, 0.5, tools=[RF, "exec", WF]),
    behavior("ForbiddenTools/no tools", {"forbidden_tools": ["exec"]}, True, 1.0),
    behavior("MaxDurationMS/under", {"max_duration_ms": 5000}, True, 1.0, duration=3000),
    behavior("MaxDurationMS/at limit", {"max_duration_ms": 5000}, True, 1.0, duration=5000),
    behavior("MaxDurationMS/over", {"max_duration_ms": 5000}, False, 0.0, duration=8000),
    behavior(
        "CombinedRules/all pass",
        {"max_tool_calls": 10, "max_tokens": 2000, "required_tools": [RF], "forbidden_tools": ["exec"], "max_duration_ms": 10000},
        True,
        1.0,
        tools=[RF, WF, "view"],
        tokens=800,
        duration=5000,
    ),
    behavior(
        "CombinedRules/one over",
        {"max_tool_calls": 10, "max_tokens": 2000, "required_tools": [RF], "forbidden_tools": ["exec"], "max_duration_ms": 10000},
        False,
        0.8,
        tools=[RF, WF] + ["view"] * 13,
        tokens=800,
        duration=5000,
    ),
    behavior(
        "CombinedRules/most fail",
        {"max_tool_calls": 5, "max_tokens": 1000, "required_tools": [RF], "forbidden_tools": ["exec"]},
        False,
        0.0,
        tools=["exec"] * 20,
        tokens=5000,
    ),
    behavior("CombinedRules/half", {"max_tool_calls": 5, "max_tokens": 1000}, False, 0.5, tools=["t"] * 10, tokens=500),
    behavior("EdgeCases/zero tool calls", {"max_tool_calls": 10}, True, 1.0),
    behavior("EdgeCases/zero tokens", {"max_tokens": 500}, True, 1.0, tokens=0),
    behavior(
        "EdgeCases/details",
        {"max_tool_calls": 10, "required_tools": [RF], "forbidden_tools": ["exec"]},
        True,
        1.0,
        tools=[RF, WF, "view"],
    ),
    behavior("EdgeCases/tool count without names", {"max_tool_calls": 10}, True, 1.0, tools=["t"] * 3),
    behavior("EdgeCases/unlisted tools", {"max_tool_calls": 10}, True, 1.0, tools=["exec", "shell"]),
    behavior("EdgeCases/zero duration", {"max_duration_ms": 5000}, True, 1.0, duration=0),
    behavior("EdgeCases/required with nil tools", {"required_tools": [RF]}, False, 0.0),
    behavior("EdgeCases/forbidden with nil tools", {"forbidden_tools": ["exec"]}, True, 1.0),
    # --- tool_constraint ----------------------------------------------------------------------------
    constraint("RequiresAtLeastOneConstraint", {}, [], "config", None),
    constraint("ExpectTools_Pass", {"expect_tools": [{"tool": "bash"}, {"tool": "edit"}]}, ["bash", "edit", "view"], True, 1.0),
    constraint("ExpectTools_Fail", {"expect_tools": [{"tool": "bash"}, {"tool": "edit"}]}, ["bash", "view"], False, 0.5),
    constraint("RejectTools_Pass", {"reject_tools": [{"tool": "create_file"}]}, ["bash", "edit"], True, 1.0),
    constraint(
        "RejectTools_Fail", {"reject_tools": [{"tool": "create_file"}, {"tool": "delete"}]}, ["bash", "create_file"], False, 0.5
    ),
    constraint(
        "AllConstraints_Pass",
        {"expect_tools": [{"tool": "bash"}, {"tool": "edit"}], "reject_tools": [{"tool": "create_file"}]},
        ["bash", "edit", "view"],
        True,
        1.0,
    ),
    constraint(
        "AllConstraints_PartialFail",
        {"expect_tools": [{"tool": "bash"}, {"tool": "edit"}], "reject_tools": [{"tool": "create_file"}]},
        ["bash", "create_file"],
        False,
        1 / 3,
    ),
    constraint("EmptyToolsUsed", {"expect_tools": [{"tool": "bash"}], "reject_tools": [{"tool": "delete"}]}, [], False, 0.5),
    constraint("StructuredExpect_ToolNameOnly", {"expect_tools": [{"tool": "bash"}]}, ["bash", "edit"], True, 1.0),
    constraint(
        "StructuredExpect_WithArgsPattern_Pass",
        {"expect_tools": [{"tool": "bash", "command_pattern": r"azd\s+up"}]},
        [("bash", "azd up --region eastus")],
        True,
        1.0,
    ),
    constraint(
        "StructuredExpect_WithArgsPattern_Fail",
        {"expect_tools": [{"tool": "bash", "command_pattern": r"azd\s+up"}]},
        [("bash", "git status")],
        False,
        0.0,
    ),
    constraint(
        "StructuredReject_WithArgsPattern_Pass",
        {"reject_tools": [{"tool": "bash", "command_pattern": r"rm\s+-rf"}]},
        [("bash", "ls -la")],
        True,
        1.0,
    ),
    constraint(
        "StructuredReject_WithArgsPattern_Fail",
        {"reject_tools": [{"tool": "bash", "command_pattern": r"rm\s+-rf"}]},
        [("bash", "rm -rf /tmp/stuff")],
        False,
        0.0,
    ),
    constraint("EmptyToolField", {"expect_tools": [{"tool": ""}]}, [], "config", None),
    constraint("RegexToolName", {"expect_tools": [{"tool": "bash|shell"}]}, ["bash"], True, 1.0),
    constraint("EmptyRejectToolField", {"reject_tools": [{"tool": ""}]}, [], "config", None),
    constraint("InvalidToolRegex", {"expect_tools": [{"tool": "("}]}, [], "config", None),
    constraint("InvalidArgsPatternRegex", {"reject_tools": [{"tool": "bash", "command_pattern": "("}]}, [], "config", None),
    # --- file ---------------------------------------------------------------------------------------
    file("Grade/must_exist passes", {"must_exist": ["exists.txt"]}, {"exists.txt": "x"}, True, 1.0),
    file("Grade/must_exist fails", {"must_exist": ["missing.txt"]}, {}, False, 0.0),
    file("Grade/must_not_exist passes", {"must_not_exist": ["forbidden.txt"]}, {}, True, 1.0),
    file("Grade/must_not_exist fails", {"must_not_exist": ["forbidden.txt"]}, {"forbidden.txt": "x"}, False, 0.0),
    file(
        "Grade/must_match passes",
        {"content_patterns": [{"path": "code.go", "must_match": ["func main", r"fmt\.Println"]}]},
        {"code.go": 'package main\n\nfunc main() {\n\tfmt.Println("hi")\n}\n'},
        True,
        1.0,
    ),
    file(
        "Grade/must_match fails",
        {"content_patterns": [{"path": "code.go", "must_match": ["func main"]}]},
        {"code.go": "package lib\n"},
        False,
        0.5,
    ),
    file(
        "Grade/must_not_match passes",
        {"content_patterns": [{"path": "safe.go", "must_not_match": ["panic", r"os\.Exit"]}]},
        {"safe.go": "package safe\n"},
        True,
        1.0,
    ),
    file(
        "Grade/must_not_match fails",
        {"content_patterns": [{"path": "bad.go", "must_not_match": ["panic"]}]},
        {"bad.go": 'panic("x")\n'},
        False,
        0.5,
    ),
    file(
        "Grade/content file missing", {"content_patterns": [{"path": "missing.go", "must_match": ["anything"]}]}, {}, False, 0.0
    ),
    file(
        "Grade/content file missing, must_not_match",
        {"content_patterns": [{"path": "missing.go", "must_not_match": ["forbidden_pattern", "another_bad"]}]},
        {},
        False,
        0.0,
    ),
    file(
        "Grade/mixed",
        {"must_exist": ["exists.txt", "missing.txt"], "must_not_exist": ["forbidden.txt"]},
        {"exists.txt": "x", "forbidden.txt": "x"},
        False,
        1 / 3,
    ),
    file(
        "Grade/invalid must_match regex",
        {"content_patterns": [{"path": "test.txt", "must_match": ["[invalid"]}]},
        {"test.txt": "x"},
        False,
        0.5,
    ),
    file(
        "Grade/invalid must_not_match regex",
        {"content_patterns": [{"path": "test.txt", "must_not_match": ["[invalid_regex"]}]},
        {"test.txt": "x"},
        False,
        0.5,
    ),
    file("Grade/no checks", {}, {}, "config", None),
    file(
        "Grade/nested path",
        {"must_exist": ["src/pkg/main.go"], "content_patterns": [{"path": "src/pkg/main.go", "must_match": ["package main"]}]},
        {"src/pkg/main.go": "package main\n"},
        True,
        1.0,
    ),
    file("Grade/details", {"must_exist": ["a.txt"]}, {"a.txt": "x"}, True, 1.0),
    file("Grade/path traversal", {"must_exist": ["../../../etc/passwd"]}, {}, "config", None),
    file(
        "Grade/content traversal",
        {"content_patterns": [{"path": "../../../etc/shadow", "must_match": ["root"]}]},
        {},
        "config",
        None,
    ),
    file("Grade/absolute path", {"must_exist": ["/etc/passwd"]}, {}, "config", None),
    file(
        "ViaCreate",
        {
            "must_exist": ["hello.txt"],
            "must_not_exist": ["bad.txt"],
            "content_patterns": [{"path": "hello.txt", "must_match": ["hello"]}],
        },
        {"hello.txt": "hello world"},
        True,
        1.0,
    ),
]

CASES += [
    # --- code (inline_script) -----------------------------------------------------------------------
    code("InlineScriptGrader/basic_success", ["1 == 1"], True, 1.0),
    code("InlineScriptGrader/basic_failure", ["1 == 0"], False, 0.0),
    code("InlineScriptGrader/partial_pass_fail", ["1 == 1", "2 == 3", "3 == 3", "4 == 5"], False, 0.5),
    code("InlineScriptGrader/with_context_output", ['"hello" in output', "len(output) > 0"], True, 1.0, output="hello world"),
    code("EmptyAssertions", [], True, 1.0),
    code(
        "WithRealContextPython (one completed tool call with a result)",
        REAL_CONTEXT,
        True,
        1.0,
        output="hello world",
        outcome={"hello": "world"},
        duration=101,
        steps=[
            {
                "type": "tool_call",
                "stepId": "s1",
                "timestamp": 1,
                "toolCallId": "t1",
                "name": "view",
                "status": "completed",
                "input": {"path": "a.py"},
                "output": "print('hi')",
            }
        ],
    ),
    code(
        "WithError (an assistant message mentioning an error)",
        ["len(transcript) == 1", "len(errors) == 1", "len(tool_calls) == 0"],
        True,
        1.0,
        steps=[{"type": "message", "stepId": "m1", "timestamp": 1, "role": "agent", "content": "oh no there was a fake error"}],
    ),
    code("WithSyntaxError/python", ["what language is this, anyways?"], False, 0.0),
    code("UnsupportedLanguage", ["true"], "config", None, language="ruby"),
]

#: Cases of the same test files that our records cannot state, with the reason.
NOT_TRANSCRIBED: dict[str, str] = {
    f"{A}: EdgeCases/nil session": "a nil session digest: our results always carry a trajectory (possibly empty)",
    f"{B}: EdgeCases/nil session": "the same",
    f"{C}: NilSession": "the same",
}
