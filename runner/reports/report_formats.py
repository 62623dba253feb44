"""``waza report`` formats: Markdown, CSV and JUnit XML (HTML is in :mod:`.report_html`).

Every format has a summary at the top that needs the whole file (counts,
one row per prompt), and a body per prompt. Rows are tiny; bodies carry
outputs and trajectories, so they are spooled to a temporary file as each
result is read and copied out after the summary: memory stays bounded by one
result however large the input.
"""

from __future__ import annotations

import csv
import io
import re
import shutil
import tempfile
import xml.etree.ElementTree as ET
from collections import Counter
from collections.abc import Iterator
from typing import IO, Protocol
from xml.sax.saxutils import quoteattr

import msgspec

from waza.protocol.records import CaptureResult
from waza.protocol.trial_records import TrialResult
from waza.runner.analysis.attempts import Attempt, attempts, first_error_line, trials_status
from waza.runner.analysis.markdown import cell, num, one_line, table
from waza.runner.analysis.pass_rate import describe_pass_rate, describe_trials_pass_rate, trials_pass_rate
from waza.runner.analysis.runs import ResultsFile
from waza.runner.analysis.summaries import step_line, summarize, summary_markdown
from waza.runner.wording import count

SPOOL_IN_MEMORY = 8 * 1024 * 1024


class Entry(msgspec.Struct):
    """One prompt of a report: its verdict and its attempts (one, or one per trial)."""

    number: int
    id: str
    status: str
    score: float | None
    attempts: list[Attempt]
    trials: str | None = None  # "passes/n", for trials files

    @property
    def duration(self) -> int | None:
        known = [a.duration for a in self.attempts if a.duration is not None]
        return sum(known) if known else None

    @property
    def tool_calls(self) -> int:
        return sum(1 for a in self.attempts for s in a.trajectory if s.type == "tool_call")


class Row(msgspec.Struct):
    """What the summary table keeps of an entry once its body is written."""

    number: int
    id: str
    status: str
    score: float | None
    duration: int | None
    tool_calls: int
    trials: str | None
    why: str = ""  # an errored prompt: the first line of its first error
    verdict: bool = True  # False when the agent itself failed: its graders judged an output that never came

    @classmethod
    def of(cls, e: Entry) -> Row:
        verdict = not any(a.status == "error" and a.errors for a in e.attempts) or e.trials is not None
        return cls(e.number, e.id, e.status, e.score, e.duration, e.tool_calls, e.trials, first_error_line(e.attempts), verdict)


def entry_for(number: int, result: CaptureResult | TrialResult) -> Entry:
    tries = list(attempts(result))
    if isinstance(result, TrialResult):
        status = trials_status(result.n, result.passes, [a.status for a in tries])
        return Entry(number, result.id, status, result.mean_score, tries, trials=f"{result.passes}/{result.n}")
    return Entry(number, result.id, tries[0].status, tries[0].score, tries)


def entries(path: str) -> Iterator[Entry]:
    for number, (_, result) in enumerate(ResultsFile(path), start=1):
        yield entry_for(number, result)


class Totals(msgspec.Struct):
    """Counts and mean score over every row, for the summary and the line ``waza report`` logs."""

    rows: int = 0
    statuses: Counter[str] = msgspec.field(default_factory=Counter)
    score_sum: float = 0.0
    scored: int = 0
    trial_rates: list[float] = msgspec.field(default_factory=list)  # trials files: each prompt's pass rate
    trial_errors: int = 0

    def add(self, row: Row, entry: Entry) -> None:
        self.rows += 1
        self.statuses[row.status] += 1
        if row.score is not None and row.status != "error":  # as ``waza compare`` counts: an error's score says nothing
            self.score_sum += row.score
            self.scored += 1
        if entry.trials is not None:
            tries = Counter(a.status for a in entry.attempts)
            self.trial_errors += tries["error"]
            rate = trials_pass_rate([a.status for a in entry.attempts])
            if rate is not None:
                self.trial_rates.append(rate)

    @property
    def pass_rate(self) -> str:
        """The pass rate with its definition beside it (``analysis.pass_rate``); "" when nothing was judged."""
        if self.trial_rates or self.trial_errors:
            return describe_trials_pass_rate(self.trial_rates, self.trial_errors)
        return describe_pass_rate(self.statuses["passed"], self.statuses["failed"], self.statuses["error"])

    @property
    def mean_score(self) -> float | None:
        return self.score_sum / self.scored if self.scored else None

    def describe(self) -> str:
        counts = ", ".join(f"{n} {s}" for s, n in sorted(self.statuses.items(), key=lambda kv: (-kv[1], kv[0])))
        rate = self.pass_rate
        return (
            count(self.rows, "prompt")
            + (f": {counts}" if counts else "")
            + (f"; {rate}" if rate else "")
            + f"; mean score {num(self.mean_score)}"
        )


