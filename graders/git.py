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

The agent may have written the repository's config: git runs with no system
or global config and with every setting that makes it run a command
(``core.fsmonitor``, hooks, an external diff, textconv, filter drivers)
cleared. ``test_command`` runs what the agent wrote: after a sandboxed capture,
in a sandbox with the agent's view (run on its own, as ``waza grade`` does, on
the host).
"""

from __future__ import annotations

import fnmatch
import os
import re
import shlex
import sys
from collections.abc import Sequence
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


#: Git's own settings, never the user's or the machine's: the agent may have written the repository's config,
#: and settings that run commands (fsmonitor, hooks, external diff) are cleared on every call.
GIT_ENV = {
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_CONFIG_SYSTEM": os.devnull,
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_ATTR_NOSYSTEM": "1",
    "GIT_NO_REPLACE_OBJECTS": "1",
    "GIT_TERMINAL_PROMPT": "0",
    "GIT_OPTIONAL_LOCKS": "0",
    "LC_ALL": "C",
}
SAFE_CONFIG = ("core.fsmonitor=false", f"core.hooksPath={os.devnull}", "diff.external=", "core.untrackedCache=false")
#: Driver settings the repository's config may name (``filter.NAME.clean``...): each is cleared, as it runs a command.
_DRIVER = re.compile(r"(filter|diff)\.(.+)\.(clean|smudge|process|textconv|command)", re.IGNORECASE | re.DOTALL)


async def _run_git(root: str, config: Sequence[str], *args: str) -> tuple[int | None, str]:
    env = {k: v for k, v in scrubbed_env().items() if not k.startswith("GIT_")} | GIT_ENV
    argv = ["git", "-C", root, *(f for c in config for f in ("-c", c)), *args]
    out = await run_once(argv, env=env, timeout=GIT_TIMEOUT)
    if out.timed_out:
        raise RuntimeError(f"git {args[0]} timed out")
    return out.code, out.stdout.decode("utf-8", "surrogateescape") if out.code == 0 else out.stderr_tail


async def _safe_config(root: str) -> list[str]:
    """The ``-c`` settings that clear every command the repository's config could make git run here: the
    fixed ones, and each filter and diff driver its config defines (it reads as config only, running none)."""
    code, listed = await _run_git(root, SAFE_CONFIG, "config", "--includes", "-z", "--name-only", "--list")
    if code != 0:
        raise ValueError(f"cannot read the git config of workspace {root}: {last_line(listed)}")
    config = list(SAFE_CONFIG)
    for key in listed.split("\0"):
        found = _DRIVER.fullmatch(key)
        if found is None:
            continue
        kind, name = found.group(1).lower(), found.group(2)
        if "=" in name or "\n" in name:
            raise ValueError(f"the workspace's git config names a {kind} driver {name[:80]!r} that cannot be cleared")
        keys = ("clean", "smudge", "process") if kind == "filter" else ("textconv", "command")
        config += [f"{kind}.{name}.{k}=" for k in keys]
        if kind == "filter":
            config.append(f"filter.{name}.required=false")
    return list(dict.fromkeys(config))


async def changes(root: str, base: str) -> dict[str, list[str]]:
    """Created, modified and deleted files under ``root`` since ``base``, relative to ``root``.

    git runs with waza's settings over the repository's own (the agent may have written ``.git/config``):
    no system or global config, and nothing that runs a command (fsmonitor, hooks, external diff,
    textconv, clean/smudge filters)."""
    config = await _safe_config(root)

    async def _git(*args: str) -> tuple[int | None, str]:
        return await _run_git(root, config, *args)

    code, text = await _git("rev-parse", "--is-inside-work-tree")
    if code != 0:
        raise ValueError(f"workspace {root} is not inside a git work tree: {last_line(text)}")
    code, _ = await _git("rev-parse", "--verify", "--quiet", f"{base}^{{commit}}")
    if code != 0:
        if base != "HEAD":
            raise ValueError(f"git base {base!r} is not a commit in the workspace's repository")
        base = EMPTY_TREE
    code, diff = await _git(
        "diff", "--no-ext-diff", "--no-textconv", "--name-status", "-z", "--no-renames", "--relative", base, "--", "."
    )
    if code != 0:
        raise RuntimeError(f"git diff failed: {last_line(diff)}")
    code, untracked = await _git("ls-files", "--others", "--exclude-standard", "-z", "--", ".")
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
        out = await run_command(argv, request, b"", timeout, agents_code=True)
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
