"""The ``waza`` command line: a typer app whose commands live one per module in ``commands/``.

Only the module of the command being run is imported (all of them only for the
top-level ``--help``): importing every command costs about half a second, which
every ``waza`` invocation in a script or a benchmark would otherwise pay.
"""

from __future__ import annotations

import importlib
import sys
from typing import Annotated

import typer

from waza import __version__

#: command name -> module in ``waza.runner.commands``, in the order ``--help`` lists them.
COMMANDS: dict[str, str] = {
    "capture": "capture",
    "trials": "trials",
    "grade": "grade",
    "run": "run_suite",
    "check": "check_suite",
    "calibrate": "calibrate",
    "review": "review",
    "validate-refs": "validate_refs",
    "compare": "compare",
    "summarize": "summarize",
    "balance": "balance",
    "report": "report",
    "view": "view",
    "schemas": "schemas",
    "demo": "demo",
}

#: command groups: name -> (help, modules registering sub-commands on the group).
GROUPS: dict[str, tuple[str, tuple[str, ...]]] = {
    "graders": ("Built-in graders and the grader conformance kit.", ("graders_list", "graders_check")),
    "adapters": ("Agent adapter tools.", ("adapters_check",)),
}


def _version(value: bool) -> None:
    if value:
        print(f"waza {__version__}")
        raise typer.Exit()


def _root(
    verbose: Annotated[int, typer.Option("-v", "--verbose", count=True, help="More logging on stderr (-vv: debug).")] = 0,
    version: Annotated[bool, typer.Option("--version", callback=_version, is_eager=True, help="Print the version.")] = False,
) -> None:
    from .runtime import configure_logging

    configure_logging(verbose)


def _register(target: typer.Typer, module: str) -> None:
    importlib.import_module(f"waza.runner.commands.{module}").register(target)


def build(command: str | None = None) -> typer.Typer:
    """The app with ``command`` registered, or with every command when it names none of them."""
    app = typer.Typer(
        name="waza",
        help="Evaluate AI agents: stream prompts to an agent, record its trajectory, grade the results.\n\n"
        "Try it: waza demo",
        no_args_is_help=True,
        add_completion=False,
        pretty_exceptions_enable=False,
        context_settings={"help_option_names": ["-h", "--help"]},
    )
    app.callback()(_root)
    everything = command not in COMMANDS and command not in GROUPS
    for name, module in COMMANDS.items():
        if everything or name == command:
            _register(app, module)
    for name, (help_text, modules) in GROUPS.items():
        if everything or name == command:
            group = typer.Typer(help=help_text, no_args_is_help=True)
            for module in modules:
                _register(group, module)
            app.add_typer(group, name=name)
    return app


def _command_name(argv: list[str]) -> str | None:
    """The command word: the first argument that is not an option (the root options take no values)."""
    return next((a for a in argv if not a.startswith("-")), None)


def main() -> None:
    build(_command_name(sys.argv[1:]))()
