"""``waza schemas``: print the published JSON Schemas."""

from __future__ import annotations

import sys
from typing import Annotated

import typer

from waza.protocol import schemas
from waza.runner.cli.metavars import argument, option

HELP = """List or print the JSON Schemas that waza's files validate against.

Examples:

  waza schemas --list

  waza schemas CaptureResult | jq .properties.score
"""


def register(app: typer.Typer) -> None:
    @app.command("schemas", help=HELP)
    def show(
        name: Annotated[
            str | None, argument(metavar="NAME", value="SCHEMA", help="Schema name (see --list).", show_default=False)
        ] = None,
        list_: Annotated[bool, option("--list", "-l", help="List schema names with their titles.")] = False,
    ) -> None:
        files = schemas.schema_files()
        if list_ or name is None:
            for key in files:
                title = schemas.load(key).get("title", "")
                print(f"{key}\t{title}")
            return
        if name not in files:
            print(f"waza: no schema named {name!r}; see `waza schemas --list`", file=sys.stderr)
            raise typer.Exit(2)
        sys.stdout.buffer.write(files[name].read_bytes())
