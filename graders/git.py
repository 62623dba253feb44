"""git: outcome grading: which files the agent created, modified and deleted, and an optional test command.

The workspace must be inside a git work tree; changes are measured against
``base`` (default ``HEAD``; a repository without commits counts every file as
created): created = untracked files (ignoring .gitignore'd ones) and files
added since base, modified and deleted = tracked files changed or removed
since base, all relative to the workspace (renames count as a deletion plus a
creation). They are always returned in ``outcome`` (``filesCreated``,
``filesModified``, ``filesDeleted``, and ``testExitCode``), so later tools can
use them.

Checks: each ``expect_created`` / ``expect_modified`` / ``expect_deleted``
entry (a workspace-relative path or glob such as ``src/*.py``; absolute paths
and ``..`` are config errors) must match a changed file of that sort; each
``expect_unchanged`` entry must match no changed file; ``test_command`` (run in
the workspace, no shell, secret-free environment; ``./script`` is found in the
workspace, a bare name on PATH) must exit 0, and running past
``timeout`` (default 300 s) fails it, since the agent's code is what hangs.
Score = passed checks / all checks; with no checks configured the grade
passes and only records the outcome.
"""

from __future__ import annotations

import fnmatch
import shlex
import sys
from typing import Any

from waza.protocol.io.process import run_once
from waza.protocol.io.secrets import scrubbed_env
from waza.protocol.records import GraderRequest, GraderResult

from ._checks import Check, from_checks
from ._commands import command_argv, last_line, run_command
from ._example import Example
from ._paths import check_relative, workspace

SUMMARY = "Files created / modified / deleted in the workspace (via git) and an optional test command; returned in outcome."

DEFAULT_TIMEOUT = 300.0
GIT_TIMEOUT = 60.0
EMPTY_TREE = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"
#: Files waza itself puts in a workspace, never counted as the agent's work.
OWN_FILES = frozenset({".waza-workspace"})
EXPECTATIONS = ("expect_created", "expect_modified", "expect_deleted", "expect_unchanged")

EXAMPLE = Example(
    config={"expect_created": ["hello.py"], "expect_unchanged": ["README.md"], "test_command": ["python3", "hello.py"]},
    request={"output": "Created hello.py"},
    committed={"README.md": "# demo\n"},
    files={"hello.py": "print('hello')\n"},
    result={"pass": True, "score": 1.0},
)


def check_config(config: dict[str, Any]) -> None:
    for key in EXPECTATIONS:
        for i, pattern in enumerate(config.get(key, [])):
            check_relative(pattern, f"{key}[{i}]")
    command = config.get("test_command")
    if command:
        program = shlex.split(command)[0] if isinstance(command, str) else command[0]
        if "/" not in program or program.startswith("/"):  # ./run_tests.sh lives in the workspace: found at grade time
            command_argv(command, config, "test_command")


async def _git(root: str, *args: str) -> tuple[int | None, str]:
    env = {**scrubbed_env(), "GIT_OPTIONAL_LOCKS": "0", "LC_ALL": "C"}
    out = await run_once(["git", "-C", root, *args], env=env, timeout=GIT_TIMEOUT)
    if out.timed_out:
        raise RuntimeError(f"git {args[0]} timed out")
    return out.code, out.stdout.decode("utf-8", "surrogateescape") if out.code == 0 else out.stderr_tail


async def changes(root: str, base: str) -> dict[str, list[str]]:
    """Created, modified and deleted files under ``root`` since ``base``, relative to ``root``."""
    code, text = await _git(root, "rev-parse", "--is-inside-work-tree")
    if code != 0:
        raise ValueError(f"workspace {root} is not inside a git work tree: {last_line(text)}")
    code, _ = await _git(root, "rev-parse", "--verify", "--quiet", f"{base}^{{commit}}")
    if code != 0:
        if base != "HEAD":
            raise ValueError(f"git base {base!r} is not a commit in the workspace's repository")
        base = EMPTY_TREE
    code, diff = await _git(root, "diff", "--name-status", "-z", "--no-renames", "--relative", base, "--", ".")
    if code != 0:
        raise RuntimeError(f"git diff failed: {last_line(diff)}")
    code, untracked = await _git(root, "ls-files", "--others", "--exclude-standard", "-z", "--", ".")
    if code != 0:
        raise RuntimeError(f"git ls-files failed: {last_line(untracked)}")
    out: dict[str, list[str]] = {"created": [], "modified": [], "deleted": []}
    parts = diff.split("\0")
    for status, path in zip(parts[0::2], parts[1::2], strict=False):  # -z ends with a NUL: one empty part left over
        sort = {"A": "created", "D": "deleted"}.get(status[:1], "modified")
        out[sort].append(path)
    out["created"] += [p for p in untracked.split("\0") if p]
    return {k: sorted(p for p in set(v) if p not in OWN_FILES) for k, v in out.items()}


def _expectation_checks(config: dict[str, Any], changed: dict[str, list[str]]) -> list[Check]:
    everything = [p for paths in changed.values() for p in paths]
    checks = []
    for key in EXPECTATIONS:
        sort = key.removeprefix("expect_")
        for pattern in config.get(key, []):
            if sort == "unchanged":
                hits = fnmatch.filter(everything, pattern)
                checks.append(Check(f"unchanged {pattern!r}", not hits, f"changed: {', '.join(hits[:5])}"))
            else:
                ok = bool(fnmatch.filter(changed[sort], pattern))
                checks.append(Check(f"{sort} {pattern!r}", ok, f"not {sort}"))
    return checks


async def grade(request: GraderRequest) -> GraderResult:
    config = request.config
    root = str(workspace(request, "git"))
    changed = await changes(root, config.get("base", "HEAD"))
    checks = _expectation_checks(config, changed)
    outcome: dict[str, Any] = {
        "filesCreated": changed["created"],
        "filesModified": changed["modified"],
        "filesDeleted": changed["deleted"],
    }
    details: dict[str, Any] = {}
    if "test_command" in config:
        timeout = float(config.get("timeout", DEFAULT_TIMEOUT))
        argv = command_argv(config["test_command"], {**config, "base_dir": root}, "test_command")
        out = await run_command(argv, request, b"", timeout)
        outcome["testExitCode"] = out.code
        if out.timed_out:
            why = f"timed out after {timeout:g}s"
        elif out.signal is not None:
            why = f"killed by signal {out.signal}"
        else:
            why = f"exit code {out.code}: {last_line(out.stderr_tail) or last_line(out.stdout.decode('utf-8', 'replace'))}"
        checks.append(Check("test_command", out.code == 0 and not out.timed_out, why.rstrip(": ")))
        details["testOutput"] = out.stdout.decode("utf-8", "replace")[-2000:]
    return from_checks(checks, outcome=outcome, details=details)


def main() -> None:
    from ._standalone import main as run

    run(sys.modules[__name__], "git")


if __name__ == "__main__":
    main()
