"""prompt: an LLM judge with a multi-criteria rubric, replying in JSON (or text with a score line).

The original waza's form is accepted too: ``prompt`` (instead of ``rubric``;
with both, ``prompt`` is used and ``rubric`` is reported as unused, as the
original's prompt grader reads only ``prompt``) holds instructions that tell the judge when to call ``set_waza_grade_pass``
and ``set_waza_grade_fail``. waza's judges answer in JSON, so the judge lists
the calls it makes (``{"reasoning", "calls": [{"tool", "description",
"reason"}]}``); score = passes / (passes + fails), pass = at least one pass
and no fail, and no call at all is a fail with score 0, as in the original.
``model`` names the judge model; ``continue_session: true`` (the judge in the
agent's own session) and ``mode: pairwise`` are not available: the judge sees
the task, output and trajectory, and a suite that sets them is told so.

``rubric`` is inline text, a text file, or a structured rubric YAML
file with its own rating scale (see ``_rubric``; the reference's rubric files
work as ``rubric: path.yaml``). With a plain rubric:

* ``criteria``: names the judge scores one by one (``correctness``, ...); they
  are kept in ``details.criteria``. The grade's score is ``overall_score``.
* ``score_type``: ``normalized`` (default): scores are 1-5, mapped to 0-1
  (1 -> 0, 5 -> 1); ``raw``: the judge gives scores already in [0, 1].
* ``response_format``: ``json`` (default): ``{"reasoning", <criteria>...,
  "overall_score"}``, schema-constrained where the endpoint supports it;
  ``text``: free text whose last non-empty line is ``overall_score: N`` (or
  ``score: N``); the text above it is the reasoning.

Pass at ``threshold`` (default 0.75). A YAML rubric brings its own scale, so
``criteria``, ``score_type: raw`` and ``response_format: text`` are rejected
with it rather than ignored.
"""

from __future__ import annotations

import re
import sys
from typing import Any

from waza.protocol.errors import ConfigError
from waza.protocol.records import GraderRequest, GraderResult

from . import _judge_prompt, _rubric
from ._example import Example
from ._judge_client import JudgeError

SUMMARY = "LLM judge with a multi-criteria rubric (or a rubric YAML file); JSON or text replies, normalized or raw scores."

LEAD = "Evaluate the agent's work on the task below against every criterion of the rubric."

EXAMPLE = Example(
    config={
        "rubric": "Rate correctness and clarity 1-5 each, and an overall score 1-5.",
        "criteria": ["correctness", "clarity"],
        "threshold": 0.7,
        "command": [
            "python3",
            "-c",
            'print(\'{"reasoning": "right, a bit terse", "correctness": 5, "clarity": 3, "overall_score": 4}\')',
        ],
    },
    request={"input": "Explain what a list comprehension is.", "output": "A compact way to build a list."},
    result={"pass": True, "score": 0.75, "reasoning": "right, a bit terse"},
)

_SCORE_LINE = re.compile(r"^\s*\**(?:overall[_ ]score|score)\**\s*[:=]\s*(?P<n>-?\d+(?:\.\d+)?)\s*$", re.IGNORECASE)


PASS_TOOL, FAIL_TOOL = "set_waza_grade_pass", "set_waza_grade_fail"

VERDICT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "reasoning": {"type": "string"},
        "calls": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "tool": {"enum": [PASS_TOOL, FAIL_TOOL]},
                    "description": {"type": "string"},
                    "reason": {"type": "string"},
                },
                "required": ["tool", "description", "reason"],
                "additionalProperties": False,
            },
        },
    },
    "required": ["reasoning", "calls"],
    "additionalProperties": False,
}

VERDICT_LEAD = (
    "You grade an AI agent's work by following the grader instructions below. Where they say to call "
    f"{PASS_TOOL} or {FAIL_TOOL}, list each such call, in order, in 'calls' (tool, description, reason)."
)


UNUSED_RUBRIC = "prompt is given too, and the judge follows prompt, as the original's prompt grader does"


def unsupported(config: dict[str, Any]) -> list[tuple[str, str]]:
    """Keys of the original's form this judge cannot honour, with why (reported by waza check and run)."""
    out = []
    if config.get("continue_session"):
        out.append(("continue_session", "the judge sees the task, output and trajectory, not the agent's session"))
    if config.get("mode") == "pairwise":
        out.append(("mode", "pairwise judging is not available; use llm_comparison"))
    if "prompt" in config and "rubric" in config:
        out.append(("rubric", UNUSED_RUBRIC))
    return out


