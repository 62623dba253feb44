"""``waza balance``: how a prompt set covers the values of one metadata key."""

from __future__ import annotations

from typing import Annotated

import typer

from waza.protocol.errors import ConfigError
from waza.protocol.jsonl import dumps
from waza.runner.analysis.coverage import balance, balance_markdown
from waza.runner.analysis.runs import check_readable
from waza.runner.cli.metavars import argument, option
from waza.runner.cli.option_values import FORMAT_OPTION, MARKDOWN_ALIAS, ReportFormat, finite_number, wants_markdown
from waza.runner.cli.sync_command import run_sync
from waza.runner.engine.inputs import PromptFile
from waza.runner.engine.sink import output_stream

HELP = """Count prompts per value of a metadata key, flag under-represented values, suggest what to add.

The key is looked up in each prompt's `metadata` (dots walk into nested objects:
`--key source.kind`), else as a top-level field. A list value counts once for each
member. A value is under-represented below --threshold x the mean count per value;
--expect names values that should exist, so a value with no prompt at all shows up.
Writes a BalanceReport (`waza schemas BalanceReport`) or Markdown.

Examples:

  waza balance prompts.jsonl --key category --format markdown

  waza balance prompts.jsonl --key category --expect math --expect geography | jq .suggestions
"""


def register(app: typer.Typer) -> None:
    @app.command("balance", help=HELP)
    def balance_cmd(
        prompts: Annotated[
            str, argument(metavar="PROMPTS", value="FILE", help="Prompts JSONL (results files work too), or - for stdin.")
        ] = "-",
        key: Annotated[str, option("--key", help="Metadata key to count prompts by.")] = "category",
        expect: Annotated[list[str] | None, option("--expect", help="A value that should be covered (repeatable).")] = None,
        threshold: Annotated[
            float,
            option("--threshold", help="Under-represented below this share of the mean count.", parser=finite_number(0, 1)),
        ] = 0.5,
        format: Annotated[ReportFormat | None, FORMAT_OPTION] = None,
        markdown: Annotated[bool, MARKDOWN_ALIAS] = False,
        output: Annotated[str, option("-o", "--output", help="Write here instead of stdout.")] = "-",
    ) -> None:
        raise typer.Exit(
            run_sync(lambda: _balance(prompts, key, expect or [], threshold, wants_markdown(format, markdown), output))
        )


def _balance(prompts: str, key: str, expect: list[str], threshold: float, markdown: bool, output: str) -> int:
    if not key.strip() or any(not part for part in key.split(".")):
        raise ConfigError(f"--key {key!r} is not a key name (use name or a.b for nested metadata)")
    check_readable(prompts)
    report = balance((case for _, case in PromptFile(prompts).cases()), key, threshold=threshold, expect=expect)
    with output_stream(output) as out:
        out.write(balance_markdown(report).encode() if markdown else dumps(report))
    return 0
