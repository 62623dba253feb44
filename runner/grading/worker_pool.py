"""Persistent grader workers: one long-lived process per concurrency slot, JSONL in and out.

Spawning a grader per result costs a process start (20-30 ms of CPU for a
Python grader) every time; a worker pays it once. The protocol (README,
"Worker mode"): waza writes one GraderRequest per line on the worker's stdin
and reads exactly one answer line on its stdout before it sends the next, until
it closes stdin. An answer is a grader result, or ``{"error": "why"}`` for a
request the worker rejects (it keeps serving). Every request carries a
``requestId`` unique within this runner, and its answer must echo it
(protocol 2): a line without it (a stray debug print, a late answer to an
earlier request) can then never be taken for the answer to this request. An
answer may also echo the request's ``id``; when it does it must match.

The pool grows lazily: a request takes an idle worker or starts a new one, so
it never holds more processes than requests in flight at once, which ``-j``
bounds: one worker per concurrency slot. Anything that leaves a worker's
stream in doubt (a crash, a hang past the timeout, a line that is not an
answer, an answer without this request's ``requestId`` or for another id, a second line for one request, a cancelled
exchange) costs that one request an error grade and the worker its life: its
process group is killed and the next request starts a fresh one, so no later
answer can be attributed to the wrong request.
"""

from __future__ import annotations

import itertools
import time
from typing import Any

import anyio
import anyio.abc
import msgspec
import orjson

from waza.protocol.grader_protocol import GraderProtocolError, grade_from_result, normalize_result, request_json
from waza.protocol.io.process import STDOUT_LIMIT, Child
from waza.protocol.io.secrets import scrubbed_env_bytes
from waza.protocol.records import PROTOCOL_VERSION, CaptureResult, Grade, GraderRequest
from waza.runner.grading.grader_runners import GraderRunner
from waza.runner.grading.grader_specs import Builtin
from waza.runner.grading.grader_specs import Worker as WorkerSpec

#: Seconds a worker gets to exit by itself after its stdin closes, before its group is killed.
EXIT_GRACE = 5.0
#: Seconds a faulty worker's stderr is still read for its last words once it is killed.
LAST_WORDS = 0.5


class WorkerFault(Exception):
    """This worker can no longer be trusted with another request; the message is the grade's error."""


class Worker(msgspec.Struct, eq=False):
    """One worker process: a :class:`Child` with its stdin kept open, driven from the event loop
    (no transports, no stderr task: its stderr is drained into a tail whenever it is read)."""

    child: Child
    buffer: bytearray = msgspec.field(default_factory=bytearray)
    served: int = 0

    async def exchange(self, line: bytes, timeout: float) -> bytes:
        """Send one request line, return the one answer line (WorkerFault when that fails)."""
        child, buffer = self.child, self.buffer
        child.send(line)
        try:
            with anyio.fail_after(timeout):
                while (end := buffer.find(b"\n")) < 0:
                    if len(buffer) >= STDOUT_LIMIT:
                        raise WorkerFault("grader wrote more than 10 MB without a newline")
                    buffer += await child.receive()
        except TimeoutError:
            raise WorkerFault(f"grader timed out after {timeout:g}s") from None
        except anyio.EndOfStream:
            raise WorkerFault(await self._death()) from None
        if end + 1 < len(buffer):
            raise WorkerFault("grader wrote more than one line for one request")
        answer = bytes(buffer[:end])
        buffer.clear()
        self.served += 1
        return answer

    async def _death(self) -> str:
        """Why the worker stopped answering, once it has exited (it is killed if it lingers)."""
        with anyio.move_on_after(1.0):
            await self.child.wait()
        code = self.child.returncode
        if code is None:
            return "grader closed its stdout without answering"
        if code < 0:
            return f"grader killed by signal {-code}"
        return f"grader exited with code {code} before answering"


