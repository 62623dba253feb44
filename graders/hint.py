"""hint: pass when the output contains the prompt's hint, ignoring case.

The simplest useful default grader: a prompts file whose lines carry a
``hint`` (or its older name ``expected``) is gradable with no code at all. A
prompt without a hint cannot be judged this way, so that is a grader error,
not a pass.
"""

from __future__ import annotations

import sys

from waza.protocol.records import GraderRequest, GraderResult

from ._example import Example

SUMMARY = "Pass when the output contains the prompt's hint (case-insensitive)."

EXAMPLE = Example(
    config={},
    request={"output": "The capital of France is Paris.", "hint": "paris"},
    result={"pass": True, "score": 1.0},
)


def grade(request: GraderRequest) -> GraderResult:
    hint = request.hint if request.hint is not None else request.expected
    if not hint:
        raise ValueError("the prompt has no hint to look for")
    found = hint.casefold() in request.output.casefold()
    return GraderResult(
        passed=found,
        score=1.0 if found else 0.0,
        reasoning=f"output {'contains' if found else 'does not contain'} the hint {hint!r}",
    )


def main() -> None:
    from ._standalone import main as run

    run(sys.modules[__name__], "hint")


if __name__ == "__main__":
    main()
