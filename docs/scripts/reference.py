"""The manual's generated reference text, written into the pages: ``python docs/scripts/reference.py`` (``--check``).

The command-line reference (from the typer app), the record tables (from ``schemas/``) and
the Python API reference (from ``waza.__all__``, its signatures and docstrings, and the
parameter meanings in docs/scripts/api_parameters.py) are committed in the pages, so they
read the same on the repository host as in the built site. A page marks each generated part:

- ``<!-- waza:cli -->`` ... ``<!-- /waza:cli -->``: every command, its usage, help, examples and options;
- ``<!-- waza:schema NAME -->`` ... ``<!-- /waza:schema -->``: the fields of ``schemas/NAME.json``;
- ``<!-- waza:api -->`` ... ``<!-- /waza:api -->``: every name of ``waza.__all__``.

tests/test_reference_pages.py regenerates them and fails when a committed page differs, and
the docs build (docs/hooks.py) refuses a stale page, so a change to the CLI, a schema or the
API comes with its reference text. The text is plain Markdown that GitHub and mkdocs both
render: no ``|`` inside a table's code spans (GitHub would split the cell there).
"""

from __future__ import annotations

import inspect
import json
import re
import sys
import typing
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

__all__ = ["api_reference", "cli_reference", "regenerate", "schema_table", "stale"]

ROOT = Path(__file__).resolve().parents[2]
MANUAL = ROOT / "docs" / "manual"
PAGES = ("reference/cli.md", "reference/records.md", "reference/python-api.md")
BLOCK = re.compile(r"^<!-- waza:(cli|schema|api) ?([\w-]*) -->\n.*?^<!-- /waza:\1 -->$", re.M | re.S)

sys.path.insert(0, str(Path(__file__).resolve().parent))
from api_parameters import MEANINGS, SECTIONS  # noqa: E402


def _cell(text: str) -> str:
    """Text for a table cell: one line, its pipes escaped (outside code spans both renderers unescape them)."""
    return " ".join(text.split()).replace("|", "\\|")


def _code_alternatives(text: str) -> str:
    """``a|b|c`` (or a type ``A | B``) as code spans joined by an escaped bar, so no code span holds a ``|``."""
    return " \\| ".join(f"`{part.strip()}`" for part in _split_top(text))


def _split_top(text: str) -> list[str]:
    """``text`` split at the ``|`` outside brackets (``A | list[B | C]`` is two parts); inner ones read ``or``."""
    parts, depth, current = [], 0, ""
    for char in text:
        depth += char in "[("
        depth -= char in "])"
        if char == "|" and depth == 0:
            parts.append(current)
            current = ""
        else:
            current += char
    parts.append(current)
    return [" or ".join(p.strip() for p in part.split("|")) for part in parts]


# -- the command line ------------------------------------------------------------------------------------------------


def _is(param: Any, kind: str) -> bool:
    """Whether a parameter is an ``argument`` or an ``option`` (asked by name: typer ships its own click)."""
    return getattr(param, "param_type_name", None) == kind


def _argument_usage(param: Any) -> str:
    name = (param.metavar or param.name.upper()).removesuffix("...")
    many = param.nargs == -1
    text = f"{name}..." if many else name
    return text if param.required else f"[{name}]..." if many else f"[{name}]"


def _option_row(param: Any) -> tuple[str, str]:
    names = ", ".join(f"`{n}`" for n in [*param.opts, *param.secondary_opts])
    metavar = param.metavar or ("" if getattr(param, "is_flag", False) or getattr(param, "count", False) else param.name.upper())
    left = f"{names} {_code_alternatives(metavar)}" if metavar else names
    meaning = _cell(param.help or "")
    default = param.default
    shown = not getattr(param, "is_flag", False) and default not in (None, (), [], False, "") and param.show_default is not False
    if shown and not callable(default):
        meaning += f" (default: `{default}`)"
    return left, meaning


