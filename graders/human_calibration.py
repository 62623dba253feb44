"""human_calibration: a person's label for the same output an automated grader judged.

``calibrate_grader`` names that grader (say the ``llm`` judge in the same
run). The output is queued for review, tagged with it, and the grade is
pending; once ``waza review`` has labelled it, grading again gives the
person's verdict, so each result line carries the automated verdict and the
human one side by side, and ``waza calibrate RESULTS --labels
waza-labels.jsonl`` measures their agreement (kappa, false-pass rate). The
labelled grade counts in the aggregate like any grader: the person is the
ground truth. Other keys as for ``human``.
"""

from __future__ import annotations

import sys

from waza.protocol.records import GraderRequest, GraderResult

from . import _review
from ._example import Example

SUMMARY = "Collect a person's label for an output another grader judged, to calibrate that grader."

EXAMPLE = Example(
    config={"calibrate_grader": "quality_judge", "queue": "review.jsonl"},
    request={"id": "explain-1", "output": "A recursive factorial."},
    result={"status": "pending", "details": {"queue": "review.jsonl", "item": "explain-1", "calibrates": "quality_judge"}},
)


def grade(request: GraderRequest) -> GraderResult:
    return _review.review(request, "human_calibration", calibrates=request.config["calibrate_grader"])


def main() -> None:
    from ._standalone import main as run

    run(sys.modules[__name__], "human_calibration")


if __name__ == "__main__":
    main()
