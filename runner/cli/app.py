"""The ``waza`` command line: a typer app whose commands live one per module in ``commands/``.

Only the module of the command being run is imported: importing every command
costs about half a second, which every ``waza`` invocation in a script or a
benchmark would otherwise pay. ``waza``, ``waza --help`` and ``waza --version``
do not import typer at all: they print from the tables below (typer and its
dependencies cost more than the 0.15 s a bare ``--help`` is allowed).
"""

from __future__ import annotations

import errno
import gc
import importlib
import os
import sys
from typing import TYPE_CHECKING

from waza import __version__

if TYPE_CHECKING:
    import typer

#: command name -> (module in ``waza.runner.cli.commands``, summary), in the order ``--help`` lists them.
COMMANDS: dict[str, tuple[str, str]] = {
    "capture": ("capture", "Run each prompt through an agent, record what it did, and grade the result."),
    "trials": ("trials", "Run each prompt k times in fresh sessions; report pass@k and pass^k."),
    "grade": ("grade", "Grade CaptureResult lines again with other graders."),
    "run": ("run_suite", "Run an eval suite: every task's trials in fresh workspaces, graded."),
    "check": ("check_suite", "Check an eval suite's files, graders and fixtures without running an agent."),
    "validate-tasks": ("validate_tasks", "Run benchmark tasks with their reference solution and with no agent; classify each."),
    "prepare": ("prepare", "Build benchmark tasks' images once, ahead of offline runs (--env docker)."),
    "calibrate": ("calibrate", "Check a grader against human labels (or another grader)."),
    "review": ("review", "Label the outputs queued by the human graders, pass or fail."),
    "validate-refs": ("validate_refs", "Grade each prompt's reference as if it were the agent's output."),
    "compare": ("compare", "Compare runs of the same prompts against the first (the baseline)."),
    "gate": ("gate", "Gate a run's results against a baseline for CI (the original waza's exit codes)."),
    "summarize": ("summarize", "Summarize results: status, score, duration, tool calls, tokens, steps."),
    "export": ("export", "Write results in another tool's shape: acp-harness's, Harbor's ATIF."),
    "balance": ("balance", "Count prompts per value of a metadata key; flag the under-represented."),
    "report": ("report", "Turn a results file into a report for people or CI systems."),
    "view": ("view", "Browse results in a browser: a local, read-only web app."),
    "schemas": ("schemas", "List or print the JSON Schemas that waza's files validate against."),
    "serve-model": ("serve_model", "Serve a scripted or local model to agents under test, on loopback."),
    "demo": ("demo", "Run waza's main job on built-in data, with a scripted agent."),
}

#: command groups: name -> (help, modules registering sub-commands on the group).
GROUPS: dict[str, tuple[str, tuple[str, ...]]] = {
    "graders": ("Built-in graders and the grader conformance kit.", ("graders_list", "graders_check")),
    "adapters": ("Agent adapter tools.", ("adapters_list", "adapters_check")),
    "cache": ("The model cache of judge (and --cache agent) answers.", ("cache",)),
}


#: Set by the completion script that ``waza --install-completion`` installs, when the shell asks for completions.
COMPLETION_VARIABLE = "_WAZA_COMPLETE"

HELP = "Evaluate AI agents: stream prompts to an agent, record its trajectory, grade the results."


def _manual_line() -> str:
    from waza.runner.install_hints import manual

    return f"The manual: {manual()}"


def _version(value: bool) -> None:
    if value:
        import typer

        print(f"waza {__version__}")
        raise typer.Exit()


def _register(target: typer.Typer, module: str) -> None:
    importlib.import_module(f"waza.runner.cli.commands.{module}").register(target)