def _command(path: str, command: Any, out: list[str]) -> None:
    if hasattr(command, "commands"):  # a group of commands
        out.append(f"## `{path}`\n\n{command.help or ''}\n")
        for name, sub in command.commands.items():
            if not sub.hidden:
                _command(f"{path} {name}", sub, out)
        return
    out.append(f"## `{path}`\n")
    arguments = [p for p in command.params if _is(p, "argument")]
    usage = " ".join([path, "[OPTIONS]", *(_argument_usage(p) for p in arguments)])
    out.append(f"```\n{usage}\n```\n")
    help_text = (command.help or "").replace("\b\n", "").replace("\\[", "[")
    head, _, examples = help_text.partition("Examples:")
    out.append(head.strip() + "\n")
    if examples.strip():
        lines = [line.strip() for line in examples.strip().splitlines() if line.strip()]
        out.append("Examples:\n\n```sh\n" + "\n".join(lines) + "\n```\n")
    if arguments:
        out.append("| argument | meaning |\n|---|---|")
        out += [f"| `{_argument_usage(p).strip('[]')}` | {_cell(getattr(p, 'help', '') or '')} |" for p in arguments]
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
    return "\n".join(out).strip()


# -- records ---------------------------------------------------------------------------------------------------------


def _type(spec: dict[str, Any]) -> str:
    if "$ref" in spec:
        return spec["$ref"].rsplit("/", 1)[-1]
    if "enum" in spec:
        return " or ".join(f"`{json.dumps(v)}`" for v in spec["enum"])
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


def _schema(name: str) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads((ROOT / "schemas" / f"{name}.json").read_text(encoding="utf-8"))
    return doc


def schema_table(name: str) -> str:
    doc = _schema(name)
    required = set(doc.get("required", []))
    rows = [f"{doc.get('description', '')}\n", "| field | type | required | meaning |", "|---|---|---|---|"]
    for field, spec in doc.get("properties", {}).items():
        mark = "yes" if field in required else ""
        rows.append(f"| `{field}` | {_cell(_type(spec))} | {mark} | {_cell(spec.get('description', ''))} |")
    rows.append(f"\nThe whole schema is `schemas/{name}.json` in the repository; `waza schemas {name}` prints it.")
    return "\n".join(rows)


# -- the Python API --------------------------------------------------------------------------------------------------

_DOTTED = re.compile(r"\b(?:[A-Za-z_]\w*\.)+(?=[A-Za-z_]\w*)")
_ROLE = re.compile(r":(?:func|class|meth|attr|data|exc|mod):`~?([^`]+)`")


def _short(annotation: Any) -> str:
    """An annotation as written, without module paths (``collections.abc.Sequence[str]`` reads ``Sequence[str]``)."""
    text = annotation if isinstance(annotation, str) else inspect.formatannotation(annotation)
    return _DOTTED.sub("", text)


def _public(name: str) -> bool:
    import waza

    return name in waza.__all__


def _anchor(name: str) -> str:
    """The anchor of ``waza.NAME``'s heading, as mkdocs and GitHub both make it (punctuation dropped, lower case)."""
    return re.sub(r"[^\w-]", "", f"waza.{name}").lower()


def _markdown(doc: str) -> str:
    """A docstring in Markdown: reST ``literals`` become code spans, roles a code span (a link when the name is public)."""

    def role(match: re.Match[str]) -> str:
        target = match.group(1).removeprefix("waza.")
        base = target.split(".")[0].removesuffix("()")
        return f"[`{target}`](#{_anchor(base)})" if _public(base) else f"`{target}`"

    return re.sub(r"``([^`]+)``", r"`\1`", _ROLE.sub(role, doc))


def _default(obj: Any, name: str, value: Any) -> str:
    import msgspec

    if value is inspect.Parameter.empty:
        return ""
    if isinstance(value, msgspec.Struct) and value == type(value)():
        return f"{type(value).__name__}()"
    if callable(value) and hasattr(value, "__name__"):
        return value.__name__
    text = repr(value)
    if text == "<factory>" and isinstance(obj, type) and issubclass(obj, msgspec.Struct):
        field = next(f for f in msgspec.structs.fields(obj) if f.name == name)
        return repr(field.default_factory())
    return text


