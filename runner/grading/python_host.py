"""Serve a Python grader function over the stdin/stdout protocol, one-shot or as a worker.

``waza graders check file.py:fn`` runs the function through this host, so the
kit judges a Python function exactly as it judges an executable in any other
language (a stray ``print`` in the function shows up as stray stdout, as it
would corrupt waza's own stdout in-process). It is also a way to give a Python
function process isolation: ``--grader "worker:python -m waza.runner.grading.python_host file.py:fn --worker"``.
"""

from __future__ import annotations

import argparse
import inspect
import sys
import traceback
from collections.abc import Callable
from typing import Any

import anyio
import orjson

from waza.protocol.codec import Record
from waza.protocol.errors import ConfigError
from waza.protocol.grader_protocol import echo_request_id
from waza.runner.grading.build import import_callable
from waza.runner.grading.grader_specs import PythonGrader, parse_grader
from waza.runner.wording import failure


def call(fn: Callable[[Any], Any], raw: bytes) -> bytes:
    """One request line in, one answer line out (echoing ``requestId``); ``{"error": ...}`` when it cannot be graded.

    ``sys.exit()`` or any BaseException but KeyboardInterrupt in the function is
    this request's error too: a worker must not end because one request did."""
    try:
        request = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        return orjson.dumps({"error": f"request is not valid JSON: {exc}"}) + b"\n"
    try:
        value = fn(request if not isinstance(request, dict) else dict(request))
        if inspect.isawaitable(value):
            value = anyio.run(lambda: value)
        if isinstance(value, Record):
            value = value.to_dict()
        if not isinstance(value, dict):
            value = {"error": f"grader returned {type(value).__name__}, not an object"}
    except KeyboardInterrupt:
        raise
    except BaseException as exc:  # the function's failure (sys.exit included) is this request's error grade
        traceback.print_exc()
        value = {"error": f"the grader failed with {failure(exc)}"}
    return orjson.dumps(echo_request_id(request, value)) + b"\n"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m waza.runner.grading.python_host", description=__doc__.splitlines()[0])
    parser.add_argument("target", help="FILE.py:FUNC or package.module:FUNC")
    parser.add_argument("--worker", action="store_true", help="one request per stdin line until stdin closes")
    args = parser.parse_args(argv)
    try:
        spec = parse_grader(args.target)
        if not isinstance(spec, PythonGrader) or not isinstance(spec.fn, str):
            raise ConfigError(f"{args.target!r} is not FILE.py:FUNC or package.module:FUNC")
        fn = import_callable(spec.fn)
    except ConfigError as exc:
        print(f"python_host: {exc}", file=sys.stderr)
        sys.exit(2)
    out = sys.stdout.buffer
    lines = sys.stdin.buffer if args.worker else [sys.stdin.buffer.read()]
    for raw in lines:
        if raw.strip():
            out.write(call(fn, raw))
            out.flush()


if __name__ == "__main__":
    main()
