"""regex: the output must match every ``must_match`` pattern and none of ``must_not_match``.

Each pattern is one check (``re.search`` anywhere in the output); score =
passed checks / all checks, pass = every check passed. Matching is
case-sensitive by default, as the original's was; ``flags`` takes any of the
letters ``imsxa`` (Python's inline flags), so ``flags: i`` ignores case, and
inline flags such as ``(?i)`` work too. An invalid pattern is a failed check
naming it, as in the original; an empty config passes with 1.0.
"""

from __future__ import annotations

import sys
from typing import Any

from waza.protocol.records import GraderRequest, GraderResult

from ._checks import from_checks, pattern_checks
from ._example import Example
from ._patterns import parse_flags

SUMMARY = "Output must match every must_match regex and no must_not_match regex (case-sensitive unless flags say i)."

EXAMPLE = Example(
    config={"must_match": [r"deployed to https?://\S+"], "must_not_match": ["error|failed"], "flags": "i"},
    request={"output": "Deployed to https://demo.example.net in 42s."},
    result={"pass": True, "score": 1.0},
)


def check_config(config: dict[str, Any]) -> None:
    parse_flags(config.get("flags", ""), "flags")


def grade(request: GraderRequest) -> GraderResult:
    config = request.config
    flags = parse_flags(config.get("flags", ""), "flags")
    checks = pattern_checks("must_match", config.get("must_match", []), request.output, wanted=True, flags=flags)
    return from_checks(
        checks + pattern_checks("must_not_match", config.get("must_not_match", []), request.output, wanted=False, flags=flags)
    )


def main() -> None:
    from ._standalone import main as run

    run(sys.modules[__name__], "regex")


if __name__ == "__main__":
    main()
