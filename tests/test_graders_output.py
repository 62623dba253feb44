"""Graders of the output text: regex, text, json_schema, hint. Each case runs in-process and as a process."""

from __future__ import annotations

from typing import Any

import pytest

from .graders_support import grade_both

# (config, output, pass, score)
REGEX: list[tuple[dict[str, Any], str, bool, float]] = [
    # the reference's example: both required lines present, no error words
    (
        {
            "must_match": ["deployed to https?://.+", "Resource group: .+"],
            "must_not_match": ["error|failed|exception", "permission denied"],
            "flags": "i",
        },
        "Deployed to https://app.example.net\nResource group: rg-demo",
        True,
        1.0,
    ),
    # case-sensitive by default, as the original's regex matching: "Error" is not "error"
    ({"must_not_match": ["error"]}, "Error: disk full", True, 1.0),
    # flags "i" ignores case
    ({"must_not_match": ["error"], "flags": "i"}, "Error: disk full", False, 0.0),
    # an invalid pattern is a failed check, not a config error (the original's text_grader_test invalid-regex case)
    ({"must_match": ["[a-", "disk"]}, "Error: disk full", False, 0.5),
    # nothing to check passes (the original's empty text config)
    ({}, "anything", True, 1.0),
    # one of three checks fails: score 2/3
    ({"must_match": ["alpha", "beta"], "must_not_match": ["gamma"]}, "alpha gamma beta", False, 2 / 3),
    # multiline flag lets ^ anchor lines
    ({"must_match": ["^total: \\d+$"], "flags": "m"}, "items\ntotal: 42\n", True, 1.0),
    ({"must_match": ["^total: \\d+$"]}, "items\ntotal: 42\n", False, 0.0),
]


@pytest.mark.parametrize("config,output,passed,score", REGEX)
def test_regex(config, output, passed, score):
    grade = grade_both("regex", config, output=output)
    assert (grade.passed, grade.score) == (passed, pytest.approx(score))


TEXT: list[tuple[dict[str, Any], str, bool, float]] = [
    ({"contains": ["PYTHON", "javascript"]}, "Python and JavaScript", True, 1.0),
    ({"contains_cs": ["PYTHON"]}, "Python and JavaScript", False, 0.0),
    ({"not_contains": ["cobol"]}, "COBOL is old", False, 0.0),
    ({"not_contains_cs": ["cobol"]}, "COBOL is old", True, 1.0),
    # the grader-showcase task: regexes with inline (?i)
    (
        {
            "regex_match": ["(?i)(python|javascript|typescript|ruby|php|java)", "(?i)(web|development|backend|frontend)"],
            "regex_not_match": ["(?i)error|exception|failed", "(?i)COBOL|Fortran"],
        },
        "1. Python 2. JavaScript 3. TypeScript, all big in web development",
        True,
        1.0,
    ),
    # regex_match is case-sensitive without (?i)
    ({"regex_match": ["python"]}, "Python", False, 0.0),
    ({"contains": ["a"], "not_contains": ["b"], "regex_match": ["c"], "regex_not_match": ["d"]}, "a b c", False, 0.75),
]


@pytest.mark.parametrize("config,output,passed,score", TEXT)
def test_text(config, output, passed, score):
    grade = grade_both("text", config, output=output)
    assert (grade.passed, grade.score) == (passed, pytest.approx(score))


def test_failed_checks_are_named_in_the_reasoning():
    grade = grade_both("text", {"contains": ["alpha", "omega"]}, output="alpha beta")
    assert "contains 'omega': not in output" in grade.reasoning
    assert grade.details["checks"] == [
        {"check": "contains 'alpha'", "pass": True},
        {"check": "contains 'omega'", "pass": False, "why": "not in output"},
    ]


SCHEMA = {"type": "object", "required": ["name", "stars"], "properties": {"stars": {"type": "integer"}}}

JSON_SCHEMA: list[tuple[dict[str, Any], str, bool, str]] = [
    ({"schema": SCHEMA}, '{"name": "waza", "stars": 5}', True, "valid"),
    ({"schema": SCHEMA}, '  {"name": "waza", "stars": "five"}\n', False, "stars: 'five' is not of type 'integer'"),
    ({"schema": SCHEMA}, '{"name": "waza"', False, "not valid JSON"),
    # a fenced block is only looked at when asked
    ({"schema": SCHEMA}, 'Sure:\n```json\n{"name": "w", "stars": 1}\n```', False, "not valid JSON"),
    ({"schema": SCHEMA, "extract": "code_block"}, 'Sure:\n```json\n{"name": "w", "stars": 1}\n```\nbye', True, "valid"),
    ({"schema": SCHEMA, "extract": "code_block"}, '{"name": "w", "stars": 1}', False, "no fenced code block"),
    ({"schema": SCHEMA, "extract": "auto"}, '{"name": "w", "stars": 1}', True, "valid"),
    ({"schema": SCHEMA, "extract": "auto"}, 'text\n```\nnope\n```\n```json\n{"name": "w", "stars": 2}\n```', True, "valid"),
]


@pytest.mark.parametrize("config,output,passed,reason", JSON_SCHEMA)
def test_json_schema(config, output, passed, reason):
    grade = grade_both("json_schema", config, output=output)
    assert grade.passed is passed
    assert grade.score == (1.0 if passed else 0.0)
    assert reason in grade.reasoning


def test_json_schema_from_a_file_relative_to_base_dir(tmp_path):
    (tmp_path / "schemas").mkdir()
    (tmp_path / "schemas" / "answer.json").write_text('{"type": "array", "items": {"type": "number"}}')
    config = {"schema_file": "schemas/answer.json", "base_dir": str(tmp_path)}
    assert grade_both("json_schema", config, output="[1, 2.5]").passed is True
    assert grade_both("json_schema", config, output='[1, "2"]').passed is False


def test_hint_is_still_the_simple_default():
    assert grade_both("hint", {}, output="The CEO is Dario Amodei.", hint="dario amodei").passed is True
