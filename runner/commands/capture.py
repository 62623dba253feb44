"""``waza capture``: prompts through an agent, trajectories recorded, results graded."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Annotated

import typer

from ..cli_strict import AGENT_COMMAND
from waza.protocol.records import PromptCase

from ..cli_options import AgentOptions, GraderOptions, OutputOptions, with_groups
from ..grader_runners import GraderRunner
from ..inputs import check_resumed, prescan, prompt_cases
from ..outputs import ResultWriter, parse_gates, resume_state
from ..pipeline import Settings, WorkItem, Workspaces, run_items
from ..progress import Progress, wanted
from ..runtime import EXIT_FAILED, EXIT_OK, Interrupt, run

HELP = """Run each prompt through an agent, record what it did, and grade the result.

One CaptureResult line is written (and flushed) per prompt as it finishes.
The agent command comes after the prompts file; put it after -- when it has
flags of its own. The default adapter speaks ACP to the agent command.

Examples:

  waza capture prompts.jsonl --grader ./check.py -o results.jsonl -- npx @zed-industries/claude-code-acp

  waza capture prompts.jsonl --adapter exec --grader builtin:hint -j 4 -- ./agent.sh --fast

  waza capture prompts.jsonl --adapter headless --schema claude-code --grader ./g.py

  waza capture prompts.jsonl --adapter http --base-url http://127.0.0.1:8080/v1 --model m -g builtin:hint

  waza capture prompts.jsonl --adapter replay --from old-results.jsonl --grader ./new_grader.py
"""


@contextlib.asynccontextmanager
async def entered(runners: list[GraderRunner]) -> AsyncIterator[list[GraderRunner]]:
    """Start every grader runner (worker pools) for the run and stop them after."""
    async with contextlib.AsyncExitStack() as stack:
        for r in runners:
            await stack.enter_async_context(r)
        yield runners


def register(app: typer.Typer) -> None:
    @app.command(
        "capture",
        help=HELP,
        **AGENT_COMMAND,
    )
    @with_groups(agent=AgentOptions, graders=GraderOptions, out=OutputOptions)
    def capture(
        prompts: Annotated[str, typer.Argument(help="Prompts file (JSONL, CSV or Parquet), or - for stdin.", show_default=False)],
        command: Annotated[list[str] | None, typer.Argument(help="Agent command and its arguments.", show_default=False)] = None,
        *,
        agent: AgentOptions,
        graders: GraderOptions,
        out: OutputOptions,
    ) -> None:
        raise typer.Exit(run(lambda interrupt: _capture(prompts, command or [], agent, graders, out, interrupt)))


async def _capture(
    prompts: str, command: list[str], agent: AgentOptions, graders: GraderOptions, out: OutputOptions, interrupt: Interrupt
) -> int:
    # Everything that can be wrong is found here, before the output file is touched.
    unit = agent.timeout_unit()
    table = agent.table()
    ids = prescan(prompts, unit, table)
    adapter, opts, command = agent.resolve(command)
    runners = graders.runners()
    gates = parse_gates(out.fail_under)
    done = {key[0] for key in resume_state(out.output) if isinstance(key[0], str)} if out.resume else set()
    check_resumed(out.output, done, ids, prompts)
    settings = Settings(
        adapter=adapter,
        command=command,
        opts=opts,
        graders=runners,
        concurrency=agent.concurrency,
        timeout=agent.timeout,
        workspaces=Workspaces(cwd=(agent.cwd or Path.cwd()), root=agent.workspace_dir),
    )
    if agent.workspace_dir is not None:
        agent.workspace_dir.mkdir(parents=True, exist_ok=True)
    todo = None if ids is None else len(ids) - len(done)
    progress = Progress(todo, enabled=wanted(out.progress), label="capture")
    writer = ResultWriter(out.output, append=out.resume, progress=progress)
    interrupt.summary = lambda: (
        f"{writer.tally.total} results written to {out.output}"
        + (f", {todo - writer.tally.total} prompts not run" if todo is not None else "")
        + ("; rerun with --resume to finish" if out.output != "-" else "")
    )

    skipped: list[str] = []

    def keep(case: PromptCase) -> bool:
        if case.id in done:
            skipped.append(case.id)  # counted only when the prompt is really there
            return False
        return True

    async def items() -> AsyncIterator[WorkItem]:
        async for case in prompt_cases(prompts, keep=keep, timeout_unit=unit, table=table):
            yield WorkItem(case=case)

    try:
        async with entered(runners):
            await run_items(items(), settings, writer)
    finally:
        writer.close()
        progress.close()
    return finish(writer, gates, skipped=len(skipped))


def finish(writer: ResultWriter, gates: dict[str, float], *, skipped: int = 0) -> int:
    """Print the run summary on stderr and choose the exit code."""
    tally = writer.tally
    line = tally.describe()
    if skipped:
        line += f" ({skipped} already done, skipped)"
    rate, score = tally.pass_rate(), tally.mean_score()
    if rate is not None:
        line += f"; pass rate {rate:.3f}"
    if score is not None:
        line += f", mean score {score:.3f}"
    print(f"waza: {line}", file=sys.stderr)
    writer.errors.print()
    missed = tally.missed_gates(gates)
    if missed:
        print(f"waza: --fail-under not met: {'; '.join(missed)}", file=sys.stderr)
        return EXIT_FAILED
    if tally.statuses["error"]:
        return EXIT_FAILED
    return EXIT_OK

