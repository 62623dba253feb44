"""Suites in the original waza's current format (1.x and the 2.0 scenario suites) pass ``waza check`` and run.

tests/fixtures/suites/format-1x uses every eval, config and task key of the
original's current schemas; format-2x is a 2.0 ``scenario`` suite with command
mocks. Keys waza acts on are honoured (checked through a real run with the mock
agent: the workspace and the prompt the agent got); the others are named once
each as not applied. The schemas' couplings are refused with the line of the key.
"""

from __future__ import annotations

import shutil
import subprocess
import textwrap
from pathlib import Path

import pytest

from tests.conftest import read_jsonl, run_waza
from tests.test_serve_model import serving
from tests.test_suite_check import check_error
from waza.runner.suites.loader import load_suite

SUITES = Path(__file__).parent / "fixtures" / "suites"

NOT_APPLIED = [
    "eval.yaml:10: config.first_event_timeout_seconds",
    "eval.yaml:21: config.inject_skill_body",
    "eval.yaml:22: config.trigger_skill_routing",
    "eval.yaml:23: config.disabled_skills",
    "notes.yaml:8: first_event_timeout_seconds",
    "notes.yaml:9: skill_directories",
]
#: Keys waza now acts on: never named as not applied.
APPLIED = ["inputs.follow_up_prompts", "inputs.responder", "inputs.workdir"]


def test_a_1x_suite_with_every_key_passes_check_and_names_what_is_not_applied() -> None:
    done = run_waza("check", SUITES / "format-1x")
    err = done.stderr.decode()
    assert done.returncode == 0, err
    for key in NOT_APPLIED:
        assert sum(key in line for line in err.splitlines()) == 1, f"{key!r} not named once:\n{err}"
    assert not [key for key in APPLIED if key in err], err
    assert "ok: 2 tasks" in err


def test_a_1x_suite_runs_with_its_prompt_file_instructions_fixtures_and_golden_task(tmp_path: Path) -> None:
    out = tmp_path / "out.jsonl"
    replies = tmp_path / "replies.yaml"  # the responder of ask.yaml: the user has nothing more to say
    replies.write_text("""- text: '{"action": "stop"}'\n""")
    with serving(replies) as (base, _):
        done = run_waza("run", SUITES / "format-1x", "-o", out, "--judge-base-url", f"{base}/v1")
    assert done.returncode == 0, done.stderr.decode()
    by_id = {r["id"]: r for r in read_jsonl(out)}
    notes = by_id["notes"]
    assert notes["input"][1] == "Now shorten the notes."  # the follow-up prompt: a second turn
    assert by_id["ask"]["conversation"] == {"turns": 1, "outcome": "completed", "followups": 0}
    # suite instruction files, then the task's, then the prompt file's text
    assert notes["input"][0].startswith("House rule: write release notes in the past tense.\n\nv1 shipped\n\nWrite release notes")
    assert notes["metadata"]["golden"] is True
    assert notes["metadata"]["context"]["fixture"] == "starter"
    grades = {g["name"]: g["pass"] for r in by_id.values() for g in r["grades"]}
    assert grades["fixture_copied"] and grades["file_fixture_copied"], grades


def test_workers_replaces_max_workers_which_is_still_read_with_a_note(tmp_path: Path) -> None:
    assert load_suite(SUITES / "format-1x").config.max_workers == 2
    old = tmp_path / "old"
    shutil.copytree(SUITES / "format-1x", old)
    eval_yaml = old / "eval.yaml"
    eval_yaml.write_text(eval_yaml.read_text().replace("workers: 2", "max_workers: 3"))
    suite = load_suite(eval_yaml)
    assert suite.config.max_workers == 3
    assert any("config.max_workers: the older name of workers" in n for n in suite.notices)
    eval_yaml.write_text(eval_yaml.read_text().replace("max_workers: 3", "workers: 0"))
    assert load_suite(eval_yaml).config.max_workers >= 1  # 0: sized from the CPUs, as the original


def test_a_2_0_scenario_suite_passes_check() -> None:
    done = run_waza("check", SUITES / "format-2x")
    err = done.stderr.decode()
    assert done.returncode == 0, err
    assert "command_mocks" not in err  # applied, so not named
    suite = load_suite(SUITES / "format-2x")
    assert suite.skill is None and suite.scenario == "triage a failing deployment with the az CLI"


