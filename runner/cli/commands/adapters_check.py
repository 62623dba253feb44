"""``waza adapters check SCHEMA``: validate a headless adapter schema before running anything."""

from __future__ import annotations

import sys
from typing import Annotated

import typer

from waza.adapters.headless_schema import load_schema, shipped
from waza.protocol.errors import ConfigError
from waza.runner.cli.metavars import argument, option
from waza.runner.cli.runtime import EXIT_OK, EXIT_USAGE

HELP = """Check a headless adapter schema: its shape (schemas/adapter-headless.json),
every JSONPath in it, and that each extract field is one its emitAs uses.

Prints a summary on stdout and exits 0, or one line naming the file and field
on stderr and exits 2. SCHEMA is a file or the name of a shipped schema
(see --list).

Examples:

  waza adapters check my-cli.json

  waza adapters check claude-code

  waza adapters check --list
"""


def register(app: typer.Typer) -> None:
    @app.command("check", help=HELP)
    def check(
        schema: Annotated[
            str | None,
            argument(metavar="SCHEMA", value="FILE|NAME", help="Schema file, or a shipped schema name.", show_default=False),
        ] = None,
        list_: Annotated[bool, option("--list", "-l", help="List the shipped schemas.")] = False,
    ) -> None:
        if list_ or schema is None:
            for name in shipped():
                print(name)
            return
        try:
            loaded = load_schema(schema)
        except ConfigError as exc:
            print(f"waza: {exc}", file=sys.stderr)
            raise typer.Exit(EXIT_USAGE) from None
        resume = f", resume with {loaded.resume_flag!r}" if loaded.resume_flag else ""
        print(
            f"{loaded.source}: ok: {loaded.name!r}, command {' '.join(loaded.command)!r}, "
            f"sessionMode {loaded.session_mode}{resume}, {len(loaded.mappings)} output event mappings"
        )
        raise typer.Exit(EXIT_OK)
