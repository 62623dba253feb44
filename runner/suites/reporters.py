"""The result document on disk: JSON, JUnit XML (for CI test tabs), Markdown (for people) and the
original waza's results.json (for ``waza gate`` and the original's own tools).

``--reporter KIND:FILE`` picks them (repeatable; ``FILE`` ``-`` is stdout,
which must then not also carry the JSONL stream). Every reporter renders the
same SuiteResult, so they cannot disagree, and masks secrets as the JSONL
writer does. In JUnit, tasks are test cases
(failed -> <failure>, error -> <error>, pending -> <skipped>), metrics with a
threshold and trigger prompts are test cases of their own suites.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Callable
from pathlib import Path

import msgspec
import orjson

from waza.protocol.errors import ConfigError
from waza.protocol.io.secrets import Redactor
from waza.protocol.io.stdout import stdout_bytes
from waza.protocol.records import CaptureResult
from waza.protocol.suite_records import SuiteResult, SuiteTask, TriggerCase
from waza.runner.analysis.markdown import cell, num, table
from waza.runner.analysis.outcome_format import TaskStats, encode
from waza.runner.analysis.outcome_inputs import from_suite
from waza.runner.analysis.passk import pass_hat_k
from waza.runner.wording import count

KINDS = ("json", "junit", "markdown", "results")
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


class Reporter(msgspec.Struct):
    """One ``--reporter KIND:FILE``: where the document goes and the function that renders it."""

    path: str
    render: Callable[[SuiteResult], bytes]

    def write(self, result: SuiteResult) -> None:
        # Masked as a record, then rendered: JUnit and Markdown are not JSON, and their text holds waza's own
        # words (passed, failed) that a byte-wise mask would rewrite when a secret equals one.
        data = self.render(SuiteResult.from_dict(Redactor().mask_record(result.to_dict())))
        if self.path == "-":
            out = stdout_bytes()  # a notebook's or redirect_stdout's text stream has no byte buffer
            out.write(data)
            out.flush()
        else:
            Path(self.path).write_bytes(data)


def parse(specs: list[str], *, jsonl_on_stdout: bool) -> list[Reporter]:
    """Check every --reporter before the run (a bad one would otherwise surface after it)."""
    out: list[Reporter] = []
    for spec in specs:
        kind, sep, path = spec.partition(":")
        if not sep or kind not in KINDS or not path:
            raise ConfigError(f"--reporter takes json:FILE, junit:FILE, markdown:FILE or results:FILE, got {spec!r}")
        if path == "-" and (jsonl_on_stdout or any(r.path == "-" for r in out)):
            raise ConfigError(f"--reporter {spec}: stdout already carries another output; write one of them to a file")
        if path != "-" and not Path(path).parent.is_dir():
            raise ConfigError(f"--reporter {spec}: directory {str(Path(path).parent)!r} does not exist")
        out.append(Reporter(path, RENDERERS[kind]))
    return out


def one_line(result: SuiteResult) -> str:
    s = result.summary
    parts = [
        f"{count(s.tasks, 'task')} ({count(s.trials, 'trial')}): {s.passed} passed, {s.failed} failed, {s.errored} error, {s.pending} pending"
    ]
    if s.score is not None:
        parts.append(f"score {s.score:.3f}")
    return f"{result.suite} {s.status.upper()}: " + "; ".join(parts)


def to_json(result: SuiteResult) -> bytes:
    return orjson.dumps(result.to_dict(), option=orjson.OPT_INDENT_2) + b"\n"


def _problems(trial: CaptureResult) -> list[str]:
    lines = [f"trial {trial.trial}: agent error: {e}" for e in trial.errors]
    for g in trial.grades:
        if g.status == "error":
            lines.append(f"trial {trial.trial}: {g.name}: grader error: {g.error}")
        elif g.status == "failed":
            lines.append(f"trial {trial.trial}: {g.name}: {g.reasoning or 'failed'}")
    return lines


def _task_lines(task: SuiteTask) -> list[str]:
    return [line for trial in task.trials for line in _problems(trial)]


def to_junit(result: SuiteResult) -> bytes:
    root = ET.Element("testsuites", name=result.suite)
    tasks = ET.SubElement(root, "testsuite", name=result.suite)
    for task in result.tasks:
        seconds = sum((t.timing.total if t.timing else 0) for t in task.trials) / 1000
        case = ET.SubElement(tasks, "testcase", classname=result.suite, name=task.id, time=f"{seconds:.3f}")
        detail = "\n".join(_task_lines(task))
        if task.status == "failed":
            ET.SubElement(case, "failure", message=f"{task.name}: pass rate {num(task.pass_rate)}").text = detail
        elif task.status == "error":
            ET.SubElement(case, "error", message=f"{task.name}: a trial errored").text = detail
        elif task.status == "pending":
            ET.SubElement(case, "skipped", message="awaiting human review")
    _counts(tasks)
    gated = [m for m in result.metrics if m.enabled and m.threshold is not None]
    if gated:
        metrics = ET.SubElement(root, "testsuite", name=f"{result.suite}.metrics")
        for m in gated:
            case = ET.SubElement(metrics, "testcase", classname=f"{result.suite}.metrics", name=m.name)
            if m.passed is False:
                ET.SubElement(case, "failure", message=f"{m.value:.3f} < {m.threshold:g}").text = m.detail
            elif m.passed is None:
                ET.SubElement(case, "skipped", message=m.detail)
        _counts(metrics)
    if result.triggers is not None:
        trig = ET.SubElement(root, "testsuite", name=f"{result.suite}.triggers")
        for i, c in enumerate(result.triggers.cases, 1):
            case = ET.SubElement(trig, "testcase", classname=f"{result.suite}.triggers", name=f"{i:03d} {c.prompt}")
            if c.error is not None:
                ET.SubElement(case, "error", message=c.error)
            elif not c.correct:
                want = "trigger" if c.should_trigger else "not trigger"
                ET.SubElement(case, "failure", message=f"should {want} {result.triggers.skill}").text = c.reason
        _counts(trig)
    _counts(root, nested=True)
    _xml_safe(root)
    ET.indent(root)
    document: bytes = ET.tostring(root, encoding="utf-8", xml_declaration=True)  # bytes for any encoding but "unicode"
    return document + b"\n"


def _xml_safe(root: ET.Element) -> None:
    """Replace the characters XML 1.0 cannot carry (control codes an agent may print) with U+FFFD."""
    for element in root.iter():
        if element.text:
            element.text = _NOT_XML.sub("\ufffd", element.text)
        for key, value in element.attrib.items():
            element.attrib[key] = _NOT_XML.sub("\ufffd", value)


def _counts(element: ET.Element, nested: bool = False) -> None:
    cases = element.iter("testcase") if nested else element.findall("testcase")
    cases = list(cases)
    element.set("tests", str(len(cases)))
    for tag, attr in (("failure", "failures"), ("error", "errors"), ("skipped", "skipped")):
        element.set(attr, str(sum(1 for c in cases if c.find(tag) is not None)))


def to_markdown(result: SuiteResult) -> bytes:
    s = result.summary
    out = [f"# {cell(result.suite)}: {s.status}\n"]
    if result.description:
        out.append(result.description.strip() + "\n")
    out.append(
        f"Adapter `{result.adapter}`, {count(result.trials_per_task, 'trial')} per task; "
        f"{count(s.tasks, 'task')}: {s.passed} passed, {s.failed} failed, {s.errored} error, {s.pending} pending. "
        f"Overall score {num(s.score)}.\n"
    )
    if s.missed:
        out.append("\n".join(f"- {_bullet(m)}" for m in s.missed) + "\n")
    if result.metrics:
        out.append("## Metrics\n")
        metric_rows = [
            (m.name, num(m.value), "n/a" if m.threshold is None else f"{m.threshold:g}", _verdict(m.passed, m.enabled), m.detail)
            for m in result.metrics
        ]
        out.append(table(["metric", "value", "threshold", "result", "how"], metric_rows))
    out.append("## Tasks\n")
    outcome = from_suite(result)
    rows = [
        (t.id, t.status, num(t.pass_rate), _ci(o.stats), _curve(o.stats), num(t.score), len(t.trials))
        for t, o in zip(result.tasks, outcome.tasks, strict=True)
    ]
    out.append(table(["task", "status", "pass rate", "95% CI", "pass^k (k = 1, 2, ...)", "score", "trials"], rows))
    statistics = outcome.summary.statistics
    if statistics is not None and statistics.pass_hat_k:
        curve = "  ".join(f"pass^{k}={v:.0%}" for k, v in enumerate(statistics.pass_hat_k, 1))
        out.append(f"Reliability over tasks: {curve}.\n")
    broken = [t for t in result.tasks if t.status in ("failed", "error")]
    if broken:
        out.append("## What went wrong\n")
        for t in broken:
            out.append(f"### {cell(t.id)}\n")
            out.append("\n".join(f"- {_bullet(line)}" for line in _task_lines(t)) + "\n")
    if result.triggers is not None:
        r = result.triggers
        out.append("## Trigger tests\n")
        out.append(
            f"Skill `{cell(r.skill)}`: accuracy {num(r.accuracy)}, precision {num(r.precision)}, "
            f"recall {num(r.recall)}, F1 {num(r.f1)} over {count(r.prompts, 'prompt')} ({r.errors} errored).\n"
        )
        wrong = [c for c in r.cases if not c.correct]
        if wrong:
            case_rows = [(c.prompt, _yes(c.should_trigger), c.confidence, _triggered(c), c.error or c.reason) for c in wrong]
            out.append(table(["prompt", "should trigger", "confidence", "triggered", "note"], case_rows))
    return ("\n".join(out).rstrip("\n") + "\n").encode()


def _triggered(case: TriggerCase) -> str:
    """yes / no, with the trigger rate when the prompt ran more than once (``--trigger-trials``)."""
    if case.runs == 1 or case.trigger_rate is None:
        return _yes(case.triggered)
    return f"{_yes(case.triggered)} ({case.trigger_rate:.0%} of {case.runs})"


def _ci(stats: TaskStats | None) -> str:
    """The task's 95 % Wilson interval on its pass rate (n/a with fewer than two judged trials)."""
    ci = stats.pass_rate_ci if stats is not None else None
    return "n/a" if ci is None else f"{ci.lower:.2f}-{ci.upper:.2f}"


def _curve(stats: TaskStats | None) -> str:
    """pass^k for k = 1 .. the task's judged trials: how often k fresh trials would all pass."""
    if stats is None or not stats.total_runs:
        return "n/a"
    return " ".join(f"{pass_hat_k(stats.total_runs, stats.passed_runs, k) or 0.0:.2f}" for k in range(1, stats.total_runs + 1))


def _bullet(text: str, limit: int = 300) -> str:
    """One list item: a single line, bounded, with HTML-looking text kept literal."""
    line = " ".join(text.split())
    line = line if len(line) <= limit else line[: limit - 1] + "…"
    return line.replace("<", "&lt;")


def _yes(value: bool | None) -> str:
    return "error" if value is None else ("yes" if value else "no")


def _verdict(passed: bool | None, enabled: bool) -> str:
    if not enabled:
        return "disabled"
    return {True: "pass", False: "FAIL", None: "n/a"}[passed]


def to_results(result: SuiteResult) -> bytes:
    """The original waza's results.json, with its Wilson intervals and pass^k curve."""
    return encode(from_suite(result))


RENDERERS: dict[str, Callable[[SuiteResult], bytes]] = {
    "json": to_json,
    "junit": to_junit,
    "markdown": to_markdown,
    "results": to_results,
}
