"""``waza run eval.yaml``: run an eval suite's tasks and trigger tests, score its metrics."""

from __future__ import annotations

import contextlib
import sys
from pathlib import Path
from typing import Annotated

import msgspec
import typer

from waza.adapters.specs import AcpAgent, ExecAgent, HeadlessAgent
from waza.protocol.errors import ConfigError
from waza.runner.benchmarks.loader import is_benchmark
from waza.runner.cli.executor_options import ExecutorOptions
from waza.runner.cli.metavars import argument
from waza.runner.cli.options import OUTPUT, AgentOptions, GraderOptions, note_records_on_terminal, opt, with_groups
from waza.runner.cli.runtime import EXIT_FAILED, EXIT_OK, Interrupt, fail, run
from waza.runner.cli.served import served
from waza.runner.cli.strict import AGENT_COMMAND
from waza.runner.engine.specs import AgentSpec, Output
from waza.runner.ray_cluster import executor_for
from waza.runner.suites import reporters
from waza.runner.suites.loader import load_suite
from waza.runner.suites.models import Suite
from waza.runner.suites.run import SuiteRun
from waza.runner.wording import count

HELP = """Run an eval suite: every task's trials in fresh workspaces, graded, then the trigger tests.

Writes one CaptureResult line per trial (and per trigger prompt) to -o as it
finishes, and the whole-suite result document with --reporter json:FILE.
Exit 0 when every task passed and every metric met its threshold, 1 when not,
2 when the suite is invalid (nothing runs).

Examples:

  waza run examples/snippet-explainer/eval.yaml --adapter mock --reporter json:result.json -o trials.jsonl

  waza run eval.yaml --task 'explain-*' --tags python --trials 1 --reporter markdown:report.md --adapter exec -- python3 agent.py

DIR may also be a Harbor task folder, a dataset of them, or Terminal-Bench 1.x
task folders (see the Benchmarks guide): each trial runs in --env, graded by
the task's verifier, one result line per trial.

  waza run my-dataset/ --env host --adapter oracle -o oracle.jsonl

  waza run my-dataset/ --env docker --offline --serve-model replies.yaml --adapter headless --schema claude-code
"""

RUN = "Suite"
#: The agent flags of the agents that can run in a task's environment: their specs' fields (``mcp_servers`` is
#: set by ``--mcp-server``; ``env`` by ``--serve-model``, which sets it itself).
CONFINABLE_AGENT_OPTIONS = {
    "mcp_server" if name == "mcp_servers" else name
    for spec in (ExecAgent, AcpAgent, HeadlessAgent)
    for name in spec.__struct_fields__
    if name not in ("command", "env")
}
#: The options a run of benchmark task folders honours (the adapter checks its own); any other given is refused.
BENCHMARK_OPTIONS = frozenset(
    {"suite", "command", "task", "tags", "trials", "env", "resume", "output", "reporter", "adapter", "concurrency"}
    | {"workspace_dir", "max_steps", "max_trajectory_mb", "sandbox_ro", "sandbox_rw", "sandbox_net"}
    | {"sandbox_port", "sandbox_env", "base_image", "serve_model", "offline"}
    | CONFINABLE_AGENT_OPTIONS
)


