"""Running a built-in grader as an executable speaking the grader protocol.

One request on stdin, one result on stdout, exit 0. ``--config JSON`` or
``--config-file FILE`` give a base config that the request's own ``config``
overrides key by key. A bad request or config exits 2 with one line on stderr;
a bug in the grader exits 1; either way stdout says ``{"error": "why"}``.

``--worker`` serves the worker protocol instead: one request per stdin line,
one answer per stdout line, flushed, until stdin closes, each echoing the
request's ``requestId`` (protocol 2). A request it cannot grade gets ``{"error": "why"}`` (and a traceback on stderr for a grader bug)
and the worker keeps serving: one bad request must not cost the others.
"""

from __future__ import annotations

import argparse
import inspect
import sys
import traceback
from pathlib import Path
from types import ModuleType
from typing import Any

import anyio
import orjson

from waza.protocol.codec import RecordError
from waza.protocol.errors import ConfigError
from waza.protocol.grader_protocol import echo_request_id
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


async def _awaited(value: Any) -> Any:
    return await value


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
    if inspect.isawaitable(result):  # graders that wait on I/O (LLM judges) are async
        result = anyio.run(_awaited, result)
    return orjson.dumps(echo_request_id(value, result.to_dict())) + b"\n"


def serve(module: ModuleType, name: str, base: dict[str, Any]) -> None:
    """Worker mode: answer every stdin line in order, one flushed stdout line each."""
    out = sys.stdout.buffer
    for raw in sys.stdin.buffer:
        if not raw.strip():
            continue
        try:
            out.write(answer(module, name, raw, base))
            out.flush()
        except (ConfigError, RecordError) as exc:
            _refuse(str(exc), raw)
        except Exception as exc:  # a grader bug is this request's error, not the worker's end
            traceback.print_exc()
            _refuse(f"grader raised {type(exc).__name__}: {exc}", raw)


def _refuse(reason: str, raw: bytes = b"") -> None:
    """Say on stdout, in the protocol's words, why there is no result (stderr has the details).

    In worker mode the refusal echoes the request's ``requestId`` when the line can be read at all."""
    try:
        request = orjson.loads(raw) if raw else None
    except orjson.JSONDecodeError:
        request = None
    sys.stdout.buffer.write(orjson.dumps(echo_request_id(request, {"error": reason})) + b"\n")
    sys.stdout.buffer.flush()


def main(module: ModuleType, name: str, argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog=f"waza-grader {name}",
        description=f"{module.SUMMARY} Reads a grader request on stdin, writes a result on stdout.",
    )
    parser.add_argument("--config", help="base config as a JSON object")
    parser.add_argument("--config-file", help="base config from a JSON file")
    parser.add_argument(
        "--worker", action="store_true", help="worker mode: one request per stdin line, one result per stdout line"
    )
    args = parser.parse_args(argv)
    try:
        base = _base_config(args)
        if args.worker:
            serve(module, name, base)
            return
        out = answer(module, name, sys.stdin.buffer.read(), base)
    except (ConfigError, RecordError, OSError) as exc:
        print(f"waza-grader {name}: {exc}", file=sys.stderr)
        _refuse(str(exc))
        sys.exit(2)
    except Exception as exc:  # a grader bug is reported, as the protocol asks, on stderr
        traceback.print_exc()
        _refuse(f"grader raised {type(exc).__name__}: {exc}")
        sys.exit(1)
    sys.stdout.buffer.write(out)
    sys.stdout.buffer.flush()
