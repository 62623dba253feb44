"""Running graders: in-process (built-ins, Python callables) or as processes.

Each runner turns a GraderRequest into a Grade and never raises for what the
grader does: a crash, a timeout, garbage on stdout or a score that cannot be
trusted all become an *error* grade with the reason and the stderr tail.
"""

from __future__ import annotations

import inspect
import os
import sys
import time
from collections.abc import Callable
from typing import Any

import anyio
import msgspec
import orjson

from waza.protocol.codec import Record
from waza.protocol.grader_protocol import (
    GraderProtocolError,
    error_grade,
    grade_from_result,
    json_copy,
    normalize_result,
    parse_result_bytes,
    request_for,
    request_json,
)
from waza.protocol.io.process import run_once
from waza.protocol.io.secrets import scrubbed_env_bytes
from waza.protocol.io.stdout import claimed as results_on_stdout
from waza.protocol.records import CaptureResult, Grade, GraderRequest
from waza.runner.grading.grader_specs import Builtin, Executable, PythonGrader, Worker
from waza.runner.wording import failure

DEFAULT_TIMEOUT = 60.0


class GraderRunner:
    """Base: holds the spec; subclasses implement ``_grade``. Use as an async context manager."""

    def __init__(self, spec: Builtin | Executable | Worker | PythonGrader) -> None:
        #: The resolved spec (``build.resolve``): named, its paths absolute; what a Ray job carries.
        self.spec = spec
        self.name = spec.name or ""
        self.timeout = spec.timeout if spec.timeout is not None else DEFAULT_TIMEOUT
        #: The config each request carries: the spec's, until a local judge's server gives it its address.
        self.config: dict[str, Any] = dict(spec.config)

    async def __aenter__(self) -> GraderRunner:
        return self

    async def __aexit__(self, *exc: object) -> None:
        return None

    def request(self, request: GraderRequest) -> GraderRequest:
        """This grader's view of a request (graders of one result share the base request).

        The copy is skipped when the config already matches (the usual case: a
        grader with no config), as it is a fifth of the per-result cost of an in-process grader."""
        if request.config == self.config:
            return request
        return msgspec.structs.replace(request, config=self.config)

    async def grade_alone(self, result: CaptureResult) -> Grade:
        """Grade a result this grader is the only one for: the request is built with its own config."""
        return await self.grade(request_for(result, self.config))

    async def grade(self, request: GraderRequest) -> Grade:
        started = time.perf_counter()
        try:
            return await self._grade(self.request(request), started)
        except GraderProtocolError as exc:
            return self._error(str(exc), started)

    async def _grade(self, request: GraderRequest, started: float) -> Grade:
        raise NotImplementedError

    def _ok(self, value: Any, started: float) -> Grade:
        """The grade of an answer; one that breaks the protocol is an error grade saying how."""
        try:
            result = normalize_result(value)
        except GraderProtocolError as exc:
            return self._error(str(exc), started)
        return grade_from_result(self.name, result, weight=self.spec.weight, duration_ms=(time.perf_counter() - started) * 1000)

    def _error(self, reason: str, started: float, details: dict[str, Any] | None = None) -> Grade:
        return error_grade(
            self.name, reason, weight=self.spec.weight, duration_ms=(time.perf_counter() - started) * 1000, details=details
        )


class _StdoutToStderr:
    """While any in-process grader runs in a run writing its results to stdout, ``print()`` goes to stderr,
    not into ``-o -``'s JSONL; otherwise (results to a file: a notebook, a service) ``sys.stdout`` is the caller's
    and is left alone, so a notebook's other cells and threads keep their output where it was.

    Counted rather than nested (``contextlib.redirect_stdout``) because async
    graders overlap: the first to start swaps ``sys.stdout``, the last to end
    restores it. The result writer holds the real stdout's buffer, so its own
    lines are unaffected. A plain class, not ``@contextmanager``: it is entered
    once per result, and a generator-based one cost three times as much (2.4 µs)."""

    borrowers = 0
    real: Any = None

    def __enter__(self) -> None:
        if self.borrowers == 0 and results_on_stdout():
            self.real, sys.stdout = sys.stdout, sys.stderr
        self.borrowers += 1

    def __exit__(self, *exc: object) -> None:
        self.borrowers -= 1
        if self.borrowers == 0 and self.real is not None:
            sys.stdout, self.real = self.real, None


