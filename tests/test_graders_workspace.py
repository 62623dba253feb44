"""Graders of the workspace: file, diff, git, with their path-safety rules. In-process and as a process."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from .graders_support import grade_both, write_files

README = "# Grader Showcase\n\nA demo.\n\n## Installation\n\npip install waza\n"

# (files in the workspace, config, pass, score)
FILE: list[tuple[dict[str, str], dict[str, Any], bool, float]] = [
    # the grader-showcase task's config
    (
        {"README.md": README},
        {
            "must_exist": ["README.md"],
            "must_not_exist": ["DELETE_ME.txt"],
            "content_patterns": [
                {
                    "path": "README.md",
                    "must_match": ["(?i)grader[- ]?showcase", "(?i)(installation|install|setup)"],
                    "must_not_match": ["TODO|FIXME|XXX"],
                }
            ],
        },
        True,
        1.0,
    ),
    # each content_patterns entry also checks that its file exists (the original's file_grader_test scores)
    (
        {"README.md": README + "TODO: more\n"},
        {"content_patterns": [{"path": "README.md", "must_not_match": ["TODO"]}]},
        False,
        0.5,
    ),
    # a missing file fails its existence check and all its pattern checks
    (
        {},
        {"must_exist": ["README.md"], "content_patterns": [{"path": "README.md", "must_match": ["a"], "must_not_match": ["b"]}]},
        False,
        0.0,
    ),
    # an invalid pattern is a failed check; a description is a note
    ({"a.txt": "x"}, {"content_patterns": [{"path": "a.txt", "description": "note", "must_match": ["(", "x"]}]}, False, 2 / 3),
    ({"DELETE_ME.txt": "x"}, {"must_not_exist": ["DELETE_ME.txt", "other.txt"]}, False, 0.5),
    # not multiline (as the original): ^ and $ are the text's ends unless (?m); case-sensitive unless (?i)
    (
        {"README.md": README},
        {"content_patterns": [{"path": "README.md", "must_match": ["^## Installation$", "^# grader"]}]},
        False,
        1 / 3,
    ),
    (
        {"README.md": README},
        {"content_patterns": [{"path": "README.md", "must_match": ["(?m)^## Installation$", "(?i)^# grader"]}]},
        True,
        1.0,
    ),
    ({"src/pkg/mod.py": "x = 1\n"}, {"must_exist": ["src/pkg/mod.py", "src/pkg", "./src/pkg/../pkg/mod.py"]}, True, 1.0),
]


@pytest.mark.parametrize("files,config,passed,score", FILE)
def test_file(tmp_path, files, config, passed, score):
    write_files(tmp_path, files)
    grade = grade_both("file", config, cwd=tmp_path)
    assert (grade.passed, grade.score) == (passed, pytest.approx(score))


def test_a_symlink_leading_out_of_the_workspace_is_an_error_never_read(tmp_path):
    outside = tmp_path / "secret.txt"
    outside.write_text("password")
    ws = tmp_path / "ws"
    ws.mkdir()
    os.symlink(outside, ws / "README.md")
    config = {"content_patterns": [{"path": "README.md", "must_match": ["password"]}]}
    grade = grade_both("file", config, cwd=ws)
    assert grade.status == "error" and "outside" in grade.error


@pytest.mark.parametrize(
    "name,config", [("file", {"must_exist": ["a"]}), ("diff", {"expected_files": [{"path": "a", "contains": ["x"]}]})]
)
def test_a_result_without_a_workspace_fails_with_score_0(name, config):
    """The original's file and diff graders grade "no workspace directory available" as failed, score 0."""
    grade = grade_both(name, config)
    assert (grade.passed, grade.score) == (False, 0.0) and "no workspace" in grade.reasoning