def register(app: typer.Typer) -> None:
    @app.command("run", help=HELP, **AGENT_COMMAND)
    @with_groups(agent=AgentOptions, graders=GraderOptions, execution=ExecutorOptions)
    def run_command(
        ctx: typer.Context,
        suite: Annotated[
            Path, argument(metavar="SUITE", value="FILE|DIR", help="eval.yaml, or the directory holding it.", show_default=False)
        ],
        command: Annotated[
            list[str] | None,
            argument(metavar="AGENT...", value="COMMAND", help="Agent command (adapters that need one).", show_default=False),
        ] = None,
        task: Annotated[
            list[str] | None, opt("--task", help="Only tasks whose id or name matches GLOB (repeatable).", panel=RUN)
        ] = None,
        tags: Annotated[
            list[str] | None, opt("--tags", help="Only tasks with a tag matching GLOB (repeatable).", panel=RUN)
        ] = None,
        trials: Annotated[
            int | None, opt("--trials", help="Trials per task (config: trials_per_task).", panel=RUN, min=1)
        ] = None,
        parallel: Annotated[
            bool | None,
            opt("--parallel/--no-parallel", help="Run trials at once (config: parallel).", panel=RUN, show_default=False),
        ] = None,
        workers: Annotated[
            int | None, opt("--workers", help="Trials at once when parallel (config: max_workers; default 4).", panel=RUN, min=1)
        ] = None,
        fail_fast: Annotated[
            bool | None,
            opt(
                "--fail-fast/--no-fail-fast",
                help="Stop at the first failed or errored trial (config: fail_fast).",
                panel=RUN,
                show_default=False,
            ),
        ] = None,
        context_dir: Annotated[
            Path | None, opt("--context-dir", help="Fixture root (default: fixtures/ beside eval.yaml).", panel=RUN)
        ] = None,
        keep_workspaces: Annotated[
            bool, opt("--keep-workspaces", help="Keep each trial's workspace; its path is the result's cwd.", panel=RUN)
        ] = False,
        triggers: Annotated[bool, opt("--triggers/--no-triggers", help="Run trigger_tests.yaml when present.", panel=RUN)] = True,
        trigger_trials: Annotated[
            int,
            opt("--trigger-trials", help="Runs of each trigger prompt; a trigger rate per prompt when over 1.", panel=RUN, min=1),
        ] = 1,
        env: Annotated[
            str | None,
            opt(
                "--env",
                help="Benchmark tasks: the environment they run in, host or docker (default: the best one here).",
                panel=RUN,
                metavar="KIND",
            ),
        ] = None,
        base_image: Annotated[
            list[str] | None,
            opt(
                "--base-image",
                help="Benchmark tasks under --env docker: IMAGE=LOCAL builds FROM IMAGE on LOCAL instead, recorded in each result (repeatable).",
                panel=RUN,
                metavar="IMAGE=LOCAL",
            ),
        ] = None,
        resume: Annotated[bool, opt("--resume", help="Benchmark tasks: skip the trials already in -o FILE.", panel=RUN)] = False,
        offline: Annotated[
            bool,
            opt(
                "--offline",
                help="Benchmark tasks: no network for any build, agent or verifier (what was not prepared is environment-unsatisfied).",
                panel=RUN,
            ),
        ] = False,
        serve_model: Annotated[
            str | None,
            opt(
                "--serve-model",
                help="Benchmark tasks: start `waza serve-model SOURCE` (a reply script, or local) and relay it into each environment.",
                panel=RUN,
            ),
        ] = None,
        output: Annotated[str, opt("-o", "--output", help="Per-trial CaptureResult JSONL, or - for stdout.", panel=OUTPUT)] = "-",
        reporter: Annotated[
            list[str] | None,
            opt(
                "--reporter",
                help="Also write a report file, besides the -o results: json:FILE, junit:FILE, markdown:FILE or results:FILE (the original waza's results.json) (repeatable; FILE - is stdout).",
                panel=OUTPUT,
            ),
        ] = None,
        progress: Annotated[
            bool | None,
            opt(
                "--progress/--no-progress",
                help="Progress bar on stderr (default: when a terminal).",
                panel=OUTPUT,
                show_default=False,
            ),
        ] = None,
        *,
        agent: AgentOptions,
        graders: GraderOptions,
        execution: ExecutorOptions,
    ) -> None:
        options = RunOptions(
            task=task or [],
            tags=tags or [],
            trials=trials,
            parallel=parallel,
            workers=workers,
            fail_fast=fail_fast,
            context_dir=context_dir,
            keep_workspaces=keep_workspaces,
            triggers=triggers,
            trigger_trials=trigger_trials,
            output=output,
            reporters=reporter or [],
            progress=progress,
            adapter_given=_given(ctx, "adapter"),
            workers_given=_given(ctx, "concurrency"),
        )
        if is_benchmark(suite):  # Harbor / Terminal-Bench 1.x task folders: the one dispatch point
            from waza.runner.cli.commands.benchmarks import run_benchmarks  # only for them: a suite starts without it

            ignored = [name for name in ctx.params if _given(ctx, name) and name not in BENCHMARK_OPTIONS]
            if ignored:
                flags = ", ".join("--" + name.replace("_", "-") for name in ignored)
                raise typer.Exit(fail(f"{flags}: not used with benchmark task folders (see the Benchmarks guide)"))
            raise typer.Exit(
                run(
                    lambda _: served(
                        serve_model,
                        agent,
                        lambda agent_env: run_benchmarks(
                            suite,
                            command or [],
                            agent,
                            names=options.task,
                            tags=options.tags,
                            trials=trials or 1,
                            env=env,
                            resume=resume,
                            output=output,
                            reporters=options.reporters,
                            base_images=base_image,
                            offline=offline,
                            agent_env=agent_env,
                        ),
                        confined=True,
                    )
                )
            )
        if env is not None or resume or base_image or offline or serve_model:
            raise typer.Exit(
                fail(
                    "--env, --base-image, --resume, --offline and --serve-model apply to benchmark task folders,"
                    " not to an eval suite"
                )
            )
        raise typer.Exit(run(lambda interrupt: _run(suite, command or [], options, agent, graders, execution, interrupt)))