def decode_answer(raw: bytes, request_id: str, exchange_id: str) -> dict[str, Any]:
    """Decode one answer line into an object for this request, or raise WorkerFault (out of step).

    ``request_id`` is the result's ``id``, ``exchange_id`` the ``requestId`` the answer must echo."""
    preview = raw[:80].decode("utf-8", "replace")
    try:
        value = orjson.loads(raw)
    except orjson.JSONDecodeError:
        raise WorkerFault(f"grader answer is not one JSON object; it starts {preview!r}") from None
    if not isinstance(value, dict):
        raise WorkerFault(f"grader answer must be a JSON object, got {type(value).__name__}")
    echoed_exchange = value.get("requestId")
    if echoed_exchange is None:
        raise WorkerFault(
            f"grader answer does not echo requestId {exchange_id!r} (worker protocol {PROTOCOL_VERSION}); it starts {preview!r}"
        )
    if echoed_exchange != exchange_id:
        raise WorkerFault(f"grader answered requestId {echoed_exchange!r} while grading requestId {exchange_id!r}")
    echoed = value.get("id")
    if echoed is not None and echoed != request_id:
        raise WorkerFault(f"grader answered for id {echoed!r} while grading {request_id!r}")
    return value


class WorkerRunner(GraderRunner):
    """A grader in worker mode. Enter it (``async with``) before grading: leaving stops its workers."""

    def __init__(self, spec: Builtin | WorkerSpec, argv: list[str]) -> None:
        super().__init__(spec)
        self.argv = argv
        self.keep_env: list[str] = []  # secret-like variables given back to it (judges.pass_api_key)
        self._idle: list[Worker] = []
        self._all: set[Worker] = set()
        self._entered = False
        self._exchanges = itertools.count(1)
        self.started = 0

    async def __aenter__(self) -> WorkerRunner:
        self._entered = True
        return self

    async def __aexit__(self, *exc: Any) -> None:
        self._entered = False
        self._idle.clear()
        with anyio.CancelScope(shield=True):
            async with anyio.create_task_group() as tg:
                for worker in list(self._all):
                    tg.start_soon(self._stop, worker)

    def _start(self) -> Worker:
        if not self._entered:
            raise RuntimeError("WorkerRunner must be entered (async with) before grading")
        worker = Worker(Child(self.argv, env=scrubbed_env_bytes(self.keep_env), keep_stdin=True))
        self._all.add(worker)
        self.started += 1
        return worker

    async def _stop(self, worker: Worker) -> None:
        """Close stdin (the worker's cue to exit), wait a little, then kill the group whatever happened."""
        self._all.discard(worker)
        child = worker.child
        try:
            child.close_stdin()
            with anyio.move_on_after(EXIT_GRACE):
                await child.wait()
        finally:
            await child.aclose()

    async def _discard(self, worker: Worker, last_words: bool = False) -> None:
        """Kill the worker's group and reap it; with ``last_words``, read its stderr a little first
        (the last words on stderr explain a crash)."""
        self._all.discard(worker)
        child = worker.child
        try:
            if last_words:
                child.kill()
                with anyio.move_on_after(LAST_WORDS):
                    await child.wait()
        finally:
            await child.aclose()

    @staticmethod
    def _stderr(worker: Worker) -> dict[str, Any] | None:
        tail = worker.child.stderr
        return {"stderr": tail.text()} if tail.total else None

    async def grade_alone(self, result: CaptureResult) -> Grade:
        # The request's JSON built straight from the result, no GraderRequest between.
        started = time.perf_counter()
        return await self._exchange(request_json(result, self.config), result.id, started)

    async def _grade(self, request: GraderRequest, started: float) -> Grade:
        return await self._exchange(request.to_dict(), request.id, started)

    async def _exchange(self, payload: dict[str, Any], request_id: str, started: float) -> Grade:
        """Grade one request (its JSON object, given a fresh ``requestId`` here) on an idle or a new worker."""
        payload["requestId"] = exchange_id = str(next(self._exchanges))
        line = orjson.dumps(payload) + b"\n"
        worker = self._idle.pop() if self._idle else None
        try:
            if worker is None:
                worker = self._start()
            raw = await worker.exchange(line, self.timeout)
            value = decode_answer(raw, request_id, exchange_id)
        except OSError as exc:
            return self._error(f"cannot start grader {self.argv[0]!r}: {exc.strerror or exc}", started)
        except WorkerFault as fault:
            assert worker is not None
            await self._discard(worker, last_words=True)
            return self._error(str(fault), started, self._stderr(worker))
        except BaseException:
            if worker is not None:
                await self._discard(worker)  # cancelled mid-exchange: its stream is in doubt
            raise
        self._idle.append(worker)  # it answered one line for this request: still in step
        try:
            result = normalize_result(value)
        except GraderProtocolError as exc:
            return self._error(str(exc), started, self._stderr(worker))
        return grade_from_result(self.name, result, weight=self.spec.weight, duration_ms=(time.perf_counter() - started) * 1000)
