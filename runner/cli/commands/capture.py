"""``waza capture``: prompts through an agent, trajectories recorded, results graded."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated

import typer

from waza.runner.cli.executor_options import ExecutorOptions
from waza.runner.cli.metavars import option
from waza.runner.cli.option_values import parse_gates
from waza.runner.cli.options import AgentCommandArgument, AgentOptions, GraderOptions, OutputOptions, PromptsArgument, with_groups
from waza.runner.cli.runtime import Interrupt, run
from waza.runner.cli.served import served
from waza.runner.cli.strict import AGENT_COMMAND
from waza.runner.wording import count

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

  waza capture prompts.jsonl --adapter headless --schema claude-code --serve-model replies.yaml
"""


def register(app: typer.Typer) -> None:
    @app.command(
        "capture",
        help=HELP,
        **AGENT_COMMAND,
    )
    @with_groups(agent=AgentOptions, graders=GraderOptions, out=OutputOptions, execution=ExecutorOptions)
    def capture(
        prompts: PromptsArgument,
        command: AgentCommandArgument = None,
        *,
        agent: AgentOptions,
        graders: GraderOptions,
        out: OutputOptions,
        execution: ExecutorOptions,
        serve_model: Annotated[
            str | None,
            option(
                "--serve-model",
                help="Start `waza serve-model SOURCE` (a reply script, or local) for the run and point the agent at it.",
                rich_help_panel="Agent",
            ),
        ] = None,
    ) -> None:
        raise typer.Exit(
            run(
                lambda interrupt: served(
                    serve_model,
                    agent,
                    lambda env: _capture(prompts, command or [], env, agent, graders, out, execution, interrupt),
                    confined=agent.sandbox is not None,
                )
            )
        )


async def _capture(
    prompts: str,
    command: list[str],
    env: Mapping[str, str],
    agent: AgentOptions,
    graders: GraderOptions,
    out: OutputOptions,
    execution: ExecutorOptions,
    interrupt: Interrupt,
) -> int:
    # The engine is loaded here, not with the options: --help and usage errors do without it.
    from waza.runner.cli.run_summary import finish_run
    from waza.runner.engine.capture import CaptureRun
    from waza.runner.engine.specs import Workspace
    from waza.runner.ray_cluster import executor_for

    # Everything that can be wrong is found here, before the output file is touched.
    gates = parse_gates(out.fail_under)
    capture = CaptureRun.prepare(
        prompts,
        agent.spec(command, env),
        graders.specs(),
        timeouts=agent.timeouts(graders.grader_timeout),
        concurrency=agent.concurrency,
        workspace=Workspace(cwd=agent.cwd, root=agent.workspace_dir),
        output=out.spec(),
        limits=out.limits(agent),
        table=agent.table(),
        executor=executor_for(execution.ray(agent.concurrency)),
    )
    todo = capture.todo
    interrupt.summary = lambda: (
        f"{count(capture.tally.total, 'result')} written to {out.output}"
        + (f", {count(todo - capture.tally.total, 'prompt')} not run" if todo is not None else "")
        + ("; rerun with --resume to finish" if out.output != "-" else "")
    )
    await capture.run_to()
    return finish_run(capture.tally, gates, skipped=len(capture.skipped), errors=capture.errors)