class Format(Protocol):
    """A report format: a body chunk per entry, then the document around the spooled bodies."""

    def body(self, entry: Entry) -> bytes: ...

    def write(self, out: IO[bytes], title: str, rows: list[Row], totals: Totals, bodies: IO[bytes]) -> None: ...


def render(path: str, fmt: Format, title: str, out: IO[bytes]) -> Totals:
    """Read results once, spool the bodies, then write the document."""
    rows: list[Row] = []
    totals = Totals()
    with tempfile.SpooledTemporaryFile(max_size=SPOOL_IN_MEMORY) as bodies:
        for entry in entries(path):
            bodies.write(fmt.body(entry))
            row = Row.of(entry)
            rows.append(row)
            totals.add(row, entry)
        bodies.seek(0)
        fmt.write(out, title, rows, totals, bodies)
    return totals


def _ms(value: int | None) -> str:
    return "" if value is None else f"{value / 1000:.2f}"


# ---------------------------------------------------------------- Markdown


class MarkdownReport:
    """A summary table of every prompt, then details of each prompt that did not pass."""

    def __init__(self, width: int) -> None:
        self.width = width

    def body(self, entry: Entry) -> bytes:
        if entry.status == "passed":
            return b""
        return "".join(summary_markdown(summarize(a, self.width)) for a in entry.attempts if a.status != "passed").encode()

    def write(self, out: IO[bytes], title: str, rows: list[Row], totals: Totals, bodies: IO[bytes]) -> None:
        trials = any(r.trials is not None for r in rows)
        head = ["#", "id", "status", "score", "seconds", "tool calls"] + (["passes"] if trials else [])
        lines = [
            [r.number, r.id, r.status, num(r.score), _ms(r.duration) or "n/a", r.tool_calls] + ([r.trials] if trials else [])
            for r in rows
        ]
        out.write(f"# {cell(title, 200)}\n\n{totals.describe()}.\n\n".encode())
        out.write(table(head, lines).encode())
        out.write(b"\n# Not passed\n\n")
        shutil.copyfileobj(bodies, out)


# ---------------------------------------------------------------- CSV

CSV_COLUMNS = [
    "id",
    "trial",
    "status",
    "pass",
    "score",
    "duration_ms",
    "first_response_ms",
    "turns",
    "tool_calls",
    "failed_tool_calls",
    "input_tokens",
    "output_tokens",
    "grades",
    "reasoning",
    "errors",
    "output",
]


#: A cell starting with one of these is a formula to a spreadsheet (OWASP's CSV-injection list).
_FORMULA_LEADS = ("=", "+", "-", "@", "\t", "\r")


def csv_cell(value: object) -> object:
    """A text cell a spreadsheet shows as text: one starting like a formula gets a leading single quote
    (OWASP's CSV-injection rule), so ``=HYPERLINK(...)`` an agent printed is never evaluated. Numbers
    are written as they are (a negative score is not text)."""
    if isinstance(value, str) and value.startswith(_FORMULA_LEADS):
        return "'" + value
    return value


def _flag(value: bool | None) -> str:
    return "" if value is None else "true" if value else "false"


class CsvReport:
    """One row per attempt (per trial for trials files), for spreadsheets and pandas."""

    def __init__(self, width: int) -> None:
        self.width = width

    def body(self, entry: Entry) -> bytes:
        buf = io.StringIO()
        writer = csv.writer(buf, lineterminator="\r\n")
        for a in entry.attempts:
            s = summarize(a, self.width)
            writer.writerow(
                map(
                    csv_cell,
                    [
                        s.id,
                        s.trial,
                        s.status,
                        _flag(s.passed),
                        s.score,
                        s.duration,
                        s.first_response,
                        s.turns,
                        s.tool_calls,
                        s.failed_tool_calls,
                        s.input_tokens,
                        s.output_tokens,
                        ";".join(f"{g.name}:{g.status}" for g in s.grades),
                        " | ".join(f"{g.name}: {g.reasoning}" for g in s.grades if g.status != "passed" and g.reasoning),
                        " | ".join(s.errors),
                        s.output,
                    ],
                )
            )
        return buf.getvalue().encode()

    def write(self, out: IO[bytes], title: str, rows: list[Row], totals: Totals, bodies: IO[bytes]) -> None:
        buf = io.StringIO()
        csv.writer(buf, lineterminator="\r\n").writerow(CSV_COLUMNS)
        out.write(buf.getvalue().encode())
        shutil.copyfileobj(bodies, out)