# --- diff: (workspace files, context files, expected_files, pass, score) -------------------------------
DIFF: list[tuple[dict[str, str], dict[str, str], list[dict[str, Any]], bool, float]] = [
    # snapshot, byte for byte: existence + snapshot = 2 checks
    (
        {"output/result.txt": "42\n"},
        {"snapshots/expected_result.txt": "42\n"},
        [{"path": "output/result.txt", "snapshot": "snapshots/expected_result.txt"}],
        True,
        1.0,
    ),
    (
        {"output/result.txt": "42"},
        {"snapshots/expected_result.txt": "42\n"},
        [{"path": "output/result.txt", "snapshot": "snapshots/expected_result.txt"}],
        False,
        0.5,
    ),
    # fragments only (the reference's example): + present, - absent, bare present
    (
        {"src/main.py": "def new_function():\n    return 42\n", "requirements.txt": "requests>=2.28\n"},
        {},
        [
            {"path": "src/main.py", "contains": ["+def new_function():", "+    return 42", "-def old_function():"]},
            {"path": "requirements.txt", "contains": ["requests>=2.28"]},
        ],
        True,
        1.0,
    ),
    (
        {"src/main.py": "def old_function():\n    return 42\n"},
        {},
        [{"path": "src/main.py", "contains": ["+def new_function():", "+    return 42", "-def old_function():"]}],
        False,
        0.5,
    ),
    # combined: existence + snapshot + 2 fragments = 4 checks
    (
        {"config.yaml": "api_key: ${API_KEY}\ndebug: true\n"},
        {"expected/config.yaml": "api_key: ${API_KEY}\ndebug: false\n"},
        [{"path": "config.yaml", "snapshot": "expected/config.yaml", "contains": ["+api_key: ${API_KEY}", "-debug: true"]}],
        False,
        0.5,
    ),
    # a missing file fails every check of its entry
    ({}, {"e.txt": "x"}, [{"path": "gone.txt", "snapshot": "e.txt", "contains": ["-x"]}], False, 0.0),
    # "+-x" requires a literal "-x"
    ({"f.txt": "a -x b"}, {}, [{"path": "f.txt", "contains": ["+-x"]}], True, 1.0),
]


@pytest.mark.parametrize("files,context,expected,passed,score", DIFF)
def test_diff(tmp_path, files, context, expected, passed, score):
    ws, ctx = tmp_path / "ws", tmp_path / "fixtures"
    ws.mkdir()
    ctx.mkdir()
    write_files(ws, files)
    write_files(ctx, context)
    grade = grade_both("diff", {"expected_files": expected, "context_dir": str(ctx)}, cwd=ws)
    assert (grade.passed, grade.score) == (passed, pytest.approx(score))


def test_a_snapshot_mismatch_shows_a_unified_diff(tmp_path):
    write_files(tmp_path / "ws", {"a.txt": "one\nTWO\n"})
    write_files(tmp_path / "ctx", {"a.txt": "one\ntwo\n"})
    config = {"expected_files": [{"path": "a.txt", "snapshot": "a.txt"}], "context_dir": str(tmp_path / "ctx")}
    grade = grade_both("diff", config, cwd=tmp_path / "ws")
    assert "-two" in grade.details["diffs"]["a.txt"] and "+TWO" in grade.details["diffs"]["a.txt"]


# --- git ---------------------------------------------------------------------------------------------
def git(ws: Path, *args: str) -> None:
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@e",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@e",
    }
    subprocess.run(["git", "-C", str(ws), *args], check=True, capture_output=True, env=env)


@pytest.fixture
def repo(tmp_path):
    ws = tmp_path / "repo"
    ws.mkdir()
    git(ws, "init", "-q")
    write_files(ws, {"README.md": "# demo\n", "app.py": "print(1)\n", "old.txt": "bye\n", ".gitignore": "*.log\n"})
    git(ws, "add", "-A")
    git(ws, "commit", "-q", "-m", "base")
    return ws


def test_git_reports_created_modified_deleted_in_outcome(repo):
    write_files(repo, {"app.py": "print(2)\n", "src/new.py": "x\n", "debug.log": "ignored\n", ".waza-workspace": "mark\n"})
    (repo / "old.txt").unlink()
    config = {
        "expect_created": ["src/*.py"],
        "expect_modified": ["app.py"],
        "expect_deleted": ["old.txt"],
        "expect_unchanged": ["README.md"],
    }
    grade = grade_both("git", config, cwd=repo)
    assert (grade.passed, grade.score) == (True, 1.0)
    assert grade.outcome == {"filesCreated": ["src/new.py"], "filesModified": ["app.py"], "filesDeleted": ["old.txt"]}


