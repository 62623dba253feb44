"""``waza graders check CMD``: does a grader, in any language, speak the protocol?"""

from __future__ import annotations

import sys
from collections.abc import Awaitable
from typing import Annotated

import orjson
import typer

from waza.protocol.errors import ConfigError
from waza.runner.cli.metavars import argument, option
from waza.runner.cli.option_values import positive_seconds, renamed
from waza.runner.cli.runtime import EXIT_FAILED, EXIT_OK, Interrupt, run
from waza.runner.conformance.kit import check, describe, resolve

HELP = """Run a grader through the protocol's rules and report, per rule, pass, fail or warning with the evidence.

Exit 0 when every required rule passes, 1 when one fails.

Examples:

  waza graders check ./my_grader.rb

  waza graders check worker:./my_grader.js          # or: waza graders check ./my_grader.js --worker

  waza graders check builtin:hint --worker --json | jq '.rules[] | select(.status != "pass")'

  waza graders check graders.py:grade --grader-config '{"strict": true}'
"""

#: Seconds the grader gets per request unless --grader-timeout says otherwise.
DEFAULT_TIMEOUT = 30.0


def register(app: typer.Typer) -> None:
    @app.command("check", help=HELP)
    def check_command(
        grader: Annotated[
            str,
            argument(
                metavar="GRADER",
                value="SPEC",
                help="An executable (with arguments), FILE.py:FUNC, builtin:NAME or worker:CMD.",
                show_default=False,
            ),
        ],
        config: Annotated[
            str | None,
            option("--grader-config", metavar="JSON", help="The grader's config (a JSON object), sent in every request."),
        ] = None,
        old_config: Annotated[str | None, option("--config", hidden=True, help="Old name of --grader-config.")] = None,
        worker: Annotated[bool, option("--worker", help="Check worker mode too (one process, one request per line).")] = False,
        as_json: Annotated[bool, option("--json", help="Print the ConformanceReport as JSON on stdout.")] = False,
        timeout: Annotated[
            float | None,
            option("--grader-timeout", help="Seconds the grader gets per request (default 30).", parser=positive_seconds),
        ] = None,
        old_timeout: Annotated[
            float | None, option("--timeout", hidden=True, help="Old name of --grader-timeout.", parser=positive_seconds)
        ] = None,
    ) -> None:
        def body(interrupt: Interrupt) -> Awaitable[int]:  # the old names checked where a ConfigError is a usage error
            given = renamed(config, old_config, "--grader-config", "--config")
            seconds = renamed(timeout, old_timeout, "--grader-timeout", "--timeout") or DEFAULT_TIMEOUT
            return _check(grader, given, worker, as_json, seconds, interrupt)

        raise typer.Exit(run(body))


async def _check(grader: str, config: str | None, worker: bool, as_json: bool, timeout: float, interrupt: Interrupt) -> int:
    target = resolve(grader, _config(config), worker)
    interrupt.summary = lambda: f"checking {grader} was stopped before every rule ran"
    report = await check(target, timeout)
    if as_json:
        sys.stdout.buffer.write(report.to_json() + b"\n")
        sys.stdout.buffer.flush()
    else:
        print(describe(report))
    return EXIT_OK if report.conforms else EXIT_FAILED


def _config(raw: str | None) -> dict[str, object] | None:
    if raw is None:
        return None
    try:
        value = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise ConfigError(f"--grader-config is not valid JSON: {exc}") from None
    if not isinstance(value, dict):
        raise ConfigError("--grader-config must be a JSON object")
    return value
