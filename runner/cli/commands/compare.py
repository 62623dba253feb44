"""``waza compare``: runs of the same prompts against a baseline, paired on prompt ids."""

from __future__ import annotations

from typing import Annotated, Literal

import typer

from waza.protocol.analysis_records import (
    ComparisonReport,
    Difference,
    KDifference,
    PairedComparison,
)
from waza.protocol.jsonl import dumps
from waza.runner.analysis.comparison import Bootstrap
from waza.runner.analysis.markdown import ids, num, signed, table
from waza.runner.cli.metavars import argument, option
from waza.runner.cli.option_values import FORMAT_OPTION, MARKDOWN_ALIAS, ReportFormat, finite_number, wants_markdown
from waza.runner.cli.sync_command import run_sync
from waza.runner.engine.calibration import compare
from waza.runner.engine.sink import output_stream

HELP = """Compare runs of the same prompts: every run against the first (the baseline).

Runs are CaptureResult files (waza capture) or TrialResult files (waza trials),
auto-detected. Only ids both runs hold are compared; the others are listed.
Prints a ComparisonReport (JSON; see `waza schemas ComparisonReport`) or Markdown:
per-prompt deltas, regressions and improvements, pass-rate and mean-score
differences with a paired bootstrap interval, McNemar's exact test on pass/fail,
and for trials files pass@k and pass^k differences.

Examples:

  waza compare before.jsonl after.jsonl --format markdown

  waza compare main.jsonl branch.jsonl --seed 7 | jq '.comparisons[0].regressions'

  waza capture prompts.jsonl --adapter exec -- ./agent-v2 | waza compare baseline.jsonl - --label v1 --label v2
"""


def register(app: typer.Typer) -> None:
    @app.command("compare", help=HELP)
    def compare_cmd(
        runs: Annotated[
            list[str],
            argument(
                metavar="RUNS...",
                value="FILE",
                help="Two or more results files (- for stdin, once); the first is the baseline.",
                show_default=False,
            ),
        ],
        label: Annotated[list[str] | None, option("--label", help="Name of each run, in order (repeat once per run).")] = None,
        format: Annotated[ReportFormat | None, FORMAT_OPTION] = None,
        markdown: Annotated[bool, MARKDOWN_ALIAS] = False,
        errors: Annotated[
            Literal["exclude", "fail"],
            option("--errors", help="Errored results: exclude (from pass statistics) or fail (count as fails)."),
        ] = "exclude",
        seed: Annotated[int, option("--seed", help="Seed of the bootstrap resampling.")] = 0,
        resamples: Annotated[int, option("--resamples", help="Bootstrap resamples.", min=100)] = 2000,
        level: Annotated[
            float, option("--level", help="Confidence level of the intervals.", parser=finite_number(0.5, 0.999))
        ] = 0.95,
        output: Annotated[str, option("-o", "--output", help="Write here instead of stdout.")] = "-",
    ) -> None:
        raise typer.Exit(
            run_sync(
                lambda: _compare(runs, label, wants_markdown(format, markdown), errors, Bootstrap(seed, resamples, level), output)
            )
        )


def _compare(
    paths: list[str], label: list[str] | None, markdown: bool, errors: Literal["exclude", "fail"], boot: Bootstrap, output: str
) -> int:
    report = compare(paths, labels=label, errors=errors, seed=boot.seed, resamples=boot.resamples, level=boot.level)
    with output_stream(output) as out:
        out.write(render_markdown(report).encode() if markdown else dumps(report))
    return 0


def _interval(d: Difference | None) -> list[str]:
    if d is None:
        return ["n/a"] * 5
    return [num(d.baseline), num(d.candidate), signed(d.difference), f"[{signed(d.low)}, {signed(d.high)}]", str(d.pairs)]


def _k_rows(name: str, diffs: list[KDifference]) -> list[list[str]]:
    return [[f"{name}{k.k}", *_interval(k.difference)] for k in diffs]


def _comparison_markdown(c: PairedComparison, level: float) -> str:
    parts = [f"## {c.candidate} vs {c.baseline}\n"]
    parts.append(
        f"{c.shared} shared prompts. Only in {c.baseline}: {ids(c.only_baseline)}. "
        f"Only in {c.candidate}: {ids(c.only_candidate)}. Not judged on one side: {ids(c.not_judged)}.\n"
    )
    rows = [["pass rate", *_interval(c.pass_rate)], ["mean score", *_interval(c.mean_score)]]
    rows += _k_rows("pass@", c.pass_at_k) + _k_rows("pass^", c.pass_hat_k)
    pct = f"{level * 100:g}%"
    parts.append(table(["metric", c.baseline, c.candidate, "difference", f"{pct} CI (paired bootstrap)", "pairs"], rows))
    if c.mcnemar is not None:
        m = c.mcnemar
        parts.append(
            f"McNemar exact test: {m.baseline_only} passed only in {c.baseline}, {m.candidate_only} only in "
            f"{c.candidate} ({m.both_pass} both, {m.both_fail} neither); p = {m.p_value:.4g}.\n"
        )
    parts.append(f"**Regressions** ({len(c.regressions)}): {ids(c.regressions)}\n")
    parts.append(f"**Improvements** ({len(c.improvements)}): {ids(c.improvements)}\n")
    changed = [d for d in c.deltas if d.change != "same"]
    if changed:
        trials = any(d.pass_rate_delta is not None for d in changed)
        head = ["id", "change", c.baseline, c.candidate, "score delta"] + (["pass-rate delta"] if trials else [])
        rows = []
        for d in changed:
            row = [d.id, d.change, d.baseline.status, d.candidate.status, signed(d.score_delta)]
            rows.append(row + ([signed(d.pass_rate_delta)] if trials else []))
        parts.append("### Prompts that changed\n\n" + table(head, rows))
    return "\n".join(parts)


_POLICY = {"exclude": "left out of pass statistics", "fail": "counted as fails"}


def render_markdown(report: ComparisonReport) -> str:
    level = next((c.pass_rate.level for c in report.comparisons if c.pass_rate), 0.95)
    runs = table(["run", "kind", "results", "file"], [[r.label, r.kind, r.results, r.source] for r in report.runs])
    head = (
        "# Comparison\n\n" + runs + f"\nErrored results: {_POLICY[report.errors]}. "
        f"Bootstrap: {report.resamples} resamples, seed {report.seed}.\n"
    )
    return head + "\n" + "\n".join(_comparison_markdown(c, level) for c in report.comparisons)