BASE = textwrap.dedent("""\
    name: mini
    config:
      executor: mock
    graders:
      - type: code
        name: answered
        assertions: ["len(output) > 0"]
    tasks: ["tasks/*.yaml"]
    """)

TASK = textwrap.dedent("""\
    id: one
    inputs:
      prompt: "hello"
    """)

COMMAND_MOCK = "command_mocks:\n  - name: az\n    responses:\n      - args: [list]\n        stdout: ok\n"


@pytest.mark.parametrize(
    ("what", "eval_yaml", "task", "where", "text"),
    [
        ("scenario without 2.0", BASE + "scenario: deploy\n", TASK, "eval.yaml:1:", "'schemaVersion' is a required"),
        ("scenario with 1.4", BASE + "scenario: deploy\nschemaVersion: '1.4'\n", TASK, "schemaVersion", "'2.0' was expected"),
        ("2.0 without scenario", BASE + "schemaVersion: '2.0'\n", TASK, "eval.yaml:1", "'scenario' is a required"),
        ("bad version", BASE + "schemaVersion: '1'\n", TASK, "schemaVersion", "does not match"),
        ("another major", BASE + "schemaVersion: '3.0'\n", TASK, "schemaVersion", "does not match"),
        ("a negative minor", BASE + "schemaVersion: '1.-1'\n", TASK, "schemaVersion", "does not match"),
        (
            "command mocks before 1.3",
            BASE.replace("mock\n", "copilot-sdk\n", 1) + "schemaVersion: '1.2'\n" + COMMAND_MOCK,
            TASK,
            "schemaVersion",
            "does not match",
        ),
        (
            "command mocks with the mock executor",
            BASE + "schemaVersion: '1.3'\n" + COMMAND_MOCK,
            TASK,
            "executor",
            "'copilot-sdk' was expected",
        ),
        (
            "command mock args and args_regex",
            BASE.replace("mock\n", "copilot-sdk\n", 1) + "schemaVersion: '1.3'\n" + COMMAND_MOCK + "        args_regex: [x]\n",
            TASK,
            "command_mocks[0].responses[0]",
            "",
        ),
        (
            "command mock stdout and fixture",
            BASE.replace("mock\n", "copilot-sdk\n", 1) + "schemaVersion: '1.3'\n" + COMMAND_MOCK + "        fixture: out.txt\n",
            TASK,
            "command_mocks[0].responses[0]",
            "",
        ),
        ("mcp mock without tools", BASE + "mcp_mocks:\n  - name: tracker\n", TASK, "mcp_mocks[0]", ""),
        (
            "reasoning effort outside copilot",
            BASE.replace("executor: mock\n", "executor: mock\n  reasoning_effort: high\n"),
            TASK,
            "config.executor",
            "'copilot-sdk' was expected",
        ),
        (
            "workers and max_workers",
            BASE.replace("executor: mock\n", "executor: mock\n  workers: 2\n  max_workers: 2\n"),
            TASK,
            "config.max_workers",
            "not both",
        ),
        ("prompt and prompt_file", BASE, TASK + "  prompt_file: p.md\n", "one.yaml:2: field 'inputs'", ""),
        (
            "missing prompt file",
            BASE,
            TASK.replace('prompt: "hello"', "prompt_file: nowhere.md"),
            "inputs.prompt_file",
            "is not a file",
        ),
        (
            "responder and follow-ups",
            BASE,
            TASK + "  follow_up_prompts: [more]\n  responder: {instructions: x, max_followups: 1}\n",
            "one.yaml:2: field 'inputs'",
            "",
        ),
        ("responder without a cap", BASE, TASK + "  responder: {instructions: x}\n", "inputs.responder", "max_followups"),
        ("missing context fixture", BASE, TASK + "  context: {fixture: gone}\n", "inputs.context.fixture", "not found"),
        ("workdir climbing out", BASE, TASK + "  workdir: ../up\n", "inputs.workdir", "climbs out"),
        (
            "repo dest climbing out",
            BASE,
            TASK + "  repos: [{type: worktree, source: ., dest: ../x}]\n",
            "inputs.repos[0].dest",
            "climbs out",
        ),
        ("repo of another type", BASE, TASK + "  repos: [{type: clone, source: ., dest: x}]\n", "inputs.repos[0].type", ""),
        (
            "missing instruction file",
            BASE.replace("executor: mock\n", "executor: mock\n  instruction_files: [nope.md]\n"),
            TASK,
            "config.instruction_files[0]",
            "is not a file",
        ),
    ],
)
def test_the_current_format_couplings_are_refused_at_their_line(
    tmp_path: Path, what: str, eval_yaml: str, task: str, where: str, text: str
) -> None:
    line = check_error(tmp_path, eval_yaml, task)
    assert where in line and text in line, line


