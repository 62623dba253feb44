"""``waza trials``: every prompt run k times, each trial in a fresh session and workspace.

Trials go through the capture pipeline as (prompt, trial) work items, so ``-j``
runs trials and prompts at once. A prompt's trials are held only until its
last one finishes; then its TrialResult line is written and they are dropped.

Resume is exact per trial: with ``-o FILE`` every finished trial is also
appended (as a CaptureResult line with its trial number) to the sidecar
``FILE.trials.jsonl``. ``--resume`` skips prompts already in FILE, reuses the
sidecar's trials of unfinished prompts and runs only the missing (id, trial)
pairs. The sidecar is removed when a run completes.
"""

from __future__ import annotations

import shutil
import sys
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, get_args

import orjson
import typer

from waza.protocol.errors import ConfigError
from waza.protocol.jsonl import JsonlWriter, dumps, read_records, repair_torn_tail
from waza.protocol.records import CaptureResult, PromptCase
from waza.protocol.secrets import Redactor
from waza.protocol.trial_records import ErrorPolicy, TrialEntry, TrialsSummary, TrialResult

from ..cli_strict import AGENT_COMMAND
from ..cli_options import AgentOptions, GraderOptions, OutputOptions, with_groups
from ..error_digest import ErrorDigest
from ..inputs import check_resumed, prescan, prompt_cases
from ..outputs import missed_gates, parse_gates
from ..passk import parse_k_values
from ..pipeline import Settings, WorkItem, Workspaces, run_items
from ..progress import Progress, wanted
from ..runtime import EXIT_FAILED, EXIT_OK, Interrupt, run
from ..trial_stats import SummaryBuilder, describe, trial_entry, trial_result
from .capture import entered

SIDECAR_SUFFIX = ".trials.jsonl"

HELP = """Run each prompt k times (fresh agent session and workspace per trial); report pass@k and pass^k.

One TrialResult line per prompt, written when its last trial finishes: every
trial, the pass rate, and for each k in --k-values the unbiased estimators
pass@k = 1 - C(n-c,k)/C(n,k) and pass^k = C(c,k)/C(n,k) (n trials that count,
c passes; null when k > n). Errored trials (agent or grader fault) are left
out of n by default (--errors exclude) or counted as fails (--errors fail).
The run summary (mean pass@k and pass^k over prompts with bootstrap CIs, flaky
prompts) goes to stderr, and with --summary FILE to a TrialsSummary JSON file.

Examples:

  waza trials prompts.jsonl -k 5 --adapter exec --grader builtin:hint -o trials.jsonl -- python my_agent.py

  waza trials prompts.jsonl -k 10 --k-values 1,5,10 -j 4 -g ./check.py --summary summary.json -o trials.jsonl --resume -- npx my-acp-agent
"""


def sidecar_path(output: str) -> Path | None:
    return None if output == "-" else Path(output + SIDECAR_SUFFIX)


def register(app: typer.Typer) -> None:
    @app.command(
        "trials",
        help=HELP,
        **AGENT_COMMAND,
    )
    @with_groups(agent=AgentOptions, graders=GraderOptions, out=OutputOptions)
    def trials(
        prompts: Annotated[str, typer.Argument(help="Prompts file (JSONL, CSV or Parquet), or - for stdin.", show_default=False)],
        command: Annotated[list[str] | None, typer.Argument(help="Agent command and its arguments.", show_default=False)] = None,
        k: Annotated[int, typer.Option("-k", "--trials", help="Trials per prompt.", min=1)] = 5,
        k_values: Annotated[str | None, typer.Option("--k-values", help="k values to estimate, e.g. 1,3,5 (default: 1..k).")] = None,
        errors: Annotated[str, typer.Option("--errors", help="Errored trials: exclude (from n) or fail (count as fails).")] = "exclude",
        seed: Annotated[int, typer.Option("--seed", help="Seed of the bootstrap confidence intervals.")] = 0,
        summary: Annotated[Path | None, typer.Option("--summary", help="Also write the run summary (TrialsSummary JSON) to FILE.")] = None,
        *,
        agent: AgentOptions,
        graders: GraderOptions,
        out: OutputOptions,
    ) -> None:
        async def body(interrupt: Interrupt) -> int:
            plan = Plan(trials=k, k_values=parse_k_values(k_values, k), policy=_policy(errors), seed=seed, summary=summary)
            return await _trials(prompts, command or [], plan, agent, graders, out, interrupt)

        raise typer.Exit(run(body))


