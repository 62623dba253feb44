"""``waza gate``: fail a CI job when a run's results regress against a baseline, as the original waza's gate does.

Its exit statuses are the original's, not waza's usual ones: 0 pass, 1
regression (or a task-set policy set to fail), 2 golden task failed, 3
configuration error (a bad option value, an unreadable or malformed results
file). A pipeline that tests ``$? -eq 3`` keeps working after the move; that
is why a configuration error here is 3 and not waza's 2. Every option value
is therefore checked by the command itself, not by the option parser (which
would exit 2); only an option name typer does not know still exits 2.
"""

from __future__ import annotations

import math
import os
import sys
from pathlib import Path
from typing import Annotated, Any

import msgspec
import typer
from typer.core import TyperCommand

from waza.protocol.errors import WazaError
from waza.runner.analysis.gate import PASS, POLICIES, GateOptions, GateReport, Policy, decide
from waza.runner.analysis.outcome_inputs import load
from waza.runner.cli.api_terms import in_cli_terms
from waza.runner.cli.metavars import option
from waza.runner.reports.gate_text import FORMATS, human, markdown, workflow_commands

EXIT_CONFIG = 3

HELP = """Gate a run's results against a baseline's, for CI: the original waza's `waza gate`.

Fails when a task marked `golden: true` (in either file) did not pass or is
missing from the current run (unless --golden-must-pass=false), when the
suite's pass rate (tasks passed / tasks) dropped by more than
--max-regression-pct percentage points, or when tasks were added or removed
and the --on-new-tasks / --on-removed-tasks policy is fail. Reads the
original's results.json (and waza's `--reporter results:FILE`), waza's suite
document (`--reporter json:FILE`) and CaptureResult / TrialResult lines, in
any mix.

Exit status: 0 pass, 1 regression, 2 golden failure, 3 configuration error
(the original's codes; waza's other commands use 2 for a usage error).

Examples:

  waza gate --baseline main/results.json --current results.json --max-regression-pct 5

  waza gate --baseline base.json --current new.json --golden-must-pass=false --on-new-tasks warn -f github-actions
"""


class _GoBooleanFlag(TyperCommand):
    """``--golden-must-pass`` read as the original's Go flag package reads a boolean flag: alone it means
    true, and ``--golden-must-pass=false`` gives it a value. The option takes a value, so the bare form
    is given its ``=true`` before the arguments are parsed."""

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        return super().parse_args(ctx, [f"{a}=true" if a == "--golden-must-pass" else a for a in args])


def register(app: typer.Typer) -> None:
    @app.command("gate", help=HELP, cls=_GoBooleanFlag)
    def gate_cmd(
        baseline: Annotated[str, option("--baseline", help="The baseline's results file.", metavar="FILE")] = "",
        current: Annotated[str, option("--current", help="The current run's results file.", metavar="FILE")] = "",
        max_regression_pct: Annotated[
            str,
            option(
                "--max-regression-pct",
                help="Largest allowed drop of the pass rate, in percentage points (at least 0).",
                metavar="POINTS",
            ),
        ] = "0",
        golden_must_pass: Annotated[
            str,
            option(
                "--golden-must-pass",
                help="Exit 2 when a golden task did not pass in the current run or is missing from it (the default; "
                "--golden-must-pass=false lists golden failures without failing on them).",
                metavar="[=true|false]",
            ),
        ] = "true",
        on_new_tasks: Annotated[
            str, option("--on-new-tasks", help="Tasks only in the current run: allow, warn or fail.", metavar="allow|warn|fail")
        ] = "allow",
        on_removed_tasks: Annotated[
            str, option("--on-removed-tasks", help="Tasks only in the baseline: allow, warn or fail.", metavar="allow|warn|fail")
        ] = "warn",
        format: Annotated[
            str,
            option(
                "--format",
                "-f",
                help="human, json, markdown or github-actions (annotations; the Markdown goes to $GITHUB_STEP_SUMMARY when set).",
                metavar="FORMAT",
            ),
        ] = "human",
    ) -> None:
        raise typer.Exit(_gate(baseline, current, max_regression_pct, golden_must_pass, on_new_tasks, on_removed_tasks, format))


def _config_error(message: str) -> int:
    print(f"waza gate: {in_cli_terms(message)}", file=sys.stderr)
    return EXIT_CONFIG


def _policy(name: str, value: str) -> Policy:
    value = value.strip().lower()
    if value not in POLICIES:
        raise ValueError(f"{name}: unsupported policy {value!r}: must be allow, warn, or fail")
    return value


#: The values Go's flag package takes for a boolean flag, which the original's ``--golden-must-pass=false`` is.
_BOOLEANS = {"1": True, "t": True, "true": True, "0": False, "f": False, "false": False}


def _boolean(name: str, value: str) -> bool:
    try:
        return _BOOLEANS[value.strip().lower()]
    except KeyError:
        raise ValueError(f"{name}: {value!r} is not true or false") from None


def _options(max_regression_pct: str, golden: str, on_new: str, on_removed: str) -> GateOptions:
    try:
        points = float(max_regression_pct)
    except ValueError:
        raise ValueError(f"--max-regression-pct: {max_regression_pct!r} is not a number") from None
    if not math.isfinite(points) or points < 0:
        raise ValueError("--max-regression-pct must be >= 0")
    return GateOptions(
        points,
        _boolean("--golden-must-pass", golden),
        _policy("--on-new-tasks", on_new),
        _policy("--on-removed-tasks", on_removed),
    )


def _gate(baseline: str, current: str, points: str, golden: str, on_new: str, on_removed: str, fmt: str) -> int:
    baseline, current, fmt = baseline.strip(), current.strip(), fmt.strip().lower()
    try:
        if not baseline:
            raise ValueError("--baseline is required")
        if not current:
            raise ValueError("--current is required")
        options = _options(points, golden, on_new, on_removed)
        if fmt not in FORMATS:
            raise ValueError(f"unsupported format {fmt!r}: must be human, json, markdown, or github-actions")
    except ValueError as exc:
        return _config_error(str(exc))
    try:
        before = load(baseline)
        after = load(current)
    except WazaError as exc:
        return _config_error(str(exc))
    report = decide(before, after, options, baseline_file=baseline, current_file=current)
    try:
        _print(report, fmt)
    except OSError as exc:
        return _config_error(f"cannot write the report: {exc.strerror or exc}")
    if report.exit_code != PASS:
        print(f"waza gate: {report.outcome} (exit {report.exit_code})", file=sys.stderr)
    return report.exit_code


def _print(report: GateReport, fmt: str) -> None:
    if fmt == "json":
        text = msgspec.json.format(msgspec.json.encode(report), indent=2).decode() + "\n"
    elif fmt == "markdown":
        text = markdown(report)
    elif fmt == "github-actions":
        text = workflow_commands(report)
        summary = os.environ.get("GITHUB_STEP_SUMMARY")
        if summary:
            with Path(summary).open("a", encoding="utf-8") as out:  # the step summary file is appended to
                out.write(markdown(report) + "\n")
        else:
            text += markdown(report)
    else:
        text = human(report)
    sys.stdout.write(text)
    sys.stdout.flush()