def _options_of(annotation: str) -> dict[str, Any] | None:
    """The keys of the options ``TypedDict`` an ``Unpack[...]`` annotation names, as written; None otherwise."""
    import waza

    match = re.fullmatch(r"Unpack\[(\w+)\]", annotation)
    found = getattr(waza, match.group(1), None) if match else None
    return dict(found.__annotations__) if found is not None and typing.is_typeddict(found) else None


def _signature(label: str, obj: Any) -> tuple[str, list[tuple[str, str, str]]]:
    """The signature as a code block, and (name, type, default) of each parameter."""
    signature = inspect.signature(obj)
    params: list[tuple[str, str, str]] = []
    lines: list[str] = []
    star = False
    for p in signature.parameters.values():
        if p.name == "self":
            continue
        if p.kind is inspect.Parameter.KEYWORD_ONLY and not star:
            lines.append("*")
            star = True
        kind = _short(p.annotation) if p.annotation is not inspect.Parameter.empty else ""
        options = _options_of(kind) if p.kind is inspect.Parameter.VAR_KEYWORD else None
        if options is not None:  # **options: Unpack[XOptions]: each key is a parameter of its own
            params.extend((key, _short(getattr(hint, "__forward_arg__", hint)), "") for key, hint in options.items())
            lines.append(f"**{p.name}: {kind}")
            continue
        default = _default(obj, p.name, p.default)
        params.append((p.name, kind, default))
        stars = "**" if p.kind is inspect.Parameter.VAR_KEYWORD else ""
        lines.append(stars + p.name + (f": {kind}" if kind else "") + (f" = {default}" if default else ""))
    returns = signature.return_annotation
    shown = "" if returns is inspect.Signature.empty else _short(returns)
    tail = f" -> {shown}" if shown not in ("", "None") else ""
    if not lines:
        return f"```python\n{label}(){tail}\n```", params
    body = "".join(f"    {line},\n" for line in lines)
    return f"```python\n{label}(\n{body}){tail}\n```", params


def _meaning(owner: str, name: str) -> str:
    for key in (f"{owner}.{name}", f"{owner.split('.')[0]}.{name}"):
        if key in MEANINGS:
            return MEANINGS[key]
    if name in MEANINGS:
        return MEANINGS[name]
    raise LookupError(
        f"{owner}({name}=...) has no meaning: add {owner + '.' + name!r} or {name!r} to docs/scripts/api_parameters.py"
    )


def _parameter_table(owner: str, params: list[tuple[str, str, str]], record: dict[str, Any] | None = None) -> str:
    if not params:
        return ""
    rows = ["| parameter | type | default | meaning |", "|---|---|---|---|"]
    fields = (record or {}).get("properties", {})
    for name, kind, default in params:
        if record is not None:
            meaning = (
                fields.get(name, {}).get("description") or MEANINGS.get(name) or f"See [{owner}](records.md#{owner.lower()})."
            )
        else:
            meaning = _meaning(owner, name)
        shown = _code_alternatives(kind) if kind else ""
        rows.append(f"| `{name}` | {shown} | {_code_alternatives(default) if default else ''} | {_cell(_markdown(meaning))} |")
    return "\n".join(rows) + "\n"


def _methods(name: str, cls: type) -> Iterator[str]:
    for attr, raw in vars(cls).items():
        if attr.startswith("_") or not callable(getattr(cls, attr)):
            continue
        if isinstance(raw, property):
            continue
        method = getattr(cls, attr)
        label = f"{name}.{attr}"
        code, params = _signature(label, method)
        doc = _markdown(inspect.getdoc(method) or MEANINGS.get(label, ""))
        if not doc:
            raise LookupError(f"{label} has no docstring: add one, or {label!r} to docs/scripts/api_parameters.py")
        yield f"#### `{label}`\n\n{code}\n\n{doc}\n\n{_parameter_table(label, params)}"