def _given(ctx: typer.Context, name: str) -> bool:
    """Whether the option was on the command line (or in the environment), not left at its default."""
    source = ctx.get_parameter_source(name)
    return source is not None and source.name != "DEFAULT"


class RunOptions(msgspec.Struct):
    """The suite-specific options, kept together so the merge with the suite's config reads in one place."""

    task: list[str]
    tags: list[str]
    trials: int | None
    parallel: bool | None
    workers: int | None
    fail_fast: bool | None
    context_dir: Path | None
    keep_workspaces: bool
    triggers: bool
    trigger_trials: int
    output: str
    reporters: list[str]
    progress: bool | None
    #: Whether --adapter / -j were typed (they then win over the suite's executor / workers).
    adapter_given: bool
    workers_given: bool


def agent_for(suite: Suite, command: list[str], agent: AgentOptions, adapter_given: bool) -> AgentSpec:
    """The command line's adapter and command win over the suite's executor and command."""
    if agent.cwd is not None:
        raise ConfigError("--cwd does nothing with waza run: every trial gets a fresh workspace (see --keep-workspaces)")
    if agent.prompt_timeout_unit != "auto":
        raise ConfigError("--prompt-timeout-unit does nothing with waza run: a suite gives its timeouts in its own fields")
    if agent.prompts_format is not None or agent.column_map:
        raise ConfigError("--prompts-format and --map do nothing with waza run: a suite's tasks are YAML files")
    if agent.prompts_format is not None or agent.column_map:
        raise ConfigError("--prompts-format and --map do nothing with waza run: a suite's tasks are YAML files")
    if not adapter_given and suite.config.executor:
        agent.adapter = suite.config.executor
    return agent.spec(command)


def concurrency_for(suite: Suite, options: RunOptions, agent: AgentOptions) -> int:
    """-j / --workers / --parallel merged with the suite's parallel and max_workers."""
    config = suite.config
    if options.workers is not None and options.workers_given and options.workers != agent.concurrency:
        raise ConfigError("-j/--concurrency and --workers are the same setting; give one")
    parallel = config.parallel if options.parallel is None else options.parallel
    workers = options.workers or (agent.concurrency if options.workers_given else None)
    if options.parallel is False:
        return 1  # --no-parallel wins over any worker count
    return workers or (config.max_workers if parallel else 1)


async def _run(
    suite_path: Path,
    command: list[str],
    options: RunOptions,
    agent: AgentOptions,
    graders: GraderOptions,
    execution: ExecutorOptions,
    interrupt: Interrupt,
) -> int:
    # Everything that can be wrong is found before any output is touched.
    suite = load_suite(suite_path, context_dir=options.context_dir)
    spec = agent_for(suite, command, agent, options.adapter_given)
    concurrency = concurrency_for(suite, options, agent)
    note_records_on_terminal(options.output)
    run = SuiteRun.prepare(
        suite,
        spec,
        graders.specs(judge=False),  # the judge options go to the suite's LLM graders too, below
        tasks=options.task,
        tags=options.tags,
        trials=options.trials,
        concurrency=concurrency,
        fail_fast=options.fail_fast,
        keep_workspaces=options.keep_workspaces,
        workspace_root=agent.workspace_dir,
        triggers=options.triggers,
        trigger_trials=options.trigger_trials,
        timeouts=agent.timeouts(graders.grader_timeout),
        judge=graders.judge_spec(),
        isolate=graders.isolate,
        output=Output(options.output, progress=options.progress),
        executor=executor_for(execution.ray(agent.concurrency, cpus=concurrency)),
    )
    for notice in suite.notices:
        print(f"waza: {notice}", file=sys.stderr)
    outputs = reporters.parse(options.reporters, jsonl_on_stdout=options.output == "-")
    total = run.plan.total
    interrupt.summary = lambda: f"{run.tally.total} of {count(total, 'result')} written to {options.output}; no report written"
    async with contextlib.aclosing(run.stream()) as results:
        async for _ in results:
            pass
    result = run.result()
    for out in outputs:
        out.write(result)
    print(f"waza: {reporters.one_line(result)}", file=sys.stderr)
    run.errors.print()
    for reason in result.summary.missed:
        print(f"waza:   {reason}", file=sys.stderr)
    return EXIT_OK if result.summary.status == "passed" else EXIT_FAILED
