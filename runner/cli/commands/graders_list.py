"""``waza graders list`` / ``waza graders show NAME``: the built-in catalogue and each grader's documentation."""

from __future__ import annotations

import inspect
import sys
from typing import Annotated, Any

import orjson
import typer
import yaml

from waza.graders import ALIASES, CATALOGUE, canonical, load
from waza.graders._config import schema_name
from waza.protocol import schemas
from waza.protocol.errors import ConfigError
from waza.runner.cli.metavars import argument

LIST_HELP = """List the built-in graders with their one-line purpose.

Use a name as --grader builtin:NAME, or as `type: NAME` in an eval.yaml.

Example:

  waza graders list
"""

SHOW_HELP = """Print a built-in grader's documentation, config schema and a worked example.

Examples:

  waza graders show regex

  waza graders show action_sequence | less
"""


def register(app: typer.Typer) -> None:
    @app.command("list", help=LIST_HELP)
    def list_command() -> None:
        aliases: dict[str, list[str]] = {}
        for alias, target in ALIASES.items():
            aliases.setdefault(target, []).append(alias)
        width = max(map(len, CATALOGUE))
        for name in CATALOGUE:
            also = f" (also: {', '.join(aliases[name])})" if name in aliases else ""
            print(f"{name:<{width}}  {load(name).SUMMARY}{also}")

    @app.command("show", help=SHOW_HELP)
    def show_command(
        name: Annotated[
            str, argument(metavar="NAME", value="GRADER", help="A built-in grader (see `waza graders list`).", show_default=False)
        ],
    ) -> None:
        try:
            module = load(name)
        except ConfigError as exc:
            print(f"waza: {exc}", file=sys.stderr)
            raise typer.Exit(2) from None
        sys.stdout.write(render(canonical(name), module))


def render(name: str, module: Any) -> str:
    parts = [f"{name}: {module.SUMMARY}", "", inspect.cleandoc(module.__doc__ or "")]
    schema = schemas.load(schema_name(name))
    parts += ["", "Config schema:", orjson.dumps(schema, option=orjson.OPT_INDENT_2).decode()]
    example = getattr(module, "EXAMPLE", None)
    if example is not None:
        snippet = yaml.safe_dump([{"type": name, "name": f"my_{name}", "config": example.config}], sort_keys=False, width=100)
        parts += ["", "Worked example (eval.yaml graders entry):", snippet.rstrip()]
        for title, files in (
            ("Workspace files", {**example.committed, **example.files}),
            ("Context files (context_dir)", example.context),
        ):
            if files:
                parts += ["", f"{title}:", *(f"  {path}: {text!r}" for path, text in files.items())]
        if example.committed:
            parts += ["", f"(committed in git before the run: {', '.join(example.committed)})"]
        parts += ["", "Request (fields besides config):", orjson.dumps(example.request, option=orjson.OPT_INDENT_2).decode()]
        parts += ["", "Result:", orjson.dumps(example.result).decode()]
    return "\n".join(parts) + "\n"
