"""The ``waza`` command line: a typer app whose commands live one per module in ``commands/``."""

from __future__ import annotations

from typing import Annotated

import typer

from waza import __version__

from .commands import calibrate, capture, compare, demo, grade, review, schemas, trials, validate_refs
from .commands import graders_check, graders_list
from .commands import adapters_check
from .commands import check_suite, run_suite
from .runtime import configure_logging

app = typer.Typer(
    name="waza",
    help="Evaluate AI agents: stream prompts to an agent, record its trajectory, grade the results.\n\n"
    "Try it: waza demo",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)

#: ``waza graders ...``: the built-in catalogue and the conformance kit.
graders_app = typer.Typer(help="Built-in graders and grader tools.", no_args_is_help=True)
#: ``waza adapters ...``: adapter tools.
adapters_app = typer.Typer(help="Agent adapter tools.", no_args_is_help=True)
app.add_typer(graders_app, name="graders")
graders_check.register(graders_app)
graders_list.register(graders_app)
app.add_typer(adapters_app, name="adapters")
adapters_check.register(adapters_app)

for module in (capture, grade, schemas, demo, compare, trials, run_suite, check_suite, calibrate, validate_refs, review):
    module.register(app)


def _version(value: bool) -> None:
    if value:
        print(f"waza {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    verbose: Annotated[int, typer.Option("-v", "--verbose", count=True, help="More logging on stderr (-vv: debug).")] = 0,
    version: Annotated[bool, typer.Option("--version", callback=_version, is_eager=True, help="Print the version.")] = False,
) -> None:
    configure_logging(verbose)


def main() -> None:
    app()