def _policy(text: str) -> ErrorPolicy:
    if text not in get_args(ErrorPolicy):
        raise ConfigError(f"--errors takes exclude or fail, got {text!r}")
    return text  # type: ignore[return-value]


@dataclass(frozen=True)
class Plan:
    trials: int
    k_values: list[int]
    policy: ErrorPolicy
    seed: int
    summary: Path | None


@dataclass
class Collecting:
    """A prompt whose trials are not all finished yet."""

    case: PromptCase
    entries: dict[int, TrialEntry] = field(default_factory=dict)


def load_finished(output: str, plan: Plan, builder: SummaryBuilder) -> set[str]:
    """Ids of prompts already written to ``output``, added to the summary; they must match this run's plan."""
    path = Path(output)
    if not path.exists():
        return set()
    _repair(path)
    keys = [str(k) for k in plan.k_values]
    done: set[str] = set()
    for number, result in read_records(path, TrialResult):
        where = f"{output}:{number}"
        if result.k != plan.trials:
            raise ConfigError(f"{where}: written with -k {result.k}; resume with the same -k (this run: {plan.trials})")
        if result.error_policy != plan.policy:
            raise ConfigError(f"{where}: written with --errors {result.error_policy}; resume with the same policy")
        if list(result.pass_at_k) != keys:
            raise ConfigError(f"{where}: written with --k-values {','.join(result.pass_at_k)}; resume with the same k values")
        done.add(result.id)
        builder.add(result)
    return done


def load_partial(sidecar: Path, finished: set[str], trials: int) -> dict[str, dict[int, TrialEntry]]:
    """Trials already run for prompts that are not finished, from the sidecar."""
    if not sidecar.exists():
        return {}
    _repair(sidecar)
    partial: dict[str, dict[int, TrialEntry]] = {}
    for number, result in read_records(sidecar, CaptureResult):
        if result.id in finished:
            continue
        if result.trial is None or not 1 <= result.trial <= trials:
            raise ConfigError(f"trial must be 1..{trials} (-k)", source=str(sidecar), line=number, field="trial")
        partial.setdefault(result.id, {})[result.trial] = trial_entry(result)
    return partial


def _repair(path: Path) -> None:
    removed = repair_torn_tail(path)
    if removed:
        print(f"waza: repaired {path}: removed a torn last line ({removed} bytes)", file=sys.stderr)


def seeder(template: Path | None) -> Callable[[Path], None] | None:
    """Each trial's fresh workspace starts as a copy of --cwd (when given), so no trial sees another's changes."""
    if template is None:
        return None
    source = template.resolve()
    if not source.is_dir():
        raise ConfigError(f"--cwd {template} is not a directory")

    def prepare(workspace: Path) -> None:
        shutil.copytree(source, workspace, symlinks=True, dirs_exist_ok=True)

    return prepare


class TrialsOutput:
    """Collects trials per prompt and writes each prompt's TrialResult once its last trial is in."""

    def __init__(
        self, plan: Plan, adapter: str, output: str, *, append: bool, progress: Progress, builder: SummaryBuilder
    ) -> None:
        self.plan = plan
        self.adapter = adapter
        self.redact = Redactor()
        self.main = JsonlWriter(output, append=append)
        sidecar = sidecar_path(output)
        self.sidecar = JsonlWriter(sidecar, append=append) if sidecar else None
        self.progress = progress
        self.builder = builder
        self.open: dict[str, Collecting] = {}
        self.errors = ErrorDigest()

    def start(self, case: PromptCase, earlier: dict[int, TrialEntry]) -> list[int]:
        """Begin collecting a prompt; returns the trial numbers still to run (none: written now)."""
        self.open[case.id] = Collecting(case, dict(earlier))
        missing = [t for t in range(1, self.plan.trials + 1) if t not in earlier]
        if not missing:
            self._finish(case.id)
        return missing

    async def __call__(self, result: CaptureResult) -> None:
        if self.sidecar is not None:
            self.sidecar.write_bytes(self.redact(dumps(result)))
        self.progress.advance(result.status)
        self.errors.add(result)
        collecting = self.open[result.id]
        collecting.entries[result.trial or 1] = trial_entry(result)
        if len(collecting.entries) == self.plan.trials:
            self._finish(result.id)

    def _finish(self, prompt_id: str) -> None:
        collecting = self.open.pop(prompt_id)
        result = trial_result(
            collecting.case,
            list(collecting.entries.values()),
            k=self.plan.trials,
            k_values=self.plan.k_values,
            policy=self.plan.policy,
            adapter=self.adapter,
        )
        self.main.write_bytes(self.redact(dumps(result)))
        self.builder.add(result)

    def close(self) -> None:
        self.main.close()
        if self.sidecar is not None:
            self.sidecar.close()


