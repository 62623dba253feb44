"""``waza check eval.yaml``: validate a suite without running anything."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from waza.protocol.errors import ConfigError
from waza.runner.benchmarks.loader import is_benchmark
from waza.runner.cli.metavars import argument, option
from waza.runner.cli.runtime import EXIT_OK, fail
from waza.runner.suites.execute import require_graders
from waza.runner.suites.loader import load_suite
from waza.runner.wording import count

HELP = """Check an eval suite: eval.yaml, every task file and trigger_tests.yaml against
their JSON Schemas, grader types and configs, fixture paths, mock scripts and
metric names. Prints one line per problem as FILE:LINE: field 'x': message and
exits 2; prints a summary and exits 0 when the suite is valid. Runs no agent.

Examples:

  waza check examples/snippet-explainer/eval.yaml

  waza check eval.yaml --context-dir ./shared-fixtures && waza run eval.yaml --adapter mock

SUITE may also be a folder of Harbor or Terminal-Bench 1.x tasks: each problem
is one FILE: field 'key': message line on stdout.

  waza check my-dataset/
"""


def register(app: typer.Typer) -> None:
    @app.command("check", help=HELP)
    def check(
        suite: Annotated[
            Path, argument(metavar="SUITE", value="FILE|DIR", help="eval.yaml, or the directory holding it.", show_default=False)
        ],
        context_dir: Annotated[
            Path | None, option("--context-dir", help="Fixture root (default: fixtures/ beside eval.yaml).")
        ] = None,
    ) -> None:
        if is_benchmark(suite):  # Harbor / Terminal-Bench 1.x task folders
            from waza.runner.cli.commands.benchmarks import check_benchmark  # only for them: a suite starts without it

            try:
                raise typer.Exit(check_benchmark(suite))
            except ConfigError as exc:
                raise typer.Exit(fail(str(exc))) from None
        try:
            loaded = load_suite(suite, context_dir=context_dir)
            require_graders([t for t in loaded.tasks if t.enabled], [])
        except ConfigError as exc:
            raise typer.Exit(fail(str(exc))) from None
        for notice in loaded.notices:
            print(f"waza: {notice}", file=sys.stderr)
        enabled = [t for t in loaded.tasks if t.enabled]
        graders = sum(len(t.graders) for t in enabled)
        triggers = f", {len(loaded.triggers.prompts)} trigger prompts" if loaded.triggers else ""
        disabled = len(loaded.tasks) - len(enabled)
        print(
            f"waza: {loaded.file}: ok: {count(len(enabled), 'task')}{f' ({disabled} disabled)' if disabled else ''}, "
            f"{count(graders, 'grader')}, {count(len(loaded.metrics), 'metric')}{triggers}",
            file=sys.stderr,
        )
        raise typer.Exit(EXIT_OK)
