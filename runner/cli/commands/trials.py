"""``waza trials``: every prompt run k times, each trial in a fresh session and workspace.

The run itself (collection per prompt, the resume sidecar) is the API's
``TrialsRun`` (``runner/trial_runs.py``); this module parses the options and
reports the summary.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import msgspec
import orjson
import typer

from waza.protocol.trial_records import TrialsSummary
from waza.runner.analysis.passk import parse_k_values
from waza.runner.analysis.trial_stats import describe
from waza.runner.cli.executor_options import ExecutorOptions
from waza.runner.cli.metavars import option
from waza.runner.cli.option_values import parse_gates
from waza.runner.cli.options import AgentCommandArgument, AgentOptions, GraderOptions, OutputOptions, PromptsArgument, with_groups
from waza.runner.cli.runtime import EXIT_FAILED, EXIT_OK, Interrupt, run
from waza.runner.cli.strict import AGENT_COMMAND
from waza.runner.engine.cache_summary import print_cache_line
from waza.runner.engine.outputs import missed_gates
from waza.runner.engine.specs import Workspace
from waza.runner.engine.trial_runs import check_policy
from waza.runner.engine.trials import TrialsRun
from waza.runner.ray_cluster import executor_for
from waza.runner.wording import count

HELP = """Run each prompt k times (fresh agent session and workspace per trial); report pass@k and pass^k.

One TrialResult line per prompt, written when its last trial finishes: every
trial, the pass rate, and for each k in --k-values the unbiased estimators
pass@k = 1 - C(n-c,k)/C(n,k) and pass^k = C(c,k)/C(n,k) (n trials that count,
c passes; null when k > n). Errored trials (agent or grader fault) are left
out of n by default (--errors exclude) or counted as fails (--errors fail).
The run summary (mean pass@k and pass^k over prompts with bootstrap CIs, flaky
prompts) goes to stderr, and with --summary FILE to a TrialsSummary JSON file.

Examples:

  waza trials prompts.jsonl -k 5 --adapter exec --grader builtin:hint -o trials.jsonl -- python3 my_agent.py   # your agent

  waza trials prompts.jsonl -k 10 --k-values 1,5,10 -j 4 -g ./check.py --summary summary.json -o trials.jsonl --resume -- npx my-acp-agent
"""


def register(app: typer.Typer) -> None:
    @app.command(
        "trials",
        help=HELP,
        **AGENT_COMMAND,
    )
    @with_groups(agent=AgentOptions, graders=GraderOptions, out=OutputOptions, execution=ExecutorOptions)
    def trials(
        prompts: PromptsArgument,
        command: AgentCommandArgument = None,
        k: Annotated[int, option("-k", "--trials", help="Trials per prompt (at most 10000).", min=1)] = 5,
        k_values: Annotated[str | None, option("--k-values", help="k values to estimate, e.g. 1,3,5 (default: 1..k).")] = None,
        errors: Annotated[str, option("--errors", help="Errored trials: exclude (from n) or fail (count as fails).")] = "exclude",
        seed: Annotated[int, option("--seed", help="Seed of the bootstrap confidence intervals.")] = 0,
        summary: Annotated[
            Path | None, option("--summary", help="Also write the run summary (TrialsSummary JSON) to FILE.")
        ] = None,
        *,
        agent: AgentOptions,
        graders: GraderOptions,
        out: OutputOptions,
        execution: ExecutorOptions,
    ) -> None:
        async def body(interrupt: Interrupt) -> int:
            options = TrialOptions(k=k, k_values=parse_k_values(k_values, k), errors=errors, seed=seed, summary=summary)
            return await _trials(prompts, command or [], options, agent, graders, out, execution, interrupt)

        raise typer.Exit(run(body))


class TrialOptions(msgspec.Struct, frozen=True):
    """The options only ``waza trials`` has (the shared groups travel separately)."""

    k: int
    k_values: list[int]
    errors: str
    seed: int
    summary: Path | None


async def _trials(
    prompts: str,
    command: list[str],
    options: TrialOptions,
    agent: AgentOptions,
    graders: GraderOptions,
    out: OutputOptions,
    execution: ExecutorOptions,
    interrupt: Interrupt,
) -> int:
    # Everything that can be wrong is found here, before the output file is touched.
    gates = parse_gates(out.fail_under)
    trials = TrialsRun.prepare(
        prompts,
        agent.spec(command),
        graders.specs(),
        k=options.k,
        k_values=options.k_values,
        errors=check_policy(options.errors),
        seed=options.seed,
        timeouts=agent.timeouts(graders.grader_timeout),
        concurrency=agent.concurrency,
        workspace=Workspace(root=agent.workspace_dir, fresh=True, template=agent.cwd),
        output=out.spec(),
        limits=out.limits(agent),
        summary=options.summary,
        table=agent.table(),
        executor=executor_for(execution.ray(agent.concurrency)),
    )
    sidecar = trials.sidecar
    interrupt.summary = lambda: (
        f"{count(trials.builder.prompts, 'prompt')} written to {out.output}"
        + (f"; trials of unfinished prompts kept in {sidecar}; rerun with --resume to finish" if sidecar else "")
    )
    async for _ in trials.stream():
        pass
    trials.errors.print()
    return report(trials.summary(), options.summary, gates, skipped=len(trials.finished))


def report(summary: TrialsSummary, summary_file: Path | None, gates: dict[str, float], *, skipped: int = 0) -> int:
    """Print the summary on stderr (and to --summary FILE) and choose the exit code."""
    lines = describe(summary)
    if skipped:
        lines[0] += f" ({count(skipped, 'prompt')} from the earlier run included)"
    for line in lines:
        print(f"waza: {line}", file=sys.stderr)
    print_cache_line()
    if summary_file is not None:
        summary_file.write_bytes(orjson.dumps(summary.to_dict(), option=orjson.OPT_INDENT_2) + b"\n")
    actual = {
        "pass_rate": summary.pass_rate.estimate if summary.pass_rate else None,
        "score": summary.mean_score.estimate if summary.mean_score else None,
    }
    missed = missed_gates(gates, actual)
    if missed:
        print(f"waza: --fail-under not met: {'; '.join(missed)}", file=sys.stderr)
        return EXIT_FAILED
    return EXIT_FAILED if summary.errored else EXIT_OK
