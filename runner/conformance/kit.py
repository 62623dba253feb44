"""The grader conformance kit: a fixed set of requests, a verdict per protocol rule.

A grader is checked as a process, whatever it is written in: an executable as
is, ``builtin:NAME`` as its standalone executable (``python -m
waza.graders.NAME``) and ``file.py:fn`` through :mod:`waza.runner.grading.python_host`,
so stray stdout, exit codes and crashes are judged the same way for all. In
worker mode a single-request probe is the request as one line followed by the
end of stdin, which a conforming worker answers and then exits on; four more
rules then drive one long-lived process. In worker mode every request carries
a ``requestId`` (protocol 2) that its answer must echo.

The requests to fresh processes are sent side by side, and so are the worker
sessions: a grader that hangs costs the kit about two timeouts, not one per
rule. The report lists the rules in their fixed order all the same.
"""

from __future__ import annotations

import functools
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any, Literal, TypeVar

import anyio
import msgspec
import orjson

from waza.graders import _config as builtin_config
from waza.graders import load as load_builtin
from waza.protocol import schemas
from waza.protocol.conformance_records import ConformanceEvidence, ConformanceReport, ConformanceRule, RuleStatus
from waza.protocol.errors import ConfigError, find_cause
from waza.protocol.grader_protocol import GraderProtocolError, normalize_result, parse_result_bytes
from waza.protocol.io.process import Child, ProcessOutcome, exit_parts, run_once
from waza.protocol.io.secrets import scrubbed_env
from waza.protocol.records import PROTOCOL_VERSION, GraderResult, TrajectoryStep
from waza.runner.grading.build import builtin_argv
from waza.runner.grading.grader_specs import Builtin, PythonGrader, parse_grader
from waza.runner.grading.grader_specs import Worker as WorkerGrader
from waza.runner.grading.worker_pool import Worker, WorkerFault, decode_answer

PREVIEW = 240
LARGE_TRAJECTORY = 5 * 1024 * 1024
EXIT_WAIT = 5.0
#: A request that is not JSON (cut off mid-document): the reports-errors rule.
TRUNCATED = b'{"protocol": "%s", "id": "conformance-truncated", "output": ' % PROTOCOL_VERSION.encode()

T = TypeVar("T")


class Target(msgspec.Struct):
    """The grader as a command line, in the mode it is checked in, and what every request carries.

    ``request`` fields and ``files`` / ``committed`` (written, or committed in a
    git repository, into the request's workspace) and ``context`` (written into
    a directory given as ``context_dir``) come from a built-in's worked example, so a grader that needs config or files is checked on a case it can grade.
    """

    name: str
    argv: list[str]
    worker: bool
    config: dict[str, Any]
    request: dict[str, Any] = msgspec.field(default_factory=dict)
    files: dict[str, str] = msgspec.field(default_factory=dict)
    committed: dict[str, str] = msgspec.field(default_factory=dict)
    context: dict[str, str] = msgspec.field(default_factory=dict)


def resolve(text: str, config: dict[str, Any] | None, worker: bool) -> Target:
    """Turn the CLI argument into a command; ConfigError when it names nothing runnable."""
    spec = parse_grader(text, plain=False)
    flag = ["--worker"] if worker else []
    if isinstance(spec, Builtin):
        module = load_builtin(spec.grader)
        argv = [*builtin_argv(spec.grader), *flag]
        example = getattr(module, "EXAMPLE", None)
        if config is None and example is not None:  # checked on its own worked example
            request = {k: v for k, v in example.request.items() if k != "config"}
            files, committed, context = dict(example.files), dict(example.committed), dict(example.context)
            return Target(text, argv, worker, dict(example.config), request, files, committed, context)
        builtin_config.check(module, spec.grader, config or {})
        return Target(text, argv, worker, config or {})
    if isinstance(spec, PythonGrader):
        # Absolute, because the grader runs in the kit's scratch directory.
        target, _, func = str(spec.fn).rpartition(":")
        target = str(Path(target).resolve()) if target.endswith(".py") else target
        return Target(
            text, [sys.executable, "-m", "waza.runner.grading.python_host", f"{target}:{func}", *flag], worker, config or {}
        )
    return Target(text, list(spec.argv), worker or isinstance(spec, WorkerGrader), config or {})


