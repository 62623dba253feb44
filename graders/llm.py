"""llm: an LLM judge scores the result against a rubric, 1-5 normalised to 0-1.

The rubric is inline text or a file (see ``_rubric``); without one, a general
rubric (did the agent do what was asked, correctly and completely) is used, so
``--grader builtin:llm --judge local`` works with no config at all. The judge
replies ``{"reasoning": "...", "score": 1-5}`` (schema-constrained where the
endpoint supports it); score 1 -> 0.0, 3 -> 0.5, 5 -> 1.0, and the grade
passes at ``threshold`` (default 0.75, i.e. a 4). A judge's own ``passed`` in
its reply is ignored: the threshold decides, the same way for every judge.
"""

from __future__ import annotations

import sys

from waza.protocol.records import GraderRequest, GraderResult

from . import _judge_prompt, _rubric
from ._example import Example

SUMMARY = "LLM judge: a rubric (inline or file) scored 1-5, normalised to 0-1, pass at a threshold."

DEFAULT_RUBRIC = (
    "Score the agent's work from 1 to 5:\n"
    "1. Correctness: is the output right for the task?\n"
    "2. Completeness: does it address everything that was asked?\n"
    "3. Quality: is the approach sound and the answer clear?\n"
    "5 = excellent on all three, 3 = acceptable with clear gaps, 1 = wrong or missing."
)

LEAD = "Evaluate the agent's output for the task below using the rubric."

#: A judge command stands in for a model here, so the example runs offline; point
#: base_url (or --judge-base-url / --judge local) at a real model in practice.
EXAMPLE = Example(
    config={
        "rubric": "Score 1-5: is the answer correct and complete?",
        "command": ["python3", "-c", 'print(\'{"reasoning": "correct and complete", "score": 5}\')'],
    },
    request={"input": "What is 2+2?", "output": "4"},
    result={"pass": True, "score": 1.0, "reasoning": "correct and complete"},
)


check_config = _judge_prompt.check_judge_config


async def grade(request: GraderRequest) -> GraderResult:
    rubric = _rubric.load(request.config.get("rubric", DEFAULT_RUBRIC))
    return await _judge_prompt.rubric_grade(request, rubric, LEAD)


def main() -> None:
    from ._standalone import main as run

    run(sys.modules[__name__], "llm")


if __name__ == "__main__":
    main()
