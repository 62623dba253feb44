"""``waza validate-tasks DIR``: each benchmark task run with the oracle and nop agents, one verdict line per task."""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path
from typing import Annotated

import msgspec
import typer

from waza.runner.benchmarks.loader import load_folder
from waza.runner.benchmarks.run import select
from waza.runner.benchmarks.validate import validate_task
from waza.runner.cli.commands.benchmarks import base_images_for, env_kind, folder_for
from waza.runner.cli.metavars import argument, option
from waza.runner.cli.runtime import EXIT_FAILED, EXIT_OK, run

HELP = """Validate benchmark tasks (Harbor or Terminal-Bench 1.x folders): run each with
its reference solution (oracle) and with no agent (nop) in --env, and print one
JSON line per task with a verdict: ok (oracle passes, nop fails), oracle-fails,
nop-passes or environment-unsatisfied (naming what is missing). Exit 0 when
every task is ok, 1 when one is not, 2 for bad usage.

Examples:

  waza validate-tasks my-dataset/

  waza validate-tasks my-dataset/ --task 'hello-*' --env host --keep-dir ./evidence
"""


def register(app: typer.Typer) -> None:
    @app.command("validate-tasks", help=HELP)
    def validate_tasks(
        folder: Annotated[
            Path, argument(metavar="DIR", value="DIR", help="A task folder or a dataset of them.", show_default=False)
        ],
        task: Annotated[list[str] | None, option("--task", help="Only tasks whose id matches GLOB (repeatable).")] = None,
        tags: Annotated[list[str] | None, option("--tags", help="Only tasks with a tag matching GLOB (repeatable).")] = None,
        env: Annotated[
            str | None, option("--env", help="The environment: host or docker (default: the best one here).", metavar="KIND")
        ] = None,
        base_image: Annotated[
            list[str] | None,
            option(
                "--base-image",
                help="IMAGE=LOCAL: with --env docker, build FROM IMAGE on LOCAL (repeatable).",
                metavar="IMAGE=LOCAL",
            ),
        ] = None,
        keep_dir: Annotated[
            Path | None, option("--keep-dir", help="Keep each run's workspace and logs under DIR (default: removed).")
        ] = None,
    ) -> None:
        async def body(_: object) -> int:
            tasks = select(load_folder(folder), names=task or [], tags=tags or [])
            kind = env_kind(env)
            images = base_images_for(kind, base_image)
            all_ok = True
            with tempfile.TemporaryDirectory(prefix="waza-validate-") as scratch:
                root = Path(tempfile.mkdtemp(prefix="run-", dir=folder_for(keep_dir))) if keep_dir else Path(scratch)
                for one in tasks:
                    verdict = await validate_task(one, env_kind=kind, work_dir=root / one.id, base_images=images)
                    all_ok = all_ok and verdict.verdict == "ok"
                    sys.stdout.buffer.write(msgspec.json.encode(verdict) + b"\n")
                    sys.stdout.buffer.flush()
            return EXIT_OK if all_ok else EXIT_FAILED

        raise typer.Exit(run(body))