async def _verdict_calls(request: GraderRequest) -> GraderResult:
    instructions = f"{VERDICT_LEAD}\n\n## Grader instructions\n{request.config['prompt']}"
    done = await _judge_prompt.exchange(request, instructions, VERDICT_SCHEMA)
    calls = done.reply["calls"]
    passes = sum(c["tool"] == PASS_TOOL for c in calls)
    fails = len(calls) - passes
    score = passes / len(calls) if calls else 0.0
    reasoning = done.reply.get("reasoning") or ""
    if not calls:
        reasoning = f"the judge made no pass/fail call; {reasoning}".strip()
    return GraderResult(
        passed=passes > 0 and fails == 0,
        score=round(score, 6),
        reasoning=reasoning,
        details={**done.details, "passes": passes, "fails": fails, "calls": calls, **_unused(request.config)},
    )


def _unused(config: dict[str, Any]) -> dict[str, Any]:
    """A rubric given beside prompt, said in the details of every grade (the suites report it once too)."""
    return {"unused": {"rubric": UNUSED_RUBRIC}} if "rubric" in config else {}


def check_config(config: dict[str, Any]) -> None:
    if "prompt" in config:  # the prompt form: a rubric beside it is not used (as in the original), so not loaded
        _judge_prompt.check_judge_config({k: v for k, v in config.items() if k != "rubric"})
        rubric_only = sorted({"criteria", "score_type", "response_format", "threshold"} & set(config))
        if rubric_only:
            raise ConfigError(
                f"{rubric_only[0]!r} belongs to the rubric form; the prompt form's judge decides pass/fail itself",
                field=rubric_only[0],
            )
        return
    _judge_prompt.check_judge_config(config)
    clash = {"reasoning", "overall_score"} & set(config.get("criteria", []))
    if clash:
        raise ConfigError(f"criterion name {sorted(clash)[0]!r} is taken by the reply itself; rename it", field="criteria")
    if _rubric.load(config["rubric"]).levels:
        for key, plain in (("criteria", None), ("score_type", "normalized"), ("response_format", "json")):
            if key in config and config[key] != plain:
                raise ConfigError(f"a rubric YAML file sets its own scale; remove {key!r}", field=key)


def _scale(raw: bool) -> dict[str, Any]:
    return {"type": "number", "minimum": 0, "maximum": 1} if raw else {"type": "integer", "minimum": 1, "maximum": 5}


def _normalise(value: float, raw: bool) -> float:
    return float(value) if raw else _judge_prompt.one_to_five(value)


def reply_schema(criteria: list[str], raw: bool) -> dict[str, Any]:
    scale = _scale(raw)
    properties: dict[str, Any] = {"reasoning": {"type": "string"}}
    properties.update({name: scale for name in criteria})
    properties["overall_score"] = scale
    return {"type": "object", "properties": properties, "required": list(properties), "additionalProperties": False}


def score_from_text(text: str, raw: bool) -> tuple[float, str]:
    """(score, reasoning) from a text reply whose last non-empty line is the score."""
    lines = [line for line in text.strip().splitlines() if line.strip()]
    match = _SCORE_LINE.match(lines[-1]) if lines else None
    if match is None:
        raise JudgeError(f"judge text reply does not end with an 'overall_score: N' line; it ends {text.strip()[-120:]!r}")
    value = float(match["n"])
    low, high = (0.0, 1.0) if raw else (1.0, 5.0)
    if not low <= value <= high:
        raise JudgeError(f"judge score {value:g} is outside {low:g}-{high:g}")
    return value, "\n".join(lines[:-1]).strip()


async def grade(request: GraderRequest) -> GraderResult:
    config = request.config
    if "prompt" in config:
        return await _verdict_calls(request)
    rubric = _rubric.load(config["rubric"])
    if rubric.levels:
        return await _judge_prompt.rubric_grade(request, rubric, LEAD)
    raw = config.get("score_type", "normalized") == "raw"
    criteria = list(config.get("criteria", []))
    schema = reply_schema(criteria, raw)
    threshold = config.get("threshold", _judge_prompt.DEFAULT_THRESHOLD)
    instructions = f"{LEAD}\n\n## Rubric\n{rubric.text}"
    if config.get("response_format", "json") == "text":
        scale = "a number from 0 to 1" if raw else "an integer from 1 to 5"
        instructions += f"\n\nExplain your judgement, then end with a last line 'overall_score: N' where N is {scale}."
        done = await _judge_prompt.exchange(request, instructions, schema, json_reply=False)
        value, reasoning = score_from_text(done.text, raw)
        return _judge_prompt.verdict(_normalise(value, raw), threshold, reasoning, {**done.details, "rawScore": value})
    done = await _judge_prompt.exchange(request, instructions, schema)
    reply = done.reply
    details = {
        **done.details,
        "rawScore": reply["overall_score"],
        "criteria": {name: _normalise(reply[name], raw) for name in criteria},
    }
    return _judge_prompt.verdict(_normalise(reply["overall_score"], raw), threshold, reply.get("reasoning"), details)


def main() -> None:
    from ._standalone import main as run

    run(sys.modules[__name__], "prompt")


if __name__ == "__main__":
    main()
