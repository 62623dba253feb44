"""``waza demo``: the main job end to end on built-in data, with no API key and no network."""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path
from typing import Annotated, Any

import orjson
import typer

from waza.runner.cli.metavars import option
from waza.runner.cli.run_summary import finish_run
from waza.runner.cli.runtime import Interrupt, run
from waza.runner.engine.capture import CaptureRun
from waza.runner.engine.specs import Builtin, ExecAgent, Output, PythonGrader, Timeouts
from waza.runner.wording import count

PROMPTS = [
    {"id": "arithmetic", "input": "What is 17 + 25?", "hint": "42"},
    {"id": "capital", "input": "What is the capital of France?", "hint": "Paris"},
    {"id": "boiling-point", "input": "What is the boiling point of water in Fahrenheit?", "hint": "212"},
    {"id": "memory", "input": ["Hi, my name is Ada.", "What is my name?"], "hint": "Ada"},
]

HELP = """Run waza's main job on built-in data: a scripted agent answers four prompts,
its trajectory is recorded, and two graders judge each answer (one fails on purpose).

Examples:

  waza demo

  waza demo -o demo.jsonl && jq -c '{id, status, output}' demo.jsonl
"""


def concise(request: dict[str, Any]) -> dict[str, Any]:
    """A Python-function grader: pass when the answer is short and no tool call failed."""
    short = len(request["output"]) <= 200
    ok = short and not request.get("toolErrors")
    return {"pass": ok, "score": 1.0 if ok else 0.0, "reasoning": "short and clean" if ok else "too long or a tool failed"}


async def _demo(prompts: Path, output: str, interrupt: Interrupt) -> int:
    capture = CaptureRun.prepare(
        prompts,
        ExecAgent(command=(sys.executable, "-m", "waza.runner.cli.demo_agent"), events=True),
        [Builtin(grader="hint"), PythonGrader(fn=f"{__name__}:concise")],
        timeouts=Timeouts(prompt=30),
        output=Output(output),
    )
    interrupt.summary = lambda: f"{count(capture.tally.total, 'result')} written to {output}"
    await capture.run_to()
    # The gate expects exactly the one deliberate failure: 3 of 4 must pass, and nothing may error.
    return finish_run(capture.tally, {"pass_rate": 0.75}, errors=capture.errors)


def register(app: typer.Typer) -> None:
    @app.command("demo", help=HELP)
    def demo(
        output: Annotated[str, option("-o", "--output", help="Results file, or - for stdout.")] = "-",
    ) -> None:
        with tempfile.TemporaryDirectory(prefix="waza-demo-") as tmp:
            prompts = Path(tmp) / "prompts.jsonl"
            prompts.write_bytes(b"".join(orjson.dumps(p) + b"\n" for p in PROMPTS))
            code = run(lambda interrupt: _demo(prompts, output, interrupt))
        print(
            "waza: the demo's 'boiling-point' prompt fails on purpose; that is what a failing grade looks like.", file=sys.stderr
        )
        raise typer.Exit(code)