def prepare_workspace(target: Target, cwd: Path) -> None:
    """Write the files the grader's example expects; ``committed`` ones in a fresh git repository first,
    ``context`` ones beside the workspace (named in the config as ``context_dir``)."""
    if target.committed:
        _write(cwd, target.committed)
        git = ["git", "-c", "user.name=waza", "-c", "user.email=waza@localhost", "-c", "commit.gpgsign=false"]
        for args in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "example"]):
            subprocess.run([*git, *args], cwd=cwd, check=True, capture_output=True)
    _write(cwd, target.files)
    if target.context:
        context = cwd.parent / f"{cwd.name}-context"
        _write(context, target.context)
        target.config["context_dir"] = str(context)


def _write(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


# ---------------------------------------------------------------- the requests


def base_request(target: Target, cwd: str) -> dict[str, Any]:
    """A request with every field a grader may use, small and plausible (the example's fields win)."""
    step = TrajectoryStep(type="message", step_id="s1", timestamp=5, turn=0, role="agent", content="2 + 2 = 4")
    return {
        "protocol": PROTOCOL_VERSION,
        "id": "conformance-minimal",
        "input": "What is 2 + 2?",
        "output": "2 + 2 = 4",
        "hint": "4",
        "expected": "4",
        "reference": "4",
        "trajectory": [step.to_dict()],
        "metadata": {"suite": "conformance"},
        "cwd": cwd,
        "config": target.config,
        "errors": [],
        "toolErrors": False,
    } | target.request


def unicode_request(base: dict[str, Any]) -> dict[str, Any]:
    text = "Résumé ✓ — 答案是 4 🎉👩‍💻 — العربية: ٤ — עברית: ארבע"
    return {**base, "id": "conformance-unicode-🎉", "input": f"{text}?", "output": text, "hint": "4", "expected": "4"}


def large_request(base: dict[str, Any]) -> dict[str, Any]:
    chunk = "log line with some tool output\n" * 1024
    count = LARGE_TRAJECTORY // len(chunk) + 1
    steps = [
        TrajectoryStep(type="message", step_id=f"s{i + 1}", timestamp=i, turn=0, role="agent", content=chunk).to_dict()
        for i in range(count)
    ]
    return {**base, "id": "conformance-large", "trajectory": steps}


def future_request(base: dict[str, Any]) -> dict[str, Any]:
    step = {**base["trajectory"][0], "futureStepField": {"x": 1}}
    return {
        **base,
        "id": "conformance-future",
        "protocolExtension": {"nested": [1, 2, 3]},
        "xVendor": "ignore me",
        "trajectory": [step],
    }


def sparse_request(base: dict[str, Any]) -> dict[str, Any]:
    absent = ("hint", "expected", "reference", "trajectory", "cwd", "metadata")
    return {k: v for k, v in base.items() if k not in absent} | {"id": "conformance-sparse"}


# ---------------------------------------------------------------- probing


class Probe(msgspec.Struct):
    """One request sent to a fresh process and everything that came back."""

    payload: bytes
    outcome: ProcessOutcome

    def evidence(self) -> ConformanceEvidence:
        return evidence(
            self.payload,
            self.outcome.stdout,
            self.outcome.code,
            self.outcome.signal,
            self.outcome.stderr_tail,
            self.outcome.duration_ms,
        )

    def result(self) -> GraderResult:
        """The decoded result, or GraderProtocolError saying why there is none."""
        return parse_result_bytes(self.outcome.stdout)

    def failure(self) -> str | None:
        """Why this exchange did not end in a valid result (None when it did)."""
        out = self.outcome
        if out.timed_out:
            return "no answer within the timeout; the process group was killed"
        if out.signal is not None:
            return f"killed by signal {out.signal}"
        try:
            result = self.result()
        except GraderProtocolError as exc:
            return str(exc) + (f" (exit code {out.code})" if out.code else "")
        problems = schemas.errors("GraderResult", result.to_dict())
        if problems:
            return f"result does not match the GraderResult schema: {problems[0]}"
        return None  # the exit code has a rule of its own


def evidence(sent: bytes, received: bytes, code: int | None, signal: int | None, stderr: str, ms: float) -> ConformanceEvidence:
    def preview(data: bytes) -> str:
        shown = data[:PREVIEW].decode("utf-8", "replace")
        return shown + ("..." if len(data) > PREVIEW else "")

    return ConformanceEvidence(
        sent=preview(sent),
        sent_bytes=len(sent),
        received=preview(received),
        received_bytes=len(received),
        exit_code=code,
        signal=signal,
        stderr_tail=stderr[-600:],
        duration=round(ms, 1),
    )


class Kit:
    """Runs the rules against one target, in order, collecting verdicts."""

    def __init__(self, target: Target, timeout: float) -> None:
        self.target = target
        self.timeout = timeout
        self.env = scrubbed_env()
        self.rules: list[ConformanceRule] = []
        #: The grader runs in the kit's scratch directory, so a request without ``cwd`` (the
        #: sparse rule) cannot make it write files where the user ran the kit.
        self.scratch: str | None = None

    def line(self, request: dict[str, Any]) -> bytes:
        """A request as sent: in worker mode one line, with a ``requestId`` (here its ``id``) to echo."""
        if not self.target.worker:
            return orjson.dumps(request)
        return orjson.dumps({**request, "requestId": request.get("id")}) + b"\n"

    async def probe(self, request: dict[str, Any] | bytes) -> Probe:
        payload = request if isinstance(request, bytes) else self.line(request)
        if self.target.worker and isinstance(request, bytes):
            payload += b"\n"  # a worker's request is a line; the end of stdin then tells it to exit
        try:
            outcome = await run_once(self.target.argv, stdin=payload, cwd=self.scratch, env=self.env, timeout=self.timeout)
        except OSError as exc:
            raise ConfigError(f"cannot start {self.target.argv[0]!r}: {exc.strerror or exc}") from None
        return Probe(payload, outcome)

    def verdict(
        self, rule_id: str, description: str, status: RuleStatus, reason: str, *probes: Probe, required: bool = True
    ) -> None:
        self.rules.append(
            ConformanceRule(
                id=rule_id,
                description=description,
                required=required,
                status=status,
                reason=reason,
                evidence=[p.evidence() for p in probes],
            )
        )

    def expect_result(self, rule_id: str, description: str, probe: Probe, ok: str) -> None:
        problem = probe.failure()
        self.verdict(rule_id, description, "fail" if problem else "pass", problem or ok, probe)

    async def run(self) -> ConformanceReport:
        with tempfile.TemporaryDirectory(prefix="waza-check-") as root:
            self.scratch = root
            cwd = str(Path(root, "workspace"))
            Path(cwd).mkdir()
            prepare_workspace(self.target, Path(cwd))
            base = base_request(self.target, cwd)
            requests = [base, base, future_request(base), sparse_request(base), unicode_request(base), large_request(base)]
            minimal, second, future, sparse, unicode, large, truncated = await side_by_side(
                [*(functools.partial(self.probe, r) for r in requests), functools.partial(self.probe, TRUNCATED)]
            )
            self.expect_result("valid-result", "answers a minimal request with a valid result", minimal, "a valid result")
            self.exit_code(minimal)
            self.clean_stdout(minimal)
            self.deterministic(minimal, second)
            self.expect_result("unknown-fields", "ignores request fields it does not know", future, "unknown fields ignored")
            self.sparse(sparse)
            self.expect_result("unicode", "handles non-ASCII, emoji and right-to-left text", unicode, "answered in valid UTF-8")
            self.expect_result(
                "large-request",
                "answers a request with a 5 MB trajectory within the timeout",
                large,
                f"answered in {large.outcome.duration_ms:.0f} ms",
            )
            self.reports_errors(truncated)
            if self.target.worker:
                fresh = [(base, minimal), (requests[4], unicode), (requests[2], future)]
                self.rules += await side_by_side(
                    [
                        functools.partial(self.echoes_request_id, base),
                        functools.partial(self.in_order, fresh),
                        functools.partial(self.after_reject, base),
                        functools.partial(self.exits_on_eof, base),
                    ]
                )
        conforms = all(r.status == "pass" for r in self.rules if r.required)
        mode: Literal["one-shot", "worker"] = "worker" if self.target.worker else "one-shot"
        return ConformanceReport(grader=self.target.name, argv=self.target.argv, mode=mode, conforms=conforms, rules=self.rules)

    # ------------------------------------------------------------ one-shot rules

    def exit_code(self, probe: Probe) -> None:
        out = probe.outcome
        description = "exits 0 after answering (a non-zero exit tells waza the grader could not grade)"
        if out.code == 0:
            self.verdict("exit-code", description, "pass", "exit code 0", probe)
        elif out.code is None:
            self.verdict("exit-code", description, "fail", "did not exit by itself (timed out or killed)", probe)
        else:
            tail = out.stderr_tail.strip().splitlines()[-1:] or ["nothing on stderr"]
            self.verdict("exit-code", description, "fail", f"exited with code {out.code} on a valid request: {tail[0]}", probe)

    def clean_stdout(self, probe: Probe) -> None:
        description = "writes only the result on stdout (diagnostics go to stderr)"
        raw = probe.outcome.stdout
        if not raw.strip():
            self.verdict("stdout-clean", description, "fail", "nothing on stdout", probe)
            return
        lines = [line for line in raw.splitlines() if line.strip()]
        if self.target.worker and len(lines) != 1:
            self.verdict(
                "stdout-clean",
                description,
                "fail",
                f"{len(lines)} lines on stdout for one request; a worker answers with exactly one",
                probe,
            )
            return
        try:
            orjson.loads(raw)
        except orjson.JSONDecodeError:
            stray = lines[0][:60].decode("utf-8", "replace")
            self.verdict(
                "stdout-clean", description, "fail", f"stdout holds more than one JSON document: stray output {stray!r}", probe
            )
            return
        self.verdict("stdout-clean", description, "pass", "one JSON document and nothing else", probe)

    def deterministic(self, first: Probe, second: Probe) -> None:
        description = "gives the same verdict for the same request (checked twice; details may differ)"
        try:
            a, b = (msgspec.structs.replace(p.result(), details=None).to_dict() for p in (first, second))
        except GraderProtocolError as exc:
            self.verdict("deterministic", description, "warning", f"cannot compare: {exc}", first, second, required=False)
            return
        if a == b:
            self.verdict("deterministic", description, "pass", "identical results", first, second, required=False)
        else:
            diff = sorted(k for k in a.keys() | b.keys() if a.get(k) != b.get(k))
            self.verdict(
                "deterministic", description, "warning", f"results differ in {', '.join(diff)}", first, second, required=False
            )

    def sparse(self, probe: Probe) -> None:
        """Absent optional fields: a result, or an ``{"error"}`` answer saying what is missing; never a crash."""
        description = "tolerates absent optional fields (hint, trajectory, cwd, metadata)"
        problem = probe.failure()
        refusal = refused(probe.outcome.stdout)
        if problem is None:
            self.verdict("optional-absent", description, "pass", "a valid result", probe)
        elif refusal is not None:
            self.verdict(
                "optional-absent",
                description,
                "pass",
                f'answered {{"error": {refusal!r}}}: allowed when it needs an absent field',
                probe,
            )
        else:
            tip = 'to refuse a request it cannot grade, a grader answers {"error": "why"}'
            self.verdict("optional-absent", description, "fail", f"{problem}; {tip}", probe)

    def reports_errors(self, probe: Probe) -> None:
        description = 'signals a request it cannot grade (non-zero exit or {"error": ...}), never silence'
        signalled = self.signalled_error(probe)
        if signalled:
            self.verdict("reports-errors", description, "pass", f"signalled an error ({signalled})", probe)
        elif probe.failure() is None:
            self.verdict(
                "reports-errors", description, "warning", "graded a request that is not valid JSON", probe, required=False
            )
        else:
            reason = probe.failure() or ""
            self.verdict("reports-errors", description, "fail", f"exited 0 without a result or an error: {reason}", probe)

    def signalled_error(self, probe: Probe) -> str | None:
        """How the grader said it could not grade: an ``{"error"}`` answer or a non-zero exit."""
        out = probe.outcome
        if out.timed_out or out.signal is not None:
            return None
        refusal = refused(out.stdout)
        if refusal is not None:
            return f'answered {{"error": {refusal[:60]!r}}}'
        if out.code:
            tail = out.stderr_tail.strip().splitlines()[-1:] or ["nothing on stderr"]
            return f"exit code {out.code}: {tail[0][:100]}"
        return None

    # ------------------------------------------------------------ worker rules

    async def session(
        self, lines: list[bytes], body: Callable[[Worker, list[bytes]], Awaitable[str | None]]
    ) -> tuple[str | None, ConformanceEvidence]:
        """Drive one worker process through ``body``; returns its problem (or None) and the evidence."""
        started = time.perf_counter()
        child = await Child.start(self.target.argv, env=self.env, keep_stdin=True)
        worker = Worker(child)
        answers: list[bytes] = []
        try:
            problem = await body(worker, answers)
            await self._close(child, self.grace)
        finally:
            # Whatever happened (a worker that ignores the end of stdin and SIGTERM included), its
            # group is killed here and its stderr read for a moment more, not past it: a child of
            # it that holds stderr open must not keep the kit waiting.
            try:
                child.kill()
                with anyio.move_on_after(0.5):
                    await child.wait()
            finally:
                await child.aclose()
        sent = b"".join(lines)
        code, signal = exit_parts(child.returncode)
        return problem, evidence(
            sent, b"".join(answers), code, signal, child.stderr.text(), (time.perf_counter() - started) * 1000
        )

    async def echoes_request_id(self, base: dict[str, Any]) -> ConformanceRule:
        """Two requests on one process, each answer echoing its own ``requestId`` (protocol 2)."""
        description = "worker: every answer echoes its request's requestId"
        requests = [{**base, "requestId": f"check-{n}-{base['id']}"} for n in (1, 2)]
        lines = [orjson.dumps(r) + b"\n" for r in requests]

        async def body(worker: Worker, answers: list[bytes]) -> str | None:
            for n, (line, request) in enumerate(zip(lines, requests, strict=True), start=1):
                try:
                    answers.append(await worker.exchange(line, self.timeout) + b"\n")
                except WorkerFault as fault:
                    return f"request {n} of {len(lines)}: {fault}"
                try:
                    decode_answer(answers[-1], request["id"], request["requestId"])
                except WorkerFault as fault:
                    return f"answer {n}: {fault}; waza would take it for an error, kill the worker and start another"
            return None

        problem, ev = await self.session(lines, body)
        return self._worker_rule("worker-request-id", description, problem, "both answers echo their requestId", ev)

    async def in_order(self, fresh: list[tuple[dict[str, Any], Probe]]) -> ConformanceRule:
        """Requests already answered by fresh processes, now all through one: the answers must not change."""
        description = "worker: answers several requests in order on one process, as a fresh process would"
        lines = [self.line(request) for request, _ in fresh]
        alone = [probe for _, probe in fresh]

        async def body(worker: Worker, answers: list[bytes]) -> str | None:
            for n, (line, ref) in enumerate(zip(lines, alone, strict=True), start=1):
                try:
                    answers.append(await worker.exchange(line, self.timeout) + b"\n")
                except WorkerFault as fault:
                    return f"request {n} of {len(lines)}: {fault}"
                if _decoded(answers[-1]) != _decoded(ref.outcome.stdout):
                    return f"answer {n} differs from a fresh process's answer to the same request (state leaks, or answers are out of order)"
            return None

        problem, ev = await self.session(lines, body)
        return self._worker_rule("worker-in-order", description, problem, "3 answers, in order, as fresh processes give them", ev)

    async def after_reject(self, base: dict[str, Any]) -> ConformanceRule:
        description = "worker: keeps serving after a request it rejects"
        lines = [self.line({**base, "id": "before"}), b'{"id": "broken", "output": \n', self.line({**base, "id": "after"})]

        async def body(worker: Worker, answers: list[bytes]) -> str | None:
            labels = ("the request before", "the malformed request", "the request after")
            for line, label in zip(lines, labels, strict=True):
                try:
                    answers.append(await worker.exchange(line, self.timeout) + b"\n")
                except WorkerFault as fault:
                    return f"{label}: {fault}"
            try:
                parse_result_bytes(answers[-1])
            except GraderProtocolError as exc:
                return f"the request after a rejected one got no valid result: {exc}"
            return None

        problem, ev = await self.session(lines, body)
        return self._worker_rule("worker-after-reject", description, problem, "answered the malformed line and went on", ev)

    async def exits_on_eof(self, base: dict[str, Any]) -> ConformanceRule:
        description = "worker: exits with code 0 when stdin closes"
        lines = [self.line(base)]

        async def body(worker: Worker, answers: list[bytes]) -> str | None:
            try:
                answers.append(await worker.exchange(lines[0], self.timeout) + b"\n")
            except WorkerFault as fault:
                return str(fault)
            worker.child.close_stdin()
            with anyio.move_on_after(self.grace):
                code = await worker.child.wait()
                return None if code == 0 else f"exited with code {code} when stdin closed"
            worker.child.kill()  # now, so the session does not give it a second grace
            await worker.child.wait()
            return f"still running {self.grace:g}s after stdin closed; its process group was killed"

        problem, ev = await self.session(lines, body)
        return self._worker_rule("worker-exits-on-eof", description, problem, "exited 0", ev)

    @property
    def grace(self) -> float:
        """How long a worker gets to exit after stdin closes: EXIT_WAIT, or ``--timeout`` when shorter."""
        return min(EXIT_WAIT, self.timeout)

    @staticmethod
    async def _close(child: Child, grace: float) -> None:
        """End of stdin, then a moment to exit by itself, so the exit code in the evidence is its own."""
        child.close_stdin()
        with anyio.move_on_after(grace):
            await child.wait()

    @staticmethod
    def _worker_rule(rule_id: str, description: str, problem: str | None, ok: str, ev: ConformanceEvidence) -> ConformanceRule:
        return ConformanceRule(
            id=rule_id,
            description=description,
            required=True,
            status="fail" if problem else "pass",
            reason=problem or ok,
            evidence=[ev],
        )


async def side_by_side(jobs: Sequence[Callable[[], Awaitable[T]]]) -> list[T]:
    """Run ``jobs`` at once, their results in the jobs' order. A grader that cannot be started
    raises its one ConfigError, not the group of them a task group would."""
    results: list[Any] = [None] * len(jobs)

    async def one(index: int) -> None:
        results[index] = await jobs[index]()

    try:
        async with anyio.create_task_group() as tg:
            for index in range(len(jobs)):
                tg.start_soon(one, index)
    except BaseExceptionGroup as group:
        error = find_cause(group, ConfigError)
        if error is None:
            raise
        raise error from None
    return results


def refused(stdout: bytes) -> str | None:
    """The reason in an ``{"error": "why"}`` answer (the protocol's refusal), or None."""
    try:
        normalize_result(_decoded(stdout))
    except GraderProtocolError as exc:
        prefix = "grader reported an error: "
        if str(exc).startswith(prefix):
            return str(exc)[len(prefix) :]
    return None


def _decoded(raw: bytes) -> Any:
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError:
        return raw


async def check(target: Target, timeout: float) -> ConformanceReport:
    return await Kit(target, timeout).run()


# ---------------------------------------------------------------- showing it

MARK = {"pass": "PASS", "fail": "FAIL", "warning": "WARN"}


def _shown_path(arg: str) -> str:
    """A path under the current directory as the user would type it (the JSON report keeps it absolute)."""
    here = Path.cwd()
    path = Path(arg)
    return str(path.relative_to(here)) if path.is_absolute() and path.is_relative_to(here) else arg


def describe(report: ConformanceReport) -> str:
    """The report for a person: one line per rule, evidence under anything that did not pass."""
    lines = [f"waza graders check {report.grader} ({report.mode}: {' '.join(map(_shown_path, report.argv))})", ""]
    width = max(len(r.id) for r in report.rules)
    for rule in report.rules:
        took = sum(e.duration for e in rule.evidence)
        optional = "" if rule.required else " (advisory)"
        lines.append(f"  {MARK[rule.status]}  {rule.id:<{width}}  {rule.description}{optional}  [{took:.0f} ms]")
        if rule.status != "pass":
            lines.append(f"        reason:   {rule.reason}")
            for ev in rule.evidence[:1]:
                lines.append(f"        sent:     {ev.sent_bytes} bytes: {ev.sent[:120]!r}")
                lines.append(f"        received: {ev.received_bytes} bytes: {ev.received[:120]!r}")
                lines.append(f"        exit:     code {ev.exit_code}" + (f", signal {ev.signal}" if ev.signal else ""))
                if ev.stderr_tail.strip():
                    lines.append(f"        stderr:   {ev.stderr_tail.strip().splitlines()[-1][:160]!r}")
    counts = {s: sum(r.status == s for r in report.rules) for s in MARK}
    verdict = "conforms" if report.conforms else "does NOT conform"
    lines += [
        "",
        f"{len(report.rules)} rules: {counts['pass']} passed, {counts['fail']} failed, {counts['warning']} warnings: {verdict}",
    ]
    return "\n".join(lines)
