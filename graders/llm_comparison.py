"""llm_comparison: an LLM judge scores how well the output matches a reference answer.

The reference is the config's ``reference`` or, failing that, the prompt's own
``reference``; with neither there is nothing to compare against, so that is a
grader error, not a fail. Scoring is the ``llm`` grader's: 1-5 normalised to
0-1, pass at ``threshold`` (default 0.75). An optional ``rubric`` adds what
"matches" means for this task (by default: the same facts and outcome, wording
free).
"""

from __future__ import annotations

import sys

from waza.protocol.records import GraderRequest, GraderResult

from . import _judge_prompt, _rubric
from ._example import Example

SUMMARY = "LLM judge: how well the output matches a reference answer, 1-5 normalised to 0-1."

DEFAULT_RUBRIC = (
    "Compare the agent's output with the reference answer and score 1 to 5:\n"
    "5 = conveys everything essential in the reference and nothing that contradicts it;\n"
    "3 = partly matches: some essential points missing or wrong;\n"
    "1 = does not match the reference or contradicts it.\n"
    "Wording, order and extra helpful detail do not matter; facts and outcome do."
)

LEAD = "Judge whether the agent's output matches the reference answer."

EXAMPLE = Example(
    config={
        "reference": "Deployment confirmed, with the URL of the deployed site.",
        "command": ["python3", "-c", 'print(\'{"reasoning": "confirms, no URL", "score": 3}\')'],
    },
    request={"input": "Deploy the site.", "output": "Deployed."},
    result={"pass": False, "score": 0.5, "reasoning": "confirms, no URL"},
)


check_config = _judge_prompt.check_judge_config


async def grade(request: GraderRequest) -> GraderResult:
    reference = request.config.get("reference") or request.reference
    if not reference:
        raise ValueError("no reference to compare against: set config 'reference' or the prompt's 'reference'")
    rubric = _rubric.load(request.config.get("rubric", DEFAULT_RUBRIC))
    return await _judge_prompt.rubric_grade(request, rubric, LEAD, reference=reference)


def main() -> None:
    from ._standalone import main as run

    run(sys.modules[__name__], "llm_comparison")


if __name__ == "__main__":
    main()