# ---------------------------------------------------------------- JUnit XML

_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


def xml_text(value: object) -> str:
    """Text XML 1.0 can carry: characters it forbids (control codes from an agent) become U+FFFD."""
    return _NOT_XML.sub("\ufffd", "" if value is None else str(value))


def _reasons(a: Attempt) -> list[str]:
    out = [f"error: {e}" for e in a.errors]
    for g in a.grades:
        if g.status == "error":
            out.append(f"{g.name} (grader error): {g.error}")
        elif g.status == "failed":
            out.append(f"{g.name}: {g.reasoning or 'failed'}")
    return out


def _attempt_text(a: Attempt, width: int) -> str:
    s = summarize(a, width)
    head = f"trial {a.trial}: " if a.trial is not None else ""
    lines = [f"{head}{s.status}, score {num(s.score)}, {_ms(s.duration) or '?'} s, {s.tool_calls} tool call(s)"]
    lines.append(f"output: {s.output}")
    lines.extend(f"  {g.name}: {g.status} {num(g.score)} {g.reasoning or ''}".rstrip() for g in s.grades)
    lines.extend("  " + step_line(i, step, one_line) for i, step in enumerate(s.steps, start=1))
    return "\n".join(lines)


class JunitReport:
    """One testcase per prompt: failed -> <failure> with the graders' reasoning, error -> <error>,
    pending/ungraded -> <skipped>; the output, steps and (for trials) every trial in <system-out>."""

    def __init__(self, width: int) -> None:
        self.width = width

    def body(self, entry: Entry) -> bytes:
        case = ET.Element("testcase", name=xml_text(entry.id), classname="waza", time=f"{(entry.duration or 0) / 1000:.3f}")
        reasons = [f"trial {a.trial}: {r}" if a.trial is not None else r for a in entry.attempts for r in _reasons(a)]
        summary = f"{entry.trials} trials passed" if entry.trials is not None else ""
        if entry.status in ("failed", "flaky"):
            message = summary or "; ".join(g.name for g in entry.attempts[0].grades if g.status == "failed")
            child = ET.SubElement(case, "failure", message=xml_text(f"{entry.status}: {message}"), type=entry.status)
            child.text = xml_text("\n".join(reasons))
        elif entry.status == "error":
            message = summary or (reasons[0] if reasons else "error")
            child = ET.SubElement(case, "error", message=xml_text(one_line(message, 300)), type="error")
            child.text = xml_text("\n".join(reasons))
        elif entry.status in ("pending", "ungraded"):
            ET.SubElement(case, "skipped", message=entry.status)
        out = ET.SubElement(case, "system-out")
        out.text = xml_text("\n\n".join(_attempt_text(a, self.width) for a in entry.attempts))
        return ET.tostring(case, encoding="unicode").encode() + b"\n"

    def write(self, out: IO[bytes], title: str, rows: list[Row], totals: Totals, bodies: IO[bytes]) -> None:
        s = totals.statuses
        counts = {
            "tests": str(totals.rows),
            "failures": str(s["failed"] + s["flaky"]),
            "errors": str(s["error"]),
            "skipped": str(s["pending"] + s["ungraded"]),
            "time": f"{sum(r.duration or 0 for r in rows) / 1000:.3f}",
        }
        attrs = " ".join(f'{k}="{v}"' for k, v in counts.items())
        name = f"name={quoteattr(xml_text(title))}"
        out.write(f'<?xml version="1.0" encoding="UTF-8"?>\n<testsuites {name} {attrs}>\n'.encode())
        out.write(f"<testsuite {name} {attrs}>\n".encode())
        shutil.copyfileobj(bodies, out)
        out.write(b"</testsuite>\n</testsuites>\n")
