"""human: a person decides. The result is queued for review and the grade is pending until labelled.

Config: ``instructions`` and ``criteria`` (shown to the reviewer),
``queue`` (default ``waza-review.jsonl``), ``labels`` (default
``waza-labels.jsonl``) and ``preview_chars`` (default 2000). ``waza review``
shows the queue and writes labels; grading the results again then turns each
labelled pending grade into the person's pass or fail. See ``_review``.
"""

from __future__ import annotations

import sys

from waza.protocol.records import GraderRequest, GraderResult

from . import _review
from ._example import Example

SUMMARY = "Queue the output for a person's review; pending until labelled with `waza review`."

EXAMPLE = Example(
    config={"instructions": "Review for security best practices", "criteria": ["No hardcoded secrets"], "queue": "review.jsonl"},
    request={"id": "deploy-1", "output": "Deployed with a managed identity."},
    result={"status": "pending", "reasoning": "awaiting human review: waza review review.jsonl"},
)


def grade(request: GraderRequest) -> GraderResult:
    return _review.review(request, "human")


def main() -> None:
    from ._standalone import main as run

    run(sys.modules[__name__], "human")


if __name__ == "__main__":
    main()
