"""``waza adapters list``: the adapters, and the shipped headless schemas with the CLI release each was written against."""

from __future__ import annotations

from typing import Annotated

import typer

from waza.runner.cli.metavars import option

HELP = """List the agent adapters and the headless schemas waza ships.

Each shipped schema is shown with the CLI release it was written and tested
against (its testedWith: npm package and version) and the command it runs.
A newer release may print other events: run the compatibility suite
(tests/test_real_agents.py) against it, or check with --raw-log.

Examples:

  waza adapters list

  waza adapters list --json
"""


def register(app: typer.Typer) -> None:
    @app.command("list", help=HELP)
    def list_(json_: Annotated[bool, option("--json", help="One JSON object per schema.")] = False) -> None:
        import orjson

        from waza.adapters import ADAPTERS, DEFAULT_ADAPTER
        from waza.adapters.headless_schema import load_schema, shipped

        schemas = [load_schema(name) for name in shipped()]
        if json_:
            for schema in schemas:
                package, version = schema.tested_with or (None, None)
                entry = {"adapter": "headless", "schema": schema.name, "package": package, "version": version}
                print(orjson.dumps({**entry, "command": list(schema.command)}).decode())
            return
        names = ", ".join(f"{n} (default)" if n == DEFAULT_ADAPTER else n for n in sorted(ADAPTERS))
        print(f"adapters: {names}")
        print("headless schemas (--adapter headless --schema NAME):")
        rows = [
            (s.name, " ".join(s.tested_with) if s.tested_with else "(no tested version)", " ".join(s.command)) for s in schemas
        ]
        widths = [max(len(r[i]) for r in rows) for i in range(2)]
        for name, tested, command in rows:
            print(f"  {name:<{widths[0]}}  {tested:<{widths[1]}}  {command}")
