"""What the LLM graders share: the judge's view of a result, the exchange, the strict reply check.

The judge sees the task input (every user turn), the agent's final output, the
hint and the reference when the prompt has them, and the trajectory as chosen
by ``trajectory``: ``none``, ``tools`` (one line per tool call, the default) or
``full`` (one line per step). Long texts are cut with a marker, so a huge
transcript cannot blow the judge's context.

A reply must be exactly one JSON object (a single fenced ```json block around
it is tolerated, nothing else) that matches the reply schema; anything else is
a :class:`JudgeError`, so an error grade, with the start of the reply in the
message and the whole exchange never turned into a guess.

Judge answers are kept in the model cache (``waza.protocol.io.model_cache``)
unless the config says ``cache: false`` (``--no-cache``): the same exchange
asked again is answered from disk. A reply is kept only once it passed the
checks above, so an error is never replayed; a kept entry is checked again
when read, and one that fails (torn, edited by hand) is asked again.
"""

from __future__ import annotations

import re
from typing import Any

import msgspec
import orjson
from jsonschema import Draft202012Validator

from waza.protocol.errors import ConfigError
from waza.protocol.io import model_cache
from waza.protocol.records import GraderRequest, GraderResult

from . import _judge_client, _rubric
from ._judge_client import JudgeError, JudgeSettings
from ._rubric import Rubric

DEFAULT_THRESHOLD = 0.75
TEXT_LIMIT = 8000
STEP_LIMIT = 80
LINE_LIMIT = 300

SYSTEM = (
    "You are an impartial evaluator of an AI agent's work. Judge only what is shown, "
    "follow the rubric exactly, and be critical: do not reward length or confidence."
)

_FENCE = re.compile(r"^```(?:json)?\s*\n(?P<body>.*)\n```$", re.DOTALL)


class Exchange(msgspec.Struct):
    """A finished judge exchange: the checked reply and the details to keep in the grade."""

    reply: dict[str, Any]
    details: dict[str, Any]
    text: str


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit] + f" [... {len(text) - limit} more characters]"


def _one_line(value: Any) -> str:
    text = value if isinstance(value, str) else orjson.dumps(value).decode()
    return _cut(" ".join(text.split()), LINE_LIMIT)


def trajectory_text(steps: list[Any], mode: str) -> str:
    if mode == "none":
        return ""
    lines = []
    for step in steps:
        if not isinstance(step, dict):
            continue
        kind = step.get("type")
        if kind == "tool_call":
            name = step.get("name") or step.get("title") or "tool"
            lines.append(f"- tool {name} [{step.get('status', '?')}]: {_one_line(step.get('input'))}")
        elif mode == "full" and step.get("content"):
            who = step.get("role") or kind
            lines.append(f"- {kind} ({who}): {_one_line(step['content'])}")
    if len(lines) > STEP_LIMIT:
        lines = [*lines[:STEP_LIMIT], f"- [... {len(lines) - STEP_LIMIT} more steps]"]
    return "\n".join(lines)


def context_text(request: GraderRequest, *, trajectory: str = "tools", reference: str | None = None) -> str:
    """The evidence block of the judge prompt, in a fixed order with Markdown headings."""
    turns = [request.input] if isinstance(request.input, str) else list(request.input)
    parts = []
    for i, turn in enumerate(turns):
        heading = "Task" if len(turns) == 1 else f"User turn {i + 1}"
        parts.append(f"## {heading}\n{_cut(turn, TEXT_LIMIT)}")
    parts.append(f"## Agent output\n{_cut(request.output, TEXT_LIMIT) or '(empty)'}")
    hint = request.hint if request.hint is not None else request.expected
    if hint:
        parts.append(f"## Hint (what a good answer contains)\n{_cut(hint, TEXT_LIMIT)}")
    reference = reference if reference is not None else request.reference
    if reference:
        parts.append(f"## Reference answer\n{_cut(reference, TEXT_LIMIT)}")
    steps = trajectory_text(request.trajectory, trajectory)
    if steps:
        parts.append(f"## What the agent did\n{steps}")
    return "\n\n".join(parts)


def reply_instruction(schema: dict[str, Any]) -> str:
    return (
        "Reply with one JSON object and nothing else, matching this JSON Schema "
        "(keep the reasoning under 60 words):\n" + orjson.dumps(schema).decode()
    )


def decode_reply(text: str) -> Any:
    body = text.strip()
    fenced = _FENCE.match(body)
    if fenced:
        body = fenced["body"].strip()
    try:
        return orjson.loads(body)
    except orjson.JSONDecodeError:
        raise JudgeError(f"judge reply is not one JSON object; it starts {_cut(text.strip(), 120)!r}") from None


def check_reply(value: Any, schema: dict[str, Any], text: str) -> dict[str, Any]:
    """The reply if it fits ``schema`` (extra keys allowed: a judge may say more than asked)."""
    lenient = {**schema, "additionalProperties": True}
    error = next(iter(Draft202012Validator(lenient).iter_errors(value)), None)
    if error is not None:
        where = ".".join(str(p) for p in error.absolute_path) or "reply"
        raise JudgeError(
            f"judge reply does not fit the expected JSON ({where}: {error.message}); it starts {_cut(text.strip(), 120)!r}"
        )
    fits: dict[str, Any] = value  # the schema is an object's
    return fits


