"""diff: compare workspace files with expected snapshots and line fragments.

Each ``expected_files`` entry names a workspace-relative ``path`` and gives a
``snapshot``, ``contains`` fragments, or both. Checks per entry: one implicit
check that the file exists; one for the snapshot (byte-for-byte equal to the
snapshot file, which is relative to ``context_dir``, the suite's fixtures
directory, or the current directory when unset); one per fragment: ``+text``
and bare ``text`` must occur in the file, ``-text`` must not (write ``+-x`` to
require a literal ``-x``); whitespace around the fragment after its prefix is
trimmed, and a fragment that is empty after trimming counts as a passed check,
as in the original. Fragments are case-sensitive substrings of the file's
text. A missing file fails every check of its entry; a snapshot that cannot
be read fails its check; a result with no workspace is a failed grade
(score 0), as in the original. Score = passed
checks / all checks, pass = all passed; a snapshot mismatch puts the first
lines of a unified diff in the details. Workspace paths that escape (absolute,
``..``, symlinks) are rejected like the file grader's; snapshots must stay
inside ``context_dir``.
"""

from __future__ import annotations

import difflib
import sys
from pathlib import Path
from typing import Any

from waza.protocol.errors import ConfigError
from waza.protocol.records import GraderRequest, GraderResult

from ._checks import Check, from_checks, no_workspace
from ._example import Example
from ._paths import check_relative, config_file, read_inside, workspace

SUMMARY = "Workspace files against byte-exact snapshots and +/- line fragments; score = passed / total."

EXAMPLE = Example(
    config={
        "expected_files": [
            {"path": "config.yaml", "snapshot": "expected/config.yaml", "contains": ["+api_key: ${API_KEY}", "-debug: true"]}
        ]
    },
    request={"output": "Updated config.yaml"},
    files={"config.yaml": "api_key: ${API_KEY}\ndebug: false\n"},
    context={"expected/config.yaml": "api_key: ${API_KEY}\ndebug: false\n"},
    result={"pass": True, "score": 1.0},
)

DIFF_LINES = 40


def check_config(config: dict[str, Any]) -> None:
    for i, entry in enumerate(config["expected_files"]):
        where = f"expected_files[{i}]"
        check_relative(entry["path"], f"{where}.path")
        if "snapshot" not in entry and not entry.get("contains"):
            raise ConfigError(f"{where}: give a snapshot, contains fragments, or both")
        if "snapshot" in entry:
            config_file(config, "context_dir", entry["snapshot"], f"{where}.snapshot", contained=True)


def fragment(text: str) -> tuple[bool, str]:
    """(must be present, the fragment) from a ``+``/``-``/bare entry, trimmed after its prefix."""
    if text.startswith("-"):
        return False, text[1:].strip()
    return True, (text[1:] if text.startswith("+") else text).strip()


def _entry_checks(root: Path, entry: dict[str, Any], config: dict[str, Any], details: dict[str, str]) -> list[Check]:
    rel = entry["path"]
    content = read_inside(root, rel)
    exists = content is not None
    checks = [Check(f"{rel} exists", exists, "missing")]
    data = content or b""
    if "snapshot" in entry:
        snapshot = config_file(config, "context_dir", entry["snapshot"], "snapshot", contained=True)
        unreadable = ""
        try:
            expected: bytes | None = snapshot.read_bytes()
        except OSError as exc:
            expected = None
            unreadable = f"snapshot unreadable: {exc.strerror or exc}"
        same = exists and data == expected
        why = "file missing" if not exists else unreadable if expected is None else "content differs"
        checks.append(Check(f"{rel} matches snapshot {entry['snapshot']!r}", same, why))
        if exists and expected is not None and not same:
            lines = difflib.unified_diff(
                expected.decode("utf-8", "replace").splitlines(),
                data.decode("utf-8", "replace").splitlines(),
                f"snapshot/{entry['snapshot']}",
                f"workspace/{rel}",
                lineterm="",
            )
            details[rel] = "\n".join(list(lines)[:DIFF_LINES])
    text = data.decode("utf-8", "replace")
    for raw in entry.get("contains", []):
        present, frag = fragment(raw)
        if not exists:
            checks.append(Check(f"{rel} {raw!r}", False, "file missing"))
        elif not frag:
            checks.append(Check(f"{rel} {raw!r} (empty fragment)", True))
        elif present:
            checks.append(Check(f"{rel} contains {frag!r}", frag in text, "not found"))
        else:
            checks.append(Check(f"{rel} lacks {frag!r}", frag not in text, "still present"))
    return checks


def grade(request: GraderRequest) -> GraderResult:
    if not request.cwd:
        return no_workspace("diff")
    root = workspace(request, "diff")
    diffs: dict[str, str] = {}
    checks = [c for entry in request.config["expected_files"] for c in _entry_checks(root, entry, request.config, diffs)]
    return from_checks(checks, details={"diffs": diffs} if diffs else None)


def main() -> None:
    from ._standalone import main as run

    run(sys.modules[__name__], "diff")


if __name__ == "__main__":
    main()
