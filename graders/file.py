"""file: files that must (not) exist in the workspace, and regexes over their contents.

Paths are relative to the result's workspace (the request's ``cwd``); an
absolute path or a ``..`` escape is a config error, and a path whose symlinks
lead outside the workspace is a grader error (never read). Each
``must_exist`` / ``must_not_exist`` path is one check (a directory counts as
existing). Each ``content_patterns`` entry adds one check per pattern; its
regexes are searched in the file's text (UTF-8, undecodable bytes replaced)
with ``re.MULTILINE`` so ``^`` and ``$`` work per line, case-sensitive unless
the pattern says ``(?i)``. A missing file fails all its pattern checks.
Score = passed checks / all checks; pass = all passed.
"""

from __future__ import annotations

import re
import sys
from typing import Any

from waza.protocol.records import GraderRequest, GraderResult

from ._checks import Check, from_checks, pattern_checks
from ._example import Example
from ._paths import check_relative, inside, workspace
from ._patterns import compile_all, require_any

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
        compile_all(entry.get("must_match", []), f"content_patterns[{i}].must_match", re.MULTILINE)
        compile_all(entry.get("must_not_match", []), f"content_patterns[{i}].must_not_match", re.MULTILINE)


def grade(request: GraderRequest) -> GraderResult:
    root = workspace(request, "file")
    config = request.config
    checks = [Check(f"must_exist {p!r}", inside(root, p).exists(), "missing") for p in config.get("must_exist", [])]
    checks += [Check(f"must_not_exist {p!r}", not inside(root, p).exists(), "exists") for p in config.get("must_not_exist", [])]
    for i, entry in enumerate(config.get("content_patterns", [])):
        path = inside(root, entry["path"])
        text = path.read_bytes().decode("utf-8", "replace") if path.is_file() else None
        where = f"content_patterns[{i}]"
        must = compile_all(entry.get("must_match", []), f"{where}.must_match", re.MULTILINE)
        must_not = compile_all(entry.get("must_not_match", []), f"{where}.must_not_match", re.MULTILINE)
        checks += pattern_checks(f"{entry['path']} must_match", must, text, wanted=True)
        checks += pattern_checks(f"{entry['path']} must_not_match", must_not, text, wanted=False)
    return from_checks(checks)


def main() -> None:
    from ._standalone import main as run

    run(sys.modules[__name__], "file")


if __name__ == "__main__":
    main()
