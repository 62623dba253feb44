"""A tiny scripted agent for ``waza demo``: no model, no network, real trajectory events.

It reads the prompt on stdin and prints JSONL events in waza's exec ``--events``
format: a thought, a tool call (pending, then completed), and a message. It
knows a few facts, remembers a name across turns (via WAZA_HISTORY), and gets
one question deliberately wrong so the demo shows a failing grade too.
"""

from __future__ import annotations

import os
import re
import sys

import orjson

FACTS = {
    "capital of france": "The capital of France is Paris.",
    "boiling point of water in fahrenheit": "Water boils at 100 degrees.",  # wrong on purpose
    "largest planet": "Jupiter is the largest planet in the solar system.",
}


def emit(**event: object) -> None:
    sys.stdout.buffer.write(orjson.dumps(event) + b"\n")
    sys.stdout.flush()


def answer(prompt: str, history: list[dict[str, str]]) -> str:
    text = prompt.lower()
    if m := re.search(r"(-?\d+)\s*([+*-])\s*(-?\d+)", text):
        a, op, b = int(m[1]), m[2], int(m[3])
        emit(
            type="tool_call", toolCallId="calc-1", name="calculator", kind="execute", status="pending", input={"expression": m[0]}
        )
        value = a + b if op == "+" else a - b if op == "-" else a * b
        emit(type="tool_call", toolCallId="calc-1", status="completed", output={"value": value})
        return f"{m[0]} = {value}"
    if m := re.search(r"my name is (\w+)", text):
        return f"Nice to meet you, {m[1].title()}."
    if "what is my name" in text:
        for turn in history:
            if n := re.search(r"my name is (\w+)", turn["content"].lower()):
                return f"Your name is {n[1].title()}."
        return "I don't know your name."
    for key, reply in FACTS.items():
        if key in text:
            emit(type="tool_call", toolCallId="lookup-1", name="lookup", kind="search", status="pending", input={"query": key})
            emit(type="tool_call", toolCallId="lookup-1", status="completed", output={"found": True})
            return reply
    return "I am only a demo agent and do not know that."


def main() -> None:
    prompt = sys.stdin.read()
    history = orjson.loads(os.environ.get("WAZA_HISTORY", "[]"))
    emit(type="thought", content=f"The user asked: {prompt.strip()}")
    emit(type="message", content=answer(prompt, history))
    emit(type="usage", inputTokens=len(prompt.split()), outputTokens=12)


if __name__ == "__main__":
    main()
