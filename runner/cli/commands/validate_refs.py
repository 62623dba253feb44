"""``waza validate-refs``: grade each prompt's reference solution as if the agent had written it.

A reference that fails its own grader means the task or the grader is broken,
and every score measured with them is suspect; this finds those before any
agent runs. Each checked reference is written as a CaptureResult (adapter
``reference``), so the usual tools (report, summarize, jq) read the output.
"""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from typing import Annotated

import typer

from waza.protocol.errors import ConfigError
from waza.protocol.jsonl import display_name
from waza.protocol.records import CaptureResult
from waza.runner.cli.metavars import argument, option
from waza.runner.cli.options import GraderOptions, with_groups
from waza.runner.cli.runtime import EXIT_FAILED, EXIT_OK, Interrupt, run
from waza.runner.engine.inputs import PromptFile
from waza.runner.engine.outputs import ResultWriter
from waza.runner.engine.pipeline import entered, grade_stream
from waza.runner.wording import count

SHOWN = 50

HELP = """Grade each prompt's `reference` as if it were the agent's output; list the ones that fail.

Exit 1 when any reference fails or its grading errors (the task or the grader
is broken). Prompts without a reference are listed and skipped. One
CaptureResult line per checked reference goes to -o (default stdout).

Examples:

  waza validate-refs prompts.jsonl --grader builtin:hint

  waza validate-refs prompts.jsonl -g ./check.py -j 4 -o refs.jsonl
"""


class ReferenceWriter(ResultWriter):
    """Writes every graded reference and remembers the ones that did not pass."""

    def __init__(self, path: str) -> None:
        super().__init__(path)
        self.broken: list[CaptureResult] = []

    def write(self, result: CaptureResult) -> None:
        super().write(result)
        if result.status in ("failed", "error"):
            self.broken.append(result)


def register(app: typer.Typer) -> None:
    @app.command("validate-refs", help=HELP)
    @with_groups(graders=GraderOptions)
    def validate_refs(
        prompts: Annotated[str, argument(metavar="PROMPTS", value="FILE", help="Prompts JSONL file, or - for stdin.")] = "-",
        concurrency: Annotated[int, option("-j", "--concurrency", help="References graded at once.", min=1)] = 1,
        output: Annotated[str, option("-o", "--output", help="Results JSONL file, or - for stdout.")] = "-",
        *,
        graders: GraderOptions,
    ) -> None:
        raise typer.Exit(run(lambda interrupt: _validate(prompts, concurrency, output, graders, interrupt)))


async def _validate(prompts: str, concurrency: int, output: str, graders: GraderOptions, interrupt: Interrupt) -> int:
    runners = graders.runners()
    if not runners:
        raise ConfigError("validate-refs needs at least one --grader")
    prompt_file = PromptFile(prompts)
    prompt_file.scan()
    without: list[str] = []

    async def references() -> AsyncIterator[CaptureResult]:
        async for case in prompt_file.stream():
            if case.reference is None:
                without.append(case.id)
                continue
            yield CaptureResult(
                id=case.id,
                input=case.input,
                output=case.reference,
                hint=case.hint,
                reference=case.reference,
                metadata=case.metadata,
                adapter="reference",
                unknown=dict(case.unknown),
            )

    writer = ReferenceWriter(output)
    interrupt.summary = lambda: f"{writer.tally.total} references checked"
    try:
        async with entered(runners):
            await grade_stream(references(), runners, concurrency, writer)
    finally:
        writer.close()
    if writer.tally.total == 0:
        raise ConfigError(f"{display_name(prompts)}: no prompt has a `reference` to validate")
    print(f"waza: {writer.tally.describe('reference checked', 'references checked')}", file=sys.stderr)
    if without:
        more = f" and {len(without) - SHOWN} more" if len(without) > SHOWN else ""
        print(
            f"waza: {count(len(without), 'prompt')} {'has' if len(without) == 1 else 'have'} no reference (skipped): {', '.join(without[:SHOWN])}{more}",
            file=sys.stderr,
        )
    for result in writer.broken:
        why = result.score.reasoning if result.score else ""
        details = "; ".join(g.error or g.reasoning for g in result.grades if g.status in ("failed", "error"))
        print(f"waza: reference of {result.id!r} {result.status}: {details or why}", file=sys.stderr)
    return EXIT_FAILED if writer.broken else EXIT_OK
