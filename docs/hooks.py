"""mkdocs hooks: the reference pages are made from waza itself, so they cannot drift from it.

A page says where generated text goes with an HTML comment on a line of its own:

- ``<!-- waza:cli -->``: every command, its usage, its help and examples, and its
  options grouped as ``--help`` groups them, read from the typer app;
- ``<!-- waza:schema NAME -->``: the fields of ``schemas/NAME.json`` as a table.

The API reference uses mkdocstrings; its source tree (the ``waza`` package as
installed, mapped from the repository's folders) is made here, once per build.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
MARK = re.compile(r"^<!-- waza:(cli|schema) ?([\w-]*) -->$", re.M)

#: The folders setuptools maps into the ``waza`` namespace (pyproject's package-dir).
PACKAGE_DIRS = ("runner", "protocol", "adapters", "graders", "schemas")


def _api_tree() -> Path:
    """``build/docs-api/waza``: links to the package's folders laid out as installed, for mkdocstrings."""
    tree = ROOT / "build" / "docs-api" / "waza"
    tree.mkdir(parents=True, exist_ok=True)
    for source in [*(ROOT / "runner" / "_waza").iterdir(), *(ROOT / d for d in PACKAGE_DIRS)]:
        if source.name == "__pycache__":
            continue
        link = tree / source.name
        if not link.is_symlink():
            link.symlink_to(source)
    return tree.parent


_api_tree()  # before mkdocstrings looks for the package (it reads its paths as the config is loaded)


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def _option_row(param: Any) -> tuple[str, str]:
    names = ", ".join(f"`{n}`" for n in [*param.opts, *param.secondary_opts])
    metavar = param.metavar or ("" if getattr(param, "is_flag", False) or getattr(param, "count", False) else param.name.upper())
    left = (f"{names} `{metavar}`" if metavar else names).replace("|", "\\|")
    meaning = _cell(param.help or "")
    default = param.default
    shown = not getattr(param, "is_flag", False) and default not in (None, (), [], False) and param.show_default is not False
    if shown and not callable(default):
        meaning += f" (default: `{default}`)"
    return left, meaning


def _is(param: Any, kind: str) -> bool:
    """Whether a parameter is an ``argument`` or an ``option`` (asked by name: typer ships its own click)."""
    return getattr(param, "param_type_name", None) == kind


def _command(path: str, command: Any, out: list[str]) -> None:
    if hasattr(command, "commands"):  # a group of commands
        out.append(f"## `{path}`\n\n{command.help or ''}\n")
        for name, sub in command.commands.items():
            if not sub.hidden:
                _command(f"{path} {name}", sub, out)
        return
    out.append(f"## `{path}`\n")
    args = " ".join(
        (p.metavar or p.name.upper()) + ("..." if p.nargs == -1 else "") for p in command.params if _is(p, "argument")
    )
    out.append(f"```\n{path} [OPTIONS] {args}\n```\n")
    help_text = (command.help or "").replace("\b\n", "")
    head, _, examples = help_text.partition("Examples:")
    out.append(head.strip() + "\n")
    if examples.strip():
        lines = [line.strip() for line in examples.strip().splitlines() if line.strip()]
        out.append("Examples:\n\n```sh\n" + "\n".join(lines) + "\n```\n")
    arguments = [p for p in command.params if _is(p, "argument")]
    if arguments:
        out.append("| argument | meaning |\n|---|---|")
        out += [f"| `{p.metavar or p.name.upper()}` | {_cell(getattr(p, 'help', '') or '')} |" for p in arguments]
        out.append("")
    panels: dict[str, list[tuple[str, str]]] = {}
    for p in command.params:
        if _is(p, "option") and not p.hidden:
            panels.setdefault(getattr(p, "rich_help_panel", None) or "Options", []).append(_option_row(p))
    for panel, rows in panels.items():
        out.append(f"**{panel}**\n\n| option | meaning |\n|---|---|")
        out += [f"| {left} | {meaning} |" for left, meaning in rows]
        out.append("")


def cli_reference() -> str:
    import typer.main

    from waza.runner.cli.app import build

    group = typer.main.get_command(build())
    out: list[str] = []
    for name, command in group.commands.items():  # type: ignore[attr-defined]
        if not command.hidden:
            _command(f"waza {name}", command, out)
    return "\n".join(out)


def _type(spec: dict[str, Any]) -> str:
    if "$ref" in spec:
        return spec["$ref"].rsplit("/", 1)[-1]
    if "enum" in spec:
        return " \\| ".join(f"`{json.dumps(v)}`" for v in spec["enum"])
    if "const" in spec:
        return f"`{json.dumps(spec['const'])}`"
    for key in ("anyOf", "oneOf"):
        if key in spec:
            return " or ".join(_type(s) for s in spec[key])
    kind = spec.get("type", "any")
    if isinstance(kind, list):
        kind = " or ".join(kind)
    if kind == "array" and isinstance(spec.get("items"), dict):
        return f"array of {_type(spec['items'])}"
    return str(kind)


def schema_table(name: str) -> str:
    path = ROOT / "schemas" / f"{name}.json"
    doc = json.loads(path.read_text(encoding="utf-8"))
    required = set(doc.get("required", []))
    rows = [f"{doc.get('description', '')}\n", "| field | type | required | meaning |", "|---|---|---|---|"]
    for field, spec in doc.get("properties", {}).items():
        mark = "yes" if field in required else ""
        rows.append(f"| `{field}` | {_cell(_type(spec))} | {mark} | {_cell(spec.get('description', ''))} |")
    rows.append(f"\nThe whole schema is `schemas/{name}.json` in the repository; `waza schemas {name}` prints it.\n")
    return "\n".join(rows)


def on_page_markdown(markdown: str, **_: Any) -> str:
    def replace(match: re.Match[str]) -> str:
        kind, arg = match.group(1), match.group(2)
        return cli_reference() if kind == "cli" else schema_table(arg)

    return MARK.sub(replace, markdown)