def test_a_context_fixture_folder_holding_a_link_out_of_the_fixtures_is_refused_when_the_suite_loads(tmp_path: Path) -> None:
    """A sandboxed run may show the folder as it is (an overlay), so a link out is refused before any trial."""
    (tmp_path / "secret.txt").write_text("host secret\n")
    (tmp_path / "fixtures" / "starter").mkdir(parents=True)
    (tmp_path / "fixtures" / "starter" / "key").symlink_to(tmp_path / "secret.txt")
    line = check_error(tmp_path, BASE, TASK + "  context: {fixture: starter}\n")
    assert "inputs.context.fixture" in line and "'starter/key'" in line and "outside" in line, line


def git(*args: str, cwd: Path) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout.strip()


def repo_suite(tmp_path: Path, commit: str) -> Path:
    source = tmp_path / "service"
    source.mkdir()
    ident = ["-c", "user.name=t", "-c", "user.email=t@localhost", "-c", "commit.gpgsign=false"]
    git("init", "-q", "-b", "main", cwd=source)
    (source / "app.py").write_text("VERSION = 1\n")
    git("add", "-A", cwd=source)
    git(*ident, "commit", "-qm", "one", cwd=source)
    git("tag", "v1", cwd=source)
    (source / "app.py").write_text("VERSION = 2\n")
    git(*ident, "commit", "-qam", "two", cwd=source)
    suite = tmp_path / "suite"
    (suite / "tasks").mkdir(parents=True)
    (suite / "eval.yaml").write_text(BASE)
    (suite / "tasks" / "one.yaml").write_text(
        textwrap.dedent(f"""\
        id: one
        inputs:
          prompt: Bump the version.
          repos:
            - type: worktree
              source: ../../service
              commit: {commit}
              dest: src/service
        graders:
          - type: file
            name: checked_out
            config:
              content_patterns:
                - path: src/service/app.py
                  must_match: ["VERSION = 1"]
        """)
    )
    return suite


def test_a_repository_is_checked_out_at_its_ref_into_the_workspace_and_the_source_is_untouched(tmp_path: Path) -> None:
    suite = repo_suite(tmp_path, "v1")
    before = git("worktree", "list", cwd=tmp_path / "service")
    out = tmp_path / "out.jsonl"
    done = run_waza("run", suite, "-o", out)
    assert done.returncode == 0, done.stderr.decode()
    (result,) = read_jsonl(out)
    assert {g["name"]: g["pass"] for g in result["grades"]}["checked_out"] is True
    assert git("worktree", "list", cwd=tmp_path / "service") == before
    assert (tmp_path / "service" / "app.py").read_text() == "VERSION = 2\n"


def test_a_repository_ref_that_does_not_exist_is_refused_by_check(tmp_path: Path) -> None:
    suite = repo_suite(tmp_path, "v9")
    done = run_waza("check", suite)
    assert done.returncode == 2
    assert "inputs.repos[0].commit" in done.stderr.decode() and "'v9'" in done.stderr.decode()


def test_an_mcp_scenario_suite_is_judged_by_the_current_grader_keys(tmp_path: Path) -> None:
    """The original's MCP example layout: a 2.0 scenario, a mocked tracker (not made for the mock adapter, with a note), and
    tool_calls / tool_constraint / skill_invocation / json_schema with their current keys on what the agent did."""
    out = tmp_path / "out.jsonl"
    done = run_waza("run", SUITES / "mcp-scenario", "-o", out)
    err = done.stderr.decode()
    assert done.returncode == 1, err  # one task is meant to fail
    assert "mcp_mocks and command_mocks are not used with the mock adapter" in err
    grades = {r["id"]: {g["name"]: (g["status"], g["score"]) for g in r["grades"]} for r in read_jsonl(out)}
    assert all(status == "passed" for status, _ in grades["summary"].values()), grades["summary"]
    assert grades["wrong"] == {
        "asked_the_tracker": ("failed", 0.75),  # the expect entry's limit and state fail on the one call
        "only_the_tracker": ("failed", 0.0),  # bash and skill are not on the allow-list
        "no_destructive_skill": ("failed", 0.0),
        "answers_with_json": ("failed", 0.0),  # two JSON objects in the prose
    }
