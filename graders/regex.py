"""regex: the output must match every ``must_match`` pattern and none of ``must_not_match``.

Each pattern is one check (``re.search`` anywhere in the output); score =
passed checks / all checks, pass = every check passed. Matching is
case-insensitive by default, as the reference's examples assume (``error``
also catches ``Error``); ``flags`` replaces the default with any of the letters
``imsxa`` (Python's inline flags), so ``flags: ""`` is case-sensitive. An
invalid pattern is a config error before anything runs. Inline flags such as
``(?i)`` work too.
"""

from __future__ import annotations

import functools
import sys

from waza.protocol.records import GraderRequest, GraderResult

from ._checks import from_checks, pattern_checks
from ._example import Example
from ._patterns import compile_all, parse_flags, require_any

SUMMARY = "Output must match every must_match regex and no must_not_match regex (case-insensitive by default)."

EXAMPLE = Example(
    config={"must_match": [r"deployed to https?://\S+"], "must_not_match": ["error|failed"]},
    request={"output": "Deployed to https://demo.example.net in 42s."},
    result={"pass": True, "score": 1.0},
)


def _compiled(config: dict) -> tuple[list, list]:
    return _compile(tuple(config.get("must_match", [])), tuple(config.get("must_not_match", [])), config.get("flags", "i"))


@functools.lru_cache(maxsize=64)
def _compile(must_match: tuple[str, ...], must_not_match: tuple[str, ...], flag_text: str) -> tuple[list, list]:
    """Compiled once per config, not once per result (two thirds of a grade's cost otherwise)."""
    flags = parse_flags(flag_text, "flags")
    return compile_all(list(must_match), "must_match", flags), compile_all(list(must_not_match), "must_not_match", flags)


def check_config(config: dict) -> None:
    require_any(config, ("must_match", "must_not_match"), "regex")
    _compiled(config)


def grade(request: GraderRequest) -> GraderResult:
    must, must_not = _compiled(request.config)
    checks = pattern_checks("must_match", must, request.output, wanted=True)
    return from_checks(checks + pattern_checks("must_not_match", must_not, request.output, wanted=False))


def main() -> None:
    from ._standalone import main as run

    run(sys.modules[__name__], "regex")


if __name__ == "__main__":
    main()
