"""The ``waza`` command line: a typer app whose commands live one per module in ``commands/``.

Only the module of the command being run is imported (all of them only for the
top-level ``--help``): importing every command costs about half a second, which
every ``waza`` invocation in a script or a benchmark would otherwise pay.
"""

from __future__ import annotations

import errno
import importlib
import os
import sys
from typing import Annotated

import typer

from waza import __version__

#: command name -> module in ``waza.runner.cli.commands``, in the order ``--help`` lists them.
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
    "export": "export",
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
    "cache": ("The model cache of judge (and --cache agent) answers.", ("cache",)),
}


def _version(value: bool) -> None:
    if value:
        print(f"waza {__version__}")
        raise typer.Exit()


def _root(
    verbose: Annotated[int, typer.Option("-v", "--verbose", count=True, help="More logging on stderr (-vv: debug).")] = 0,
    version: Annotated[bool, typer.Option("--version", callback=_version, is_eager=True, help="Print the version.")] = False,
) -> None:
    from waza.runner.cli.runtime import configure_logging

    configure_logging(verbose)


def _register(target: typer.Typer, module: str) -> None:
    importlib.import_module(f"waza.runner.cli.commands.{module}").register(target)


def build(command: str | None = None) -> typer.Typer:
    """The app with ``command`` registered, or with every command when it names none of them."""
    app = typer.Typer(
        name="waza",
        help="Evaluate AI agents: stream prompts to an agent, record its trajectory, grade the results.\n\nTry it: waza demo",
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


def _os_error(exc: BaseException) -> OSError | None:
    """The OSError behind a failure, looking inside the exception groups the event loop raises."""
    if isinstance(exc, OSError):
        return exc
    if isinstance(exc, BaseExceptionGroup):
        for inner in exc.exceptions:
            found = _os_error(inner)
            if found is not None:
                return found
    return None


def main() -> None:
    """Run a command; an output that cannot be written is one line on stderr, not a traceback.

    A reader that went away (``waza ... | head -1``) ends waza quietly with 141, as a
    shell reports a process ended by SIGPIPE. Any other write or open failure (a
    directory given as ``-o``, a missing directory, a full disk) prints what failed
    and exits 2 when nothing could be opened, 1 when it happened mid-run.
    """
    try:
        build(_command_name(sys.argv[1:]))()
    except BaseException as exc:  # noqa: BLE001 - only OS errors are turned into messages
        found = _os_error(exc)
        if found is None:
            raise
        if found.errno == errno.EPIPE:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())  # so the exit-time flush does not fail again
            sys.exit(141)
        what = f"cannot write {found.filename}" if found.filename else "cannot write output"
        print(f"waza: {what}: {found.strerror or found}", file=sys.stderr)
        sys.exit(2 if found.filename else 1)