async def _trials(
    prompts: str,
    command: list[str],
    plan: Plan,
    agent: AgentOptions,
    graders: GraderOptions,
    out: OutputOptions,
    interrupt: Interrupt,
) -> int:
    # Everything that can be wrong is found here, before the output file is touched.
    unit = agent.timeout_unit()
    table = agent.table()
    ids = prescan(prompts, unit, table)
    adapter, opts, command = agent.resolve(command)
    runners = graders.runners()
    if not runners:
        raise ConfigError("trials needs at least one --grader: pass@k counts the trials that pass")
    gates = parse_gates(out.fail_under)
    if plan.summary is not None and str(plan.summary) == out.output:
        raise ConfigError("--summary must be another file than -o")
    prepare = seeder(agent.cwd)
    sidecar = sidecar_path(out.output)
    builder = SummaryBuilder(plan.trials, plan.k_values, plan.policy)
    finished: set[str] = set()
    partial: dict[str, dict[int, TrialEntry]] = {}
    if out.resume:
        if sidecar is None:
            raise ConfigError("--resume needs -o FILE (it reads what that file already holds)")
        finished = load_finished(out.output, plan, builder)
        check_resumed(out.output, finished, ids, prompts)
        partial = load_partial(sidecar, finished, plan.trials)
    if agent.workspace_dir is not None:
        agent.workspace_dir.mkdir(parents=True, exist_ok=True)
    settings = Settings(
        adapter=adapter,
        command=command,
        opts=opts,
        graders=runners,
        concurrency=agent.concurrency,
        timeout=agent.timeout,
        workspaces=Workspaces(root=agent.workspace_dir, fresh=True),
    )
    todo = None if ids is None else (len(ids) - len(finished)) * plan.trials - sum(map(len, partial.values()))
    progress = Progress(todo, enabled=wanted(out.progress), label="trials")
    sink = TrialsOutput(plan, adapter.name, out.output, append=out.resume, progress=progress, builder=builder)
    interrupt.summary = lambda: (
        f"{sink.builder.prompts} prompts written to {out.output}"
        + (f"; trials of unfinished prompts kept in {sidecar}; rerun with --resume to finish" if sidecar else "")
    )

    async def items() -> AsyncIterator[WorkItem]:
        async for case in prompt_cases(prompts, keep=lambda c: c.id not in finished, timeout_unit=unit, table=table):
            for trial in sink.start(case, partial.pop(case.id, {})):
                yield WorkItem(case=case, trial=trial, prepare=prepare)

    try:
        async with entered(runners):
            await run_items(items(), settings, sink)
    finally:
        sink.close()
        progress.close()
    if sidecar is not None and not sink.open:
        sidecar.unlink(missing_ok=True)  # every prompt is in the output: nothing left to resume
    sink.errors.print()
    return report(sink.builder.build(seed=plan.seed), plan, gates, skipped=len(finished))


def report(summary: TrialsSummary, plan: Plan, gates: dict[str, float], *, skipped: int = 0) -> int:
    """Print the summary on stderr (and to --summary FILE) and choose the exit code."""
    lines = describe(summary)
    if skipped:
        lines[0] += f" ({skipped} prompts from the earlier run included)"
    for line in lines:
        print(f"waza: {line}", file=sys.stderr)
    if plan.summary is not None:
        plan.summary.write_bytes(orjson.dumps(summary.to_dict(), option=orjson.OPT_INDENT_2) + b"\n")
    actual = {
        "pass_rate": summary.pass_rate.estimate if summary.pass_rate else None,
        "score": summary.mean_score.estimate if summary.mean_score else None,
    }
    missed = missed_gates(gates, actual)
    if missed:
        print(f"waza: --fail-under not met: {'; '.join(missed)}", file=sys.stderr)
        return EXIT_FAILED
    return EXIT_FAILED if summary.errored else EXIT_OK