_stdout_to_stderr = _StdoutToStderr()


class InProcessRunner(GraderRunner):
    """A Python function called in the event loop: sync functions inline (the fast path), async awaited.

    A sync function cannot be interrupted, so it has no timeout; an async one
    gets the grader timeout. Whatever it raises, ``sys.exit()`` included (every
    BaseException but KeyboardInterrupt and waza's own cancellation), is an
    error grade for that one result. A user's function gets a request that shares
    no list or dict with the record or the config (``request_json``, or a JSON copy),
    so mutating it cannot change the record written; what it prints goes to stderr.
    """

    def __init__(self, spec: Builtin | PythonGrader, fn: Callable[[Any], Any], *, wants_record: bool) -> None:
        super().__init__(spec)
        self.fn = fn
        self.wants_record = wants_record
        self.is_async = inspect.iscoroutinefunction(fn)

    async def grade_alone(self, result: CaptureResult) -> Grade:
        if self.wants_record:
            return await super().grade_alone(result)
        # A user's function takes the request as JSON, built from the result directly and its own to change.
        started = time.perf_counter()
        return await self._call(request_json(result, self.config), started)

    async def _grade(self, request: GraderRequest, started: float) -> Grade:
        # Built-ins (waza's own code) read the record; a user's function gets a copy of its own.
        return await self._call(request if self.wants_record else json_copy(request.to_dict()), started)

    async def _call(self, arg: Any, started: float) -> Grade:
        try:
            with _stdout_to_stderr:
                if self.is_async:
                    with anyio.fail_after(self.timeout):
                        value = await self.fn(arg)
                else:
                    value = self.fn(arg)
                    if type(value) is not dict and inspect.isawaitable(value):  # a dict, the usual answer, is not (an ABC check)
                        with anyio.fail_after(self.timeout):
                            value = await value
        except TimeoutError:
            return self._error(f"grader timed out after {self.timeout:g}s", started)
        except (KeyboardInterrupt, anyio.get_cancelled_exc_class()):
            raise
        except BaseException as exc:  # any grader failure, sys.exit() included, is an error grade
            return self._error(f"the grader failed with {failure(exc)}", started)
        if isinstance(value, Record):
            value = value.to_dict()
        return self._ok(value, started)


class ProcessRunner(GraderRunner):
    """One process per result: request on stdin, result on stdout, process group killed on timeout."""

    def __init__(self, spec: Executable, argv: list[str]) -> None:
        super().__init__(spec)
        self.argv = argv
        self.keep_env: list[str] = []  # secret-like variables given back to it (judges.pass_api_key)

    async def grade_alone(self, result: CaptureResult) -> Grade:
        # The request's JSON built straight from the result, no GraderRequest between.
        started = time.perf_counter()
        return await self._run(orjson.dumps(request_json(result, self.config)), result.cwd, started)

    async def _grade(self, request: GraderRequest, started: float) -> Grade:
        return await self._run(request.to_json(), request.cwd, started)

    async def _run(self, payload: bytes, cwd: str | None, started: float) -> Grade:
        """Run the grader on one request's JSON, in the result's directory where it still is one."""
        cwd = cwd if cwd and os.path.isdir(cwd) else None
        try:
            out = await run_once(self.argv, stdin=payload, cwd=cwd, env=scrubbed_env_bytes(self.keep_env), timeout=self.timeout)
        except OSError as exc:
            return self._error(f"cannot start grader {self.argv[0]!r}: {exc.strerror or exc}", started)
        details = {"stderr": out.stderr_tail} if out.stderr_tail else None
        if out.timed_out:
            return self._error(f"grader timed out after {self.timeout:g}s", started, details)
        if out.stdout_overflow:
            return self._error("grader wrote more than 10 MB to stdout", started, details)
        if out.signal is not None:
            return self._error(f"grader killed by signal {out.signal}", started, details)
        if out.code != 0:
            tail = out.stderr_tail.strip().splitlines()[-1:] or [""]
            return self._error(f"grader exited with code {out.code}: {tail[0]}".rstrip(": "), started, details)
        try:
            result = parse_result_bytes(out.stdout)
        except GraderProtocolError as exc:
            return self._error(str(exc), started, details)
        return grade_from_result(self.name, result, weight=self.spec.weight, duration_ms=(time.perf_counter() - started) * 1000)
