"""The catalogue as a whole: config errors before anything runs, every worked example, one-shot = worker,
the compat suites' grader configs, and `waza graders list/show`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest
import yaml

from waza.graders import CATALOGUE, _config, canonical, load
from waza.protocol import schemas
from waza.protocol.errors import ConfigError
from waza.protocol.records import GraderRequest
from waza.runner.grading.build import make_runner
from waza.runner.grading.grader_specs import Builtin

from .conftest import compat_path, run_waza, write_jsonl
from .graders_support import grade_both, one_shot, write_files

MINE = [
    "code",
    "regex",
    "text",
    "json_schema",
    "file",
    "diff",
    "tool_calls",
    "behavior",
    "action_sequence",
    "skill_invocation",
    "tool_constraint",
    "script",
    "program",
    "git",
]


def test_every_grader_is_in_the_catalogue_with_a_schema_and_docs():
    for name in MINE:
        module = load(name)
        assert module.SUMMARY and module.__doc__ and module.EXAMPLE
        assert schemas.load(_config.schema_name(name))["additionalProperties"] is False


def example_request(name: str, tmp_path: Path) -> tuple[dict[str, Any], GraderRequest]:
    example = load(name).EXAMPLE
    config = dict(example.config)
    ws = tmp_path / "ws"
    ws.mkdir()
    if example.committed:
        from .test_graders_workspace import git

        git(ws, "init", "-q")
        write_files(ws, example.committed)
        git(ws, "add", "-A")
        git(ws, "commit", "-q", "-m", "base")
    write_files(ws, example.files)
    if example.context:
        write_files(tmp_path / "ctx", example.context)
        config["context_dir"] = str(tmp_path / "ctx")
    return config, GraderRequest(cwd=str(ws), **example.request)


@pytest.mark.parametrize("name", MINE)
def test_worked_example_gives_its_documented_result_every_way(tmp_path, name):
    """In-process, worker process and one-shot `python -m waza.graders.NAME` all give the documented result."""
    config, request = example_request(name, tmp_path)
    expected = load(name).EXAMPLE.result
    grade = grade_both(name, config, **{k: getattr(request, k) for k in ("cwd", "output", "trajectory", "usage")})
    assert (grade.passed, grade.score) == (expected["pass"], pytest.approx(expected["score"]))
    proc = one_shot(name, {**request.to_dict(), "config": config})
    assert proc.returncode == 0, proc.stderr
    result = orjson.loads(proc.stdout)
    assert (result["pass"], result["score"], result.get("reasoning"), result.get("details", {})) == (
        grade.passed,
        grade.score,
        grade.reasoning,
        grade.details,
    )


BAD: list[tuple[str, dict[str, Any], str]] = [
    (
        "regex",
        {"must_matc": ["x"]},
        "unknown key 'must_matc'; did you mean 'must_match'? (allowed here: flags, must_match, must_not_match)",
    ),
    ("regex", {"must_match": "x"}, "must_match: must be a list, got str 'x'"),
    ("regex", {"must_match": ["a"], "flags": "q"}, "does not match"),
    ("json_schema", {}, "exactly one of schema, schema_file"),
    ("json_schema", {"schema": {"type": "nonsense"}}, "not a valid JSON Schema"),
    ("json_schema", {"schema_file": "missing.json"}, "not found"),
    ("file", {"must_exist": ["/etc/passwd"]}, "must be relative"),
    ("file", {"must_exist": ["a/../../b"]}, "climbs out"),
    ("file", {"content_patterns": [{"must_match": ["x"]}]}, "'path' is a required property"),
    ("diff", {}, "'expected_files' is a required property"),
    ("diff", {"expected_files": [{"path": "a"}]}, "give a snapshot, contains fragments, or both"),
    ("diff", {"expected_files": [{"path": "../a", "contains": ["x"]}]}, "climbs out"),
    ("diff", {"expected_files": [{"path": "a", "snapshot": "../x"}]}, "climbs out"),
    ("tool_calls", {"required": [{"patern": "x"}]}, "required[0]: must be a string, got a mapping"),
    ("behavior", {"max_tool_calls": -1}, "less than the minimum of 0"),
    ("behavior", {"max_tokens": "many"}, "max_tokens: must be an integer, got str 'many'"),
    ("action_sequence", {"expected_actions": ["a"], "matching_mode": "fuzzy"}, "matching_mode: must be one of"),
    ("action_sequence", {"matching_mode": "exact_match"}, "'expected_actions' is a required property"),
    ("action_sequence", {"expected_actions": ["a"]}, "'matching_mode' is a required property"),
    ("action_sequence", {"expected_actions": ["a"], "matching_mode": "in_order"}, "got 'in_order'"),
    ("skill_invocation", {"required_skills": ["a"]}, "'mode' is a required property"),
    ("skill_invocation", {"required_skills": ["a"], "mode": "in_order_match"}, "mode: must be one of"),
    ("behavior", {"max_tool_calls": 0}, "give at least one rule"),
    (
        "skill_invocation",
        {"mode": "in_order", "required_skills": ["a"], "allow_extra": "yes"},
        "allow_extra: must be a boolean, got str 'yes'",
    ),
    (
        "tool_constraint",
        {"expect_tools": [{"tool": "bash", "command_pattern": "("}]},
        "expect_tools[0].command_pattern: invalid regex",
    ),
    ("code", {"assertions": ["__import__('os')"]}, "not allowed"),
    (
        "code",
        {"assertions": ["True"], "langauge": "python"},
        "unknown key 'langauge'; did you mean 'language'? (allowed here: assertions, language, timeout)",
    ),
    ("script", {"script": "no/such/script.py"}, "not found"),
    ("program", {"command": "no-such-program-anywhere"}, "not found on PATH"),
    ("git", {"expect_created": ["/abs"]}, "must be relative"),
]


@pytest.mark.parametrize("name,config,message", BAD)
def test_config_errors_are_found_before_anything_runs(name, config, message):
    with pytest.raises(ConfigError) as info:
        make_runner(Builtin(name=name, grader=name, config=config))
    assert message in str(info.value) and "\n" not in str(info.value)


def test_a_misspelled_key_stops_waza_grade_with_exit_2_and_one_line(tmp_path):
    results = write_jsonl(tmp_path / "r.jsonl", [{"id": "a", "input": "q", "output": "x"}])
    proc = run_waza("grade", results, "--grader", "builtin:regex", "--grader-config", '{"must_matc": []}')
    assert proc.returncode == 2 and proc.stdout == b""
    lines = proc.stderr.decode().strip().splitlines()
    assert len(lines) == 1 and "must_matc" in lines[0]


def test_waza_grade_runs_a_builtin_by_name(tmp_path):
    results = write_jsonl(tmp_path / "r.jsonl", [{"id": "a", "input": "q", "output": "Deployed to prod"}])
    proc = run_waza(
        "grade", results, "--grader", "builtin:inline_script", "--grader-config", '{"assertions": ["\'prod\' in output"]}'
    )
    assert proc.returncode == 0, proc.stderr
    line = orjson.loads(proc.stdout)
    assert line["status"] == "passed" and line["grades"][0]["name"] == "inline_script"


def suite_graders() -> list[tuple[str, str, dict[str, Any]]]:
    """Every grader entry of the two compat suites: (where, type, config with top-level assertions folded in)."""
    found = []
    suites = compat_path("waza-examples")
    for path in sorted(suites.glob("*/eval.yaml")) + sorted(suites.glob("*/tasks/*.yaml")):
        for entry in yaml.safe_load(path.read_text()).get("graders", []):
            config = dict(entry.get("config") or {})
            if "assertions" in entry:
                config["assertions"] = entry["assertions"]
            found.append((f"{path.parent.name}/{path.name}:{entry['name']}", entry["type"], config))
    return found


def test_every_non_llm_grader_config_in_the_compat_suites_parses():
    entries = suite_graders()
    assert {t for _, t, _ in entries} >= {"code", "text", "file", "behavior", "action_sequence", "skill_invocation"}
    for where, kind, config in entries:
        if kind in CATALOGUE or canonical(kind) in CATALOGUE:
            try:
                make_runner(Builtin(grader=canonical(kind), config=config))
            except ConfigError as exc:  # a suite's grader name is not a plain one: say it here
                raise AssertionError(f"{where}: {exc}") from None


def test_graders_list_and_show():
    listed = run_waza("graders", "list")
    assert listed.returncode == 0
    names = [line.split()[0] for line in listed.stdout.decode().splitlines()]
    assert set(MINE) <= set(names)
    shown = run_waza("graders", "show", "action_sequence")
    text = shown.stdout.decode()
    assert shown.returncode == 0
    assert '"expected_actions"' in text and "Worked example" in text and "precision" in text
    missing = run_waza("graders", "show", "nope")
    assert missing.returncode == 2 and b"unknown built-in grader 'nope'" in missing.stderr