def _entry(name: str) -> str:
    import msgspec

    import waza

    obj = getattr(waza, name)
    out = [f"### `waza.{name}`\n"]
    if name == "__version__":
        return f"### `waza.__version__`\n\nThe version of this waza, a string (`{obj}`).\n"
    if not callable(obj):  # a type alias
        out.append(f"```python\n{name} = {_short(obj)}\n```\n")
        out.append(_markdown(MEANINGS[name]) + "\n")
        return "\n".join(out)
    doc = _markdown(inspect.getdoc(obj) or "")
    if isinstance(obj, type) and issubclass(obj, BaseException):
        bases = ", ".join(f"`{b.__name__}`" for b in obj.__bases__)
        out.append(f"An exception (a subclass of {bases}).\n\n{doc}\n")
        fields = [f for f in ("message", "source", "line", "field") if f in inspect.signature(obj.__init__).parameters]
        if fields:
            code, params = _signature(f"waza.{name}", obj.__init__)
            out.append(code + "\n\n" + _parameter_table(name, params))
        return "\n".join(out)
    if typing.is_typeddict(obj):  # a run's keyword options: every key optional, its default in prepare()
        written = {k: getattr(v, "__forward_arg__", v) for k, v in obj.__annotations__.items()}  # as written
        keys = [(key, _short(hint), "") for key, hint in written.items()]
        body = "".join(f"    {key}: {kind}\n" for key, kind, _ in keys)
        out.append(f"```python\nclass {name}(TypedDict, total=False):\n{body}```\n\n{doc}\n")
        out.append(_parameter_table(name, keys))
        return "\n".join(out)
    run_object = isinstance(obj, type) and hasattr(obj, "prepare")
    if run_object:  # made by prepare(), not by calling the class
        out.append(f"{doc}\n\nMade by `waza.{name}.prepare(...)`, not by calling the class.\n")
        out.extend(_methods(name, obj))
        return "\n".join(out)
    code, params = _signature(f"waza.{name}", obj)
    out.append(code + "\n\n" + doc + "\n")
    record = None
    if isinstance(obj, type) and issubclass(obj, msgspec.Struct) and (ROOT / "schemas" / f"{name}.json").is_file():
        record = _schema(name)
        out.append(f"A record: its fields are the JSON fields of [{name}](records.md#{name.lower()}).\n")
    out.append(_parameter_table(name, params, record))
    return "\n".join(out)


def api_reference() -> str:
    import waza

    listed = [name for _, names in SECTIONS for name in names]
    missing = sorted(set(waza.__all__) - set(listed))
    extra = sorted(set(listed) - set(waza.__all__))
    if missing or extra or len(listed) != len(set(listed)):
        raise LookupError(f"docs/scripts/api_parameters.py SECTIONS: not listed {missing}, not in waza.__all__ {extra}")
    out: list[str] = []
    for title, names in SECTIONS:
        out.append(f"## {title}\n")
        out.extend(_entry(name) for name in names)
    return "\n".join(out).strip()


# -- the pages -------------------------------------------------------------------------------------------------------

GENERATORS: dict[str, Callable[[str], str]] = {
    "cli": lambda _: cli_reference(),
    "schema": schema_table,
    "api": lambda _: api_reference(),
}


def regenerate(page: str) -> str:
    """``page`` with every marked part made again from waza."""

    def replace(match: re.Match[str]) -> str:
        kind, arg = match.group(1), match.group(2)
        opening = f"<!-- waza:{kind}{' ' + arg if arg else ''} -->"
        return f"{opening}\n{GENERATORS[kind](arg)}\n<!-- /waza:{kind} -->"

    return BLOCK.sub(replace, page)


def stale() -> list[str]:
    """The pages whose generated parts differ from what waza makes now."""
    return [
        name
        for name in PAGES
        if regenerate((MANUAL / name).read_text(encoding="utf-8")) != (MANUAL / name).read_text(encoding="utf-8")
    ]


def main(argv: list[str]) -> int:
    check = argv == ["--check"]
    if argv and not check:
        print("usage: python docs/scripts/reference.py [--check]", file=sys.stderr)
        return 2
    changed = stale()
    if check:
        for name in changed:
            print(f"docs/manual/{name} is stale: run python docs/scripts/reference.py", file=sys.stderr)
        return 1 if changed else 0
    for name in changed:
        path = MANUAL / name
        path.write_text(regenerate(path.read_text(encoding="utf-8")), encoding="utf-8")
        print(f"wrote docs/manual/{name}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