def _capped(schema: dict[str, Any], limit: int | None) -> dict[str, Any]:
    """The schema sent to the judge, with the reasoning's length capped when asked (the reply check is not)."""
    if limit is None or "reasoning" not in schema["properties"]:
        return schema
    properties = {**schema["properties"], "reasoning": {"type": "string", "maxLength": limit}}
    return {**schema, "properties": properties}


async def exchange(
    request: GraderRequest, instructions: str, schema: dict[str, Any], *, reference: str | None = None, json_reply: bool = True
) -> Exchange:
    """Ask the configured judge about ``request``; with ``json_reply`` the reply is checked against ``schema``."""
    settings = JudgeSettings.from_config(request.config)
    evidence = context_text(request, trajectory=request.config.get("trajectory", "tools"), reference=reference)
    tail = reply_instruction(schema) if json_reply else ""
    messages = [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": "\n\n".join(p for p in (instructions, evidence, tail) if p)},
    ]
    sent = _capped(schema, request.config.get("reasoning_max_chars")) if json_reply else None
    key = model_cache.key_of(_judge_client.cache_key(settings, messages, sent)) if request.config.get("cache", True) else None
    if key is not None:
        entry = model_cache.load(key)
        kept = _judge_client.JudgeReply.from_cache(entry) if entry is not None else None
        if kept is not None:
            try:
                value = _checked(kept, schema, settings) if json_reply else {}
            except JudgeError:
                pass  # an entry that does not hold a usable answer (torn, edited): asked again below
            else:
                model_cache.count("judge", hit=True)
                return Exchange(reply=value, details=kept.details(messages, settings), text=kept.text)
        model_cache.count("judge", hit=False)
    reply = await _judge_client.ask(settings, messages, sent)
    if key is not None:
        reply.cache = "miss"
    details = reply.details(messages, settings)
    value = _checked(reply, schema, settings) if json_reply else {}
    if key is not None:  # only a usable reply is kept: an error is asked again next time
        model_cache.store(key, reply.cached())
    return Exchange(reply=value, details=details, text=reply.text)


def _checked(reply: _judge_client.JudgeReply, schema: dict[str, Any], settings: JudgeSettings) -> dict[str, Any]:
    """The reply's JSON object if it fits ``schema``, else a JudgeError saying why (and when it was cut short)."""
    try:
        return check_reply(decode_reply(reply.text), schema, reply.text)
    except JudgeError as exc:
        if reply.finish_reason == "length":
            raise JudgeError(f"{exc} (the reply was cut at max_tokens={settings.max_tokens}; raise max_tokens)") from None
        raise


def verdict(score: float, threshold: float, reasoning: Any, details: dict[str, Any]) -> GraderResult:
    """Pass at or above the threshold; the judge's exchange and the threshold go into details."""
    score = min(1.0, max(0.0, float(score)))
    return GraderResult(
        passed=score >= threshold,
        score=round(score, 6),
        reasoning=reasoning if isinstance(reasoning, str) else "",
        details={**details, "threshold": threshold},
    )


def one_to_five(value: float) -> float:
    """The reference's normalisation of a 1-5 score: 1 -> 0.0, 3 -> 0.5, 5 -> 1.0."""
    return (value - 1) / 4


def score_schema(key: str = "score") -> dict[str, Any]:
    """A reply with reasoning first (so the judge explains before it scores) and a 1-5 score."""
    return {
        "type": "object",
        "properties": {"reasoning": {"type": "string"}, key: {"type": "integer", "minimum": 1, "maximum": 5}},
        "required": ["reasoning", key],
        "additionalProperties": False,
    }


def rating_schema(rating: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {"reasoning": {"type": "string"}, "rating": rating},
        "required": ["reasoning", "rating"],
        "additionalProperties": False,
    }


def check_judge_config(config: dict[str, Any]) -> None:
    """Config checks a JSON Schema cannot express, shared by the LLM graders."""
    if config.get("base_url") and config.get("command"):
        raise ConfigError("give the judge base_url or command, not both", field="command")
    if "rubric" in config:
        _rubric.load(config["rubric"])


async def rubric_grade(request: GraderRequest, rubric: Rubric, lead: str, *, reference: str | None = None) -> GraderResult:
    """Judge against a rubric: a 1-5 score normalised to [0, 1], or the rubric's own rating levels."""
    threshold = request.config.get("threshold", DEFAULT_THRESHOLD)
    instructions = f"{lead}\n\n## Rubric\n{rubric.text}"
    if rubric.levels:
        done = await exchange(request, instructions, rating_schema(rubric.rating_schema()), reference=reference)
        raw = done.reply["rating"]
        score = rubric.score_of(raw)
    else:
        done = await exchange(request, instructions, score_schema(), reference=reference)
        raw = done.reply["score"]
        score = one_to_five(raw)
    details = {**done.details, "rawScore": raw}
    if rubric.source:
        details["rubric"] = rubric.source
    return verdict(score, threshold, done.reply.get("reasoning"), details)
