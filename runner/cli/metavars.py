"""What ``--help`` shows after an option that takes a value: what goes there, not a Python type.

typer shows a type's name (``<str>``, ``<path>``, or the name of a parser
function) when an option has no metavar. :func:`option` gives every option one:
by a rule on its long name (``--x-dir`` takes a DIR, ``--x-timeout`` SECONDS, ...),
else from the table of options whose name says nothing of their value; an
explicit ``metavar=`` wins. A flag's name is in neither (whether an option is a
flag is known only from its annotation), so a flag shows none.
"""

from __future__ import annotations

from typing import Any

import typer

from waza.runner.cli.option_values import whole_number

#: (suffix of the long name, metavar): the rule, tried in order.
_SUFFIXES: tuple[tuple[str, str], ...] = (
    ("timeout", "SECONDS"),
    ("-dir", "DIR"),
    ("-env", "VAR"),
    ("url", "URL"),
    ("-mb", "MB"),
    ("-path", "FILE"),
    ("-rules", "FILE"),
    ("-log", "FILE"),
    ("-config", "JSON"),
)

#: long name -> metavar, for the options the rule does not fit.
_NAMED: dict[str, str] = {
    "--output": "FILE",
    "--summary": "FILE",
    "--labels": "FILE",
    "--schema": "FILE",
    "--from": "FILE",
    "--sheet-markdown": "FILE",
    "--cwd": "DIR",
    "--sandbox-ro": "PATH",
    "--sandbox-rw": "PATH",
    "--concurrency": "N",
    "--trials": "N",
    "--trigger-trials": "N",
    "--workers": "N",
    "--sample": "N",
    "--resamples": "N",
    "--seed": "N",
    "--width": "N",
    "--max-steps": "N",
    "--max-tokens": "N",
    "--context": "TOKENS",
    "--port": "PORT",
    "--sandbox-port": "PORT",
    "--host": "ADDRESS",
    "--adapter": "exec|acp|headless|http|replay",
    "--prompt-timeout-unit": "s|ms|auto",
    "--prompts-format": "jsonl|csv|parquet",
    "--permission": "allow|deny",
    "--errors": "exclude|fail",
    "--map": "FIELD=COLUMN",
    "--mcp-server": "JSON",
    "--auth-method": "ID",
    "--model": "NAME",
    "--judge-model": "NAME",
    "--judge": "local",
    "--judge-command": "COMMAND",
    "--system-prompt": "TEXT",
    "--title": "TEXT",
    "--temperature": "T",
    "--grader": "SPEC",
    "--grader-config": "NAME=JSON",
    "--grader-weight": "NAME=W",
    "--fail-under": "METRIC=MIN,...",
    "--serve-model": "SOURCE",
    "--reporter": "KIND:FILE",
    "--task": "GLOB",
    "--tags": "GLOB",
    "--key": "KEY",
    "--expect": "VALUE",
    "--threshold": "SHARE",
    "--level": "LEVEL",
    "--min-kappa": "KAPPA",
    "--k-values": "K,K,...",
    "--to": "acp-harness|atif",
    "--label": "NAME",
}


def metavar_for(names: tuple[str, ...]) -> str | None:
    """The metavar of an option declared with ``names``; None for one neither the rule nor the table knows (a flag)."""
    long = next((n for n in names if n.startswith("--")), "")
    if long in _NAMED:
        return _NAMED[long]
    return next((metavar for suffix, metavar in _SUFFIXES if long.endswith(suffix)), None)


def option(*names: str, help: str, **kw: Any) -> Any:
    """``typer.Option`` with the metavar that says what goes there (an explicit ``metavar=`` wins).

    A whole-number option's ``min``/``max`` become a parser that refuses a bad value in
    words ("'abc' is not a whole number (at least 1)") instead of click's "int range".
    """
    kw.setdefault("metavar", metavar_for(names))
    if "min" in kw or "max" in kw:
        kw["parser"] = whole_number(kw.pop("min", None), kw.pop("max", None))
    return typer.Option(*names, help=help, **kw)


def argument(*, help: str, metavar: str, value: str, **kw: Any) -> Any:
    """``typer.Argument`` named ``metavar`` in the usage line, with ``value`` (FILE, DIR, ...) as its type in --help.

    typer's help shows an argument's type from its click type (``<str>`` for text); the
    type here reads and converts as text does and only names its value.
    """
    return typer.Argument(help=help, metavar=metavar, click_type=_value_type(value), **kw)


def _value_type(value: str) -> Any:
    try:  # typer 0.22+ carries its own copy of click
        from typer import _click as click
    except ImportError:  # pragma: no cover - older typer depends on click
        import click  # type: ignore[no-redef,import-not-found,unused-ignore]

    class Value(click.types.StringParamType):  # type: ignore[misc,name-defined,unused-ignore]
        name = value

        def get_metavar(self, param: Any, ctx: Any = None) -> str:
            return value

    return Value()
