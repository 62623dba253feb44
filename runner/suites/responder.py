"""The responder: a model that plays the user of a task, from the task's instructions.

After each agent turn it is shown the conversation so far and answers with one
JSON object: ``reply`` (its ``message`` is the next user turn), ``stop`` (the
agent is done, or asks nothing) or ``abstain`` (the agent asks what the brief
does not say; the trial fails with the outcome ``abstained`` rather than the
model making something up). The model is reached through the LLM graders' judge
client (an OpenAI-compatible endpoint, a judge command, a local model server,
``waza serve-model``), so a responder runs offline wherever a judge does.

What the agent said is untrusted text: each message is cut to
``MESSAGE_CHARS`` and the transcript to its last ``TRANSCRIPT_CHARS``, and a
reply that is not the JSON object asked for is an error of the trial, never a
guess.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import AsyncIterator, Mapping
from pathlib import Path
from typing import Any, Literal

import msgspec

from waza.graders._judge_client import JudgeError, JudgeSettings, ask
from waza.protocol.errors import ConfigError
from waza.protocol.records import TrajectoryStep
from waza.runner.suites.models import Responder

__all__ = ["Decision", "ResponderError", "decide", "place", "serving_local"]

MESSAGE_CHARS = 8_000
TRANSCRIPT_CHARS = 48_000

SYSTEM = """\
You are testing an AI agent by playing its user. Your brief (all you want and all you know):

{instructions}

You are shown the conversation so far. Decide what the user does next, and answer with one JSON object only:
- {{"action": "reply", "message": "..."}}: the agent asked you something or needs more from you; answer as the user,
  from your brief only, in a few sentences.
- {{"action": "stop"}}: the agent has done what you asked, or it asks you nothing.
- {{"action": "abstain", "reason": "..."}}: the agent asks something your brief does not tell you; do not make it up,
  say what is missing."""

#: The reply's shape, for endpoints that constrain replies with a JSON schema.
SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "action": {"type": "string", "enum": ["reply", "stop", "abstain"]},
        "message": {"type": "string"},
        "reason": {"type": "string"},
    },
    "required": ["action"],
    "additionalProperties": False,
}


class ResponderError(RuntimeError):
    """The responder could not be asked, or did not answer as told; the trial is an error."""


class Decision(msgspec.Struct, forbid_unknown_fields=True):
    """What the responder chose after an agent turn."""

    action: Literal["reply", "stop", "abstain"]
    message: str = ""
    reason: str = ""


def transcript(steps: list[TrajectoryStep]) -> str:
    """The user's and the agent's messages, in order, each cut to MESSAGE_CHARS, the whole to its tail."""
    lines = []
    for step in steps:
        if step.type == "message" and step.content:
            who = "User" if step.role == "user" else "Agent"
            lines.append(f"{who}: {step.content[:MESSAGE_CHARS]}")
    text = "\n\n".join(lines)
    return text if len(text) <= TRANSCRIPT_CHARS else "[earlier conversation cut]\n" + text[-TRANSCRIPT_CHARS:]


def parse(text: str) -> Decision:
    """The decision in a reply: the JSON object, fenced or not; ResponderError when there is none."""
    found = re.search(r"\{.*\}", text, re.DOTALL)
    if found is None:
        raise ResponderError(f"the responder's reply is not a JSON object: {text[:200]!r}")
    try:
        decision = msgspec.json.decode(found.group(0), type=Decision)
    except msgspec.DecodeError as exc:
        raise ResponderError(f"the responder's reply is not a decision ({exc}): {text[:200]!r}") from None
    if decision.action == "reply" and not decision.message.strip():
        raise ResponderError("the responder chose reply with an empty message")
    return decision


async def decide(responder: Responder, steps: list[TrajectoryStep]) -> Decision:
    """Ask the responder's model what the user does after the conversation in ``steps``."""
    config = dict(responder.judge)
    if responder.model is not None:
        config["model"] = responder.model
    messages = [
        {"role": "system", "content": SYSTEM.format(instructions=responder.instructions)},
        {"role": "user", "content": f"The conversation so far:\n\n{transcript(steps)}\n\nWhat does the user do next?"},
    ]
    try:
        reply = await ask(JudgeSettings.from_config(config), messages, SCHEMA)
    except JudgeError as exc:
        raise ResponderError(f"the responder's model: {exc}") from None
    return parse(reply.text)


def place(responders: list[Responder], choice: Mapping[str, Any] | None) -> None:
    """Point every responder at the run's judge (its model stays the responder's own when it names one);
    a responder with no judge to ask is a configuration error, before anything runs."""
    if not responders:
        return
    where = {} if choice is None else {k: v for k, v in choice.items() if k != "cache"}
    if not {"base_url", "command", "judge"} & set(where):
        raise ConfigError("inputs.responder needs a model to play the user: give Judge.base_url, Judge.command or Judge.local")
    for responder in responders:
        responder.judge = dict(where)


@contextlib.asynccontextmanager
async def serving_local(responders: list[Responder]) -> AsyncIterator[None]:
    """For the run, the local model server the responders chose with ``judge: local`` (shared with the
    local judges of the LLM graders), each responder pointed at its URL."""
    local = [r for r in responders if r.judge.get("judge") == "local"]
    if not local:
        yield
        return
    from waza.runner.local_model.server import MODEL_NAME, resolve_model, shared

    path = local[0].judge.get("model_path")
    async with shared(resolve_model(Path(path) if path else None)).use() as url:
        for r in local:
            r.judge = {
                **{k: v for k, v in r.judge.items() if k not in ("judge", "model_path")},
                "base_url": url,
                "model": MODEL_NAME,
            }
        yield