def test_git_test_command_decides_and_its_exit_code_is_in_outcome(repo):
    write_files(repo, {"check.sh": "#!/bin/sh\ngrep -q 2 app.py\n"})
    (repo / "check.sh").chmod(0o755)
    failing = grade_both("git", {"test_command": "./check.sh"}, cwd=repo)
    assert (failing.passed, failing.outcome["testExitCode"]) == (False, 1)
    write_files(repo, {"app.py": "print(2)\n"})
    passing = grade_both("git", {"test_command": ["./check.sh"], "expect_modified": ["app.py"]}, cwd=repo)
    assert (passing.passed, passing.score, passing.outcome["testExitCode"]) == (True, 1.0, 0)


def test_git_runs_nothing_a_hostile_repository_config_names(repo, tmp_path):
    # What an agent can write in its workspace's .git/config: each of these makes a plain git run a command.
    pwned = tmp_path / "pwned"
    hooks = repo / ".git" / "evil-hooks"
    hooks.mkdir()
    for hook in ("post-index-change", "reference-transaction"):
        (hooks / hook).write_text(f"#!/bin/sh\ntouch {pwned}-hook\n")
        (hooks / hook).chmod(0o755)
    settings = {
        "core.fsmonitor": f"touch {pwned}-fsmonitor; echo",
        "core.hooksPath": str(hooks),
        "diff.external": f"touch {pwned}-external",
        "filter.Evil.clean": f"touch {pwned}-clean; cat",
        "filter.Evil.smudge": f"touch {pwned}-smudge; cat",
        "filter.Evil.process": f"touch {pwned}-process",
        "filter.Evil.required": "true",
        "diff.Evil.textconv": f"touch {pwned}-textconv; cat",
        "diff.Evil.command": f"touch {pwned}-command",
    }
    for key, value in settings.items():
        git(repo, "config", key, value)
    write_files(repo, {".gitattributes": "*.py filter=Evil diff=Evil\n", "app.py": "print(2)\n", "new.py": "x\n"})
    os.utime(repo / "app.py", (946684800, 946684800))  # an old mtime: git must hash the file, through a filter if any
    grade = grade_both("git", {"expect_modified": ["app.py"]}, cwd=repo)
    assert grade.passed, grade
    assert grade.outcome["filesCreated"] == [".gitattributes", "new.py"]
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith("pwned")) == []


def test_git_expectations_that_fail(repo):
    write_files(repo, {"README.md": "# changed\n"})
    grade = grade_both(
        "git", {"expect_created": ["x.py"], "expect_unchanged": ["README.md"], "expect_modified": ["*.md"]}, cwd=repo
    )
    assert (grade.passed, grade.score) == (False, pytest.approx(1 / 3))


def test_git_without_commits_counts_every_file_as_created(tmp_path):
    git(tmp_path, "init", "-q")
    write_files(tmp_path, {"a.txt": "a"})
    grade = grade_both("git", {}, cwd=tmp_path)
    assert grade.passed and grade.outcome["filesCreated"] == ["a.txt"]


def test_git_outside_a_repository_is_an_error(tmp_path):
    grade = grade_both("git", {"expect_created": ["a"]}, cwd=tmp_path)
    assert grade.status == "error" and "not inside a git work tree" in grade.error


def test_a_symlink_is_never_read_and_a_fifo_never_blocks(tmp_path):
    ws = tmp_path / "ws"
    (ws / "real").mkdir(parents=True)
    (ws / "real" / "notes.md").write_text("password\n")
    os.symlink("real", ws / "via")  # points inside, but could be retargeted while the grader reads
    os.mkfifo(ws / "pipe.md")
    for path in ("via/notes.md", "pipe.md"):
        for name, config in (
            ("file", {"content_patterns": [{"path": path, "must_match": ["password"]}]}),
            ("diff", {"expected_files": [{"path": path, "contains": ["password"]}]}),
        ):
            grade = grade_both(name, config, cwd=ws)
            assert grade.status == "error" and ("symlink" in grade.error or "FIFO" in grade.error), grade
