"""Unknown options are errors, even for the commands that take an agent command line.

``capture``, ``trials`` and ``run`` accept the agent command after the prompts
file, and its own flags after ``--``. Click is told to let unknown options
through (so ``waza capture p.jsonl ./agent.sh --grader g.py`` still works), which
would also turn a mistyped ``--grder g.py`` into two silent agent arguments and
an ungraded run. This command class looks at every option before ``--`` and
stops with a "did you mean" when waza does not know it.
"""

from __future__ import annotations

import difflib
import sys
from typing import Any

from typer.core import TyperCommand

__all__ = ["AGENT_COMMAND", "AgentCommand", "unknown_option"]


def _known(command: TyperCommand, ctx: Any) -> dict[str, bool]:
    """Every option name of ``command`` -> whether it takes a value.

    Typed loosely: typer vendors click from 0.2x on, so the click classes have no stable import.
    """
    names: dict[str, bool] = {}
    for param in command.get_params(ctx):
        if param.param_type_name == "option":
            option: Any = param
            takes_value = not (option.is_flag or option.count)
            for name in (*option.opts, *option.secondary_opts):
                names[name] = takes_value
    return names


def unknown_option(args: list[str], known: dict[str, bool]) -> str | None:
    """The first option before ``--`` that is not in ``known`` (a value of a known option is skipped)."""
    expect_value = False
    for arg in args:
        if expect_value:
            expect_value = False
            continue
        if arg == "--":
            return None
        if not arg.startswith("-") or arg == "-":
            continue
        name, has_value = (arg.split("=", 1)[0], True) if arg.startswith("--") and "=" in arg else (arg, False)
        if name in known:
            expect_value = known[name] and not has_value
            continue
        if not arg.startswith("--") and arg[:2] in known:  # -j4, -vv: a short option with its value attached
            continue
        return name
    return None


class AgentCommand(TyperCommand):
    """A typer command whose options before ``--`` must all be waza's own."""

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        known = _known(self, ctx)
        name = unknown_option(args, known)
        if name is not None:
            close = difflib.get_close_matches(name, [k for k in known if k.startswith("--")], n=1, cutoff=0.6)
            hint = f"; did you mean {close[0]}?" if close else ""
            print(
                f"waza {ctx.info_name}: no such option {name}{hint} "
                f"(the agent's own options go after --: waza {ctx.info_name} ... -- AGENT {name})",
                file=sys.stderr,
            )
            ctx.exit(2)
        result: Any = super().parse_args(ctx, args)
        return result  # type: ignore[no-any-return]


#: ``app.command(NAME, **AGENT_COMMAND)``: a command taking an agent command line after its own arguments.
AGENT_COMMAND: dict[str, Any] = {
    "cls": AgentCommand,
    "context_settings": {"ignore_unknown_options": True, "allow_interspersed_args": True},
}
