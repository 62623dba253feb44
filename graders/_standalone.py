"""Running a built-in grader as an executable speaking the grader protocol.

One request on stdin, one result on stdout, exit 0. ``--config JSON`` or
``--config-file FILE`` give a base config that the request's own ``config``
overrides key by key. A bad request or config exits 2 with one line on stderr;
a bug in the grader exits 1.
"""

from __future__ import annotations

import argparse
import sys
import traceback
from pathlib import Path
from types import ModuleType
from typing import Any

import orjson

from waza.protocol.codec import RecordError
from waza.protocol.errors import ConfigError
from waza.protocol.records import GraderRequest

from . import _config


def _base_config(args: argparse.Namespace) -> dict[str, Any]:
    if args.config and args.config_file:
        raise ConfigError("give --config or --config-file, not both")
    if args.config:
        raw = args.config.encode()
        where = "--config"
    elif args.config_file:
        raw = Path(args.config_file).read_bytes()
        where = args.config_file
    else:
        return {}
    try:
        value = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise ConfigError(f"{where} is not valid JSON: {exc}") from None
    if not isinstance(value, dict):
        raise ConfigError(f"{where} must be a JSON object")
    return value


def answer(module: ModuleType, name: str, raw: bytes, base: dict[str, Any]) -> bytes:
    """One request in, one result line out (ConfigError / RecordError for bad input)."""
    try:
        value = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise ConfigError(f"request is not valid JSON: {exc}") from None
    request = GraderRequest.from_dict(value)
    request.config = {**base, **request.config}
    _config.check(module, name, request.config)
    result = module.grade(request)
    return orjson.dumps(result.to_dict()) + b"\n"


def main(module: ModuleType, name: str, argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog=f"waza-grader {name}",
        description=f"{module.SUMMARY} Reads a grader request on stdin, writes a result on stdout.",
    )
    parser.add_argument("--config", help="base config as a JSON object")
    parser.add_argument("--config-file", help="base config from a JSON file")
    args = parser.parse_args(argv)
    try:
        base = _base_config(args)
        out = answer(module, name, sys.stdin.buffer.read(), base)
    except (ConfigError, RecordError, OSError) as exc:
        print(f"waza-grader {name}: {exc}", file=sys.stderr)
        sys.exit(2)
    except Exception:  # noqa: BLE001 - a grader bug is reported, as the protocol asks, on stderr
        traceback.print_exc()
        sys.exit(1)
    sys.stdout.buffer.write(out)
    sys.stdout.buffer.flush()