def build(command: str | None = None) -> typer.Typer:
    """The app with ``command`` registered, or with every command when it names none of them."""
    import typer

    def root(
        verbose: int = typer.Option(
            0, "-v", "--verbose", count=True, metavar="", show_default=False, help="More logging on stderr (-vv: debug)."
        ),
        version: bool = typer.Option(False, "--version", callback=_version, is_eager=True, help="Print the version."),
    ) -> None:
        from waza.runner.cli.runtime import configure_logging

        configure_logging(verbose)

    app = typer.Typer(
        name="waza",
        help=f"{HELP}\n\nTry it: waza demo",
        epilog=_manual_line(),
        no_args_is_help=True,
        pretty_exceptions_enable=False,
        context_settings={"help_option_names": ["-h", "--help"]},
    )
    app.callback()(root)
    everything = command not in COMMANDS and command not in GROUPS
    for name, (module, _) in COMMANDS.items():
        if everything or name == command:
            _register(app, module)
    for name, (help_text, modules) in GROUPS.items():
        if everything or name == command:
            group = typer.Typer(help=help_text, no_args_is_help=True)
            for module in modules:
                _register(group, module)
            app.add_typer(group, name=name)
    return app


def quick_answer(argv: list[str]) -> str | None:
    """What ``waza [--help|-h|--version]`` prints, without typer; None for anything else.

    Only argument lists made of these options alone are answered here (``--version``
    wins, as its eager typer option does); an unknown option or any command word goes
    to typer, which reports it.
    """
    if not set(argv) <= {"--help", "-h", "--version"}:
        return None
    if "--version" in argv:
        return f"waza {__version__}\n"
    width = max(len(name) for name in [*COMMANDS, *GROUPS])
    lines = [
        "Usage: waza [OPTIONS] COMMAND [ARGS]...",
        "",
        HELP,
        "",
        "Try it: waza demo",
        "",
        "Options:",
        "  -v, --verbose         More logging on stderr (-vv: debug).",
        "  --version             Print the version.",
        "  --install-completion  Install completion for the current shell.",
        "  --show-completion     Show completion for the current shell, to copy it or customize the installation.",
        "  -h, --help            Show this message and exit.",
        "",
        "Commands:",
        *(f"  {name:<{width}}  {summary}" for name, (_, summary) in COMMANDS.items()),
        *(f"  {name:<{width}}  {summary}" for name, (summary, _) in GROUPS.items()),
        "",
        "Run 'waza COMMAND --help' for a command's options and examples.",
        _manual_line(),
    ]
    return "\n".join(lines) + "\n"


def _command_name(argv: list[str]) -> str | None:
    """The command word: the first argument that is not an option (the root options take no values)."""
    return next((a for a in argv if not a.startswith("-")), None)


def main() -> None:
    """Run a command; an output that cannot be written is one line on stderr, not a traceback.

    A reader that went away (``waza ... | head -1``) ends waza quietly with 141, as a
    shell reports a process ended by SIGPIPE. Any other write or open failure (a
    directory given as ``-o``, a missing directory, a full disk) prints what failed
    and exits 2 when nothing could be opened, 1 when it happened mid-run.
    """
    completing = COMPLETION_VARIABLE in os.environ  # the shell asks for completions: no arguments, every command
    quick = None if completing else quick_answer(sys.argv[1:])
    if quick is not None:
        sys.stdout.write(quick)
        sys.exit(0 if sys.argv[1:] else 2)  # a bare ``waza`` is a usage error that shows the help
    # The one process-wide tuning waza does, and only here, in its own process: the collector is off while
    # the command is built (the CLI framework and the command's modules: objects that live until exit and
    # make next to no garbage) and those objects are frozen out of its walks before the command runs; from
    # then on the collector runs as usual, so a long run's memory stays flat. Without it a one-prompt
    # capture costs about a sixth more CPU (README Performance). The library (``import waza``) never
    # touches the collector.
    gc.disable()
    try:
        app = build(_command_name(sys.argv[1:]))
        gc.freeze()
        gc.enable()
        app(prog_name="waza")  # also under ``python -m waza``: completion and usage lines name the command
    except BaseException as exc:  # every exception: only OS errors are turned into messages
        from waza.protocol.errors import find_cause

        found = find_cause(exc, OSError)
        if found is None:
            raise
        if found.errno == errno.EPIPE:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())  # so the exit-time flush does not fail again
            sys.exit(141)
        what = f"cannot write {found.filename}" if found.filename else "cannot write output"
        print(f"waza: {what}: {found.strerror or found}", file=sys.stderr)
        sys.exit(2 if found.filename else 1)
