"""file: files that must (not) exist in the workspace, and regexes over their contents.

Paths are relative to the result's workspace (the request's ``cwd``); an
absolute path or a ``..`` escape is a config error, and a path whose symlinks
lead outside the workspace is a grader error (never read). Each
``must_exist`` / ``must_not_exist`` path is one check (a directory counts as
existing). Each ``content_patterns`` entry adds a check that its file exists
plus one check per pattern, as in the original (so a missing file with one
pattern scores 0 of 2, and the other checks still count); its regexes are
searched in the file's whole text (UTF-8, undecodable bytes replaced), not
per line (``^``/``$`` are the text's ends unless the pattern says ``(?m)``),
case-sensitive unless it says ``(?i)``. An invalid pattern is a failed check.
An entry may carry a ``description`` (the original's docs write one); it is
a note, not graded. A result with no workspace is a failed grade (score 0),
as in the original. Score = passed checks / all checks; pass = all passed.
"""

from __future__ import annotations

import sys
from typing import Any

from waza.protocol.records import GraderRequest, GraderResult

from ._checks import Check, from_checks, no_workspace, pattern_checks
from ._example import Example
from ._paths import check_relative, inside, read_inside, workspace
from ._patterns import require_any

SUMMARY = "Files that must (not) exist in the workspace, and regexes their contents must (not) match."

EXAMPLE = Example(
    config={
        "must_exist": ["README.md"],
        "must_not_exist": ["DELETE_ME.txt"],
        "content_patterns": [{"path": "README.md", "must_match": ["(?i)^# grader showcase"], "must_not_match": ["TODO"]}],
    },
    request={"output": "Created README.md"},
    files={"README.md": "# Grader Showcase\n\n## Installation\n\npip install waza\n"},
    result={"pass": True, "score": 1.0},
)


def check_config(config: dict[str, Any]) -> None:
    require_any(config, ("must_exist", "must_not_exist", "content_patterns"), "file")
    for key in ("must_exist", "must_not_exist"):
        for i, path in enumerate(config.get(key, [])):
            check_relative(path, f"{key}[{i}]")
    for i, entry in enumerate(config.get("content_patterns", [])):
        check_relative(entry["path"], f"content_patterns[{i}].path")


def grade(request: GraderRequest) -> GraderResult:
    if not request.cwd:
        return no_workspace("file")
    root = workspace(request, "file")
    config = request.config
    checks = [Check(f"must_exist {p!r}", inside(root, p).exists(), "missing") for p in config.get("must_exist", [])]
    checks += [Check(f"must_not_exist {p!r}", not inside(root, p).exists(), "exists") for p in config.get("must_not_exist", [])]
    for entry in config.get("content_patterns", []):
        data = read_inside(root, entry["path"])
        text = None if data is None else data.decode("utf-8", "replace")
        checks.append(Check(f"{entry['path']} exists", text is not None, "missing"))
        checks += pattern_checks(f"{entry['path']} must_match", entry.get("must_match", []), text, wanted=True)
        checks += pattern_checks(f"{entry['path']} must_not_match", entry.get("must_not_match", []), text, wanted=False)
    return from_checks(checks)


def main() -> None:
    from ._standalone import main as run

    run(sys.modules[__name__], "file")


if __name__ == "__main__":
    main()
