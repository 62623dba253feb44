"""text: substring and regex checks on the output, one check per entry.

``contains`` / ``not_contains`` compare case-insensitively (casefold), the
``_cs`` variants case-sensitively. ``regex_match`` / ``regex_not_match`` use
Python regexes with ``re.search`` and are case-sensitive unless the pattern
says ``(?i)``; an invalid pattern is a failed check, as in the original.
Score = passed checks / all checks; pass = all passed; a config with no
checks at all passes with 1.0, as the original's does.
"""

from __future__ import annotations

import sys

from waza.protocol.records import GraderRequest, GraderResult

from ._checks import Check, from_checks, pattern_checks
from ._example import Example

SUMMARY = "Substring (contains / not_contains, _cs for case-sensitive) and regex checks on the output."

KEYS = ("contains", "not_contains", "contains_cs", "not_contains_cs", "regex_match", "regex_not_match")

EXAMPLE = Example(
    config={"contains": ["python"], "not_contains_cs": ["COBOL"], "regex_not_match": ["(?i)fatal error"]},
    request={"output": "Python, JavaScript and TypeScript are popular for web development."},
    result={"pass": True, "score": 1.0},
)


def grade(request: GraderRequest) -> GraderResult:
    config, out = request.config, request.output
    folded = out.casefold()
    checks = [Check(f"contains {s!r}", s.casefold() in folded, "not in output") for s in config.get("contains", [])]
    checks += [
        Check(f"not_contains {s!r}", s.casefold() not in folded, "found in output") for s in config.get("not_contains", [])
    ]
    checks += [Check(f"contains_cs {s!r}", s in out, "not in output") for s in config.get("contains_cs", [])]
    checks += [Check(f"not_contains_cs {s!r}", s not in out, "found in output") for s in config.get("not_contains_cs", [])]
    checks += pattern_checks("regex_match", config.get("regex_match", []), out, wanted=True)
    checks += pattern_checks("regex_not_match", config.get("regex_not_match", []), out, wanted=False)
    return from_checks(checks)


def main() -> None:
    from ._standalone import main as run

    run(sys.modules[__name__], "text")


if __name__ == "__main__":
    main()
