"""The runs page, a run's page (filters, search, plots, paging) and one prompt's page.

Lists come from the index (:mod:`.index`), never from whole files; a prompt's
page reads its one record back by offset and shows it with the HTML report's
own markup (:mod:`waza.runner.reports.report_html`), so the report and the viewer show
a trajectory the same way. Texts longer than :data:`TEXT_LIMIT` are cut with a
note, so one huge output cannot make a page unusable.
"""

from __future__ import annotations

import copy
import math
import string
from collections.abc import Callable
from typing import Any

import msgspec
import orjson

from waza.protocol.records import CaptureResult, TrajectoryStep
from waza.protocol.suite_records import SuiteResult
from waza.protocol.trial_records import TrialResult, TrialsSummary
from waza.runner import wording
from waza.runner.analysis.attempts import Attempt, attempts
from waza.runner.analysis.pass_rate import DEFINITION
from waza.runner.reports.report_html import attempt_html
from waza.runner.view.html import badge, e, href, link, num, page, secs, table, when
from waza.runner.view.index import Index, Registry
from waza.runner.view.svg import Point, Series, bars, finite, histogram, k_curves

__all__ = ["Query", "prompt_page", "rows_fragment", "run_page", "runs_page", "runs_rows", "search"]

PAGE_SIZE = 100
TEXT_LIMIT = 200_000
STATUS_ORDER = ("passed", "failed", "flaky", "error", "pending", "ungraded")
RESULT_KINDS = ("capture", "trials", "suite")

# ---------------------------------------------------------------- runs page


class RunRow(msgspec.Struct, frozen=True):
    """What the runs table shows of a file, copied under the index's lock."""

    key: str
    kind: str
    results: int
    pass_rate: float | None
    mean_score: float | None
    errors: int
    adapters: str
    graders: str
    date: float | None
    duration: float | None
    progress: float
    growing: bool
    problems: int
    error: str | None

    @classmethod
    def of(cls, index: Index) -> RunRow:
        with index.lock:
            t = index.totals
            date = t.first_start if t.first_start is not None else index.mtime * 1000
            return cls(
                key=index.key,
                kind=index.kind,
                results=t.results,
                pass_rate=t.pass_rate if index.kind in RESULT_KINDS else None,
                mean_score=t.mean_score if index.kind in RESULT_KINDS else None,
                errors=t.errors,
                adapters=", ".join(t.adapters),
                graders=", ".join(sorted(t.graders)),
                date=date,
                duration=t.duration,
                progress=index.scanned / index.size if index.size else 1.0,
                growing=index.growing,
                problems=index.bad_lines,
                error=index.error,
            )


SORTS: dict[str, Callable[[RunRow], Any]] = {
    "file": lambda r: r.key,
    "kind": lambda r: r.kind,
    "results": lambda r: r.results,
    "pass": lambda r: -1 if r.pass_rate is None else r.pass_rate,
    "score": lambda r: -1 if r.mean_score is None else r.mean_score,
    "errors": lambda r: r.errors,
    "date": lambda r: r.date or 0,
    "duration": lambda r: r.duration or 0,
}
RUN_COLUMNS = (
    ("file", "file"),
    ("kind", "kind"),
    ("results", "results"),
    ("pass", "pass rate"),
    ("score", "mean score"),
    ("errors", "errors"),
    ("", "agent / adapter"),
    ("", "graders"),
    ("date", "date"),
    ("duration", "duration"),
)


def _target(row: RunRow) -> str:
    if row.kind == "labels":
        return href("/calibration", labels=row.key)
    if row.kind == "calibration":
        return href("/calibration", report=row.key)
    return href("/run", f=row.key)


def _run_row(row: RunRow) -> str:
    state = ""
    if row.error:
        state = f' <span class="error">{e(row.error)}</span>'
    elif row.progress < 1:
        state = f' <span class="live">indexing {row.progress:.0%}</span>'
    elif row.growing:
        state = ' <span class="live">growing</span>'
    if row.problems:
        state += f' <span class="badge s-error">{row.problems} bad lines</span>'
    rate = "" if row.pass_rate is None else f"{row.pass_rate:.1%}"
    return (
        f'<tr data-kind="{e(row.kind)}"><td class="wrap"><a href="{_target(row)}">{e(row.key)}</a>{state}</td><td>{e(row.kind)}</td>'
        f"<td>{row.results}</td><td>{rate}</td><td>{'' if row.mean_score is None else num(row.mean_score)}</td>"
        f'<td>{row.errors or ""}</td><td class="wrap">{e(row.adapters)}</td><td class="wrap">{e(row.graders)}</td>'
        f"<td>{e(when(row.date))}</td><td>{e(secs(row.duration))}</td></tr>"
    )


def runs_rows(registry: Registry, sort: str, desc: bool, q: str = "") -> list[str]:
    rows = [RunRow.of(i) for i in registry.listing()]
    if q:
        needle = q.lower()
        rows = [r for r in rows if needle in f"{r.key} {r.kind} {r.adapters} {r.graders}".lower()]
    rows.sort(key=SORTS.get(sort, SORTS["file"]), reverse=desc)
    return [_run_row(r) for r in rows]


def runs_page(registry: Registry, roots: list[str], sort: str, desc: bool, q: str) -> str:
    heads = []
    for key, label in RUN_COLUMNS:
        if not key:
            heads.append(e(label))
            continue
        flip = not desc if key == sort else key in ("results", "pass", "score", "errors", "date", "duration")
        arrow = (" ▼" if desc else " ▲") if key == sort else ""
        cls = ' class="sorted"' if key == sort else ""
        heads.append(f'<a{cls} href="{href("/", sort=key, dir="desc" if flip else "asc", q=q)}">{e(label)}{arrow}</a>')
    rows = runs_rows(registry, sort, desc, q)
    poll = href("/api/runs", sort=sort, dir="desc" if desc else "asc", q=q)
    body = (
        f'<h1>Runs</h1><p class="facts-line">Results files under {e(", ".join(roots))}; this list follows files as they grow. '
        f"Pass rate: {e(DEFINITION)} (the errors column).</p>"
        f'<div class="controls"><form method="get" action="/"><input type="search" name="q" value="{e(q)}" placeholder="filter by file, adapter, grader">'
        f'<input type="hidden" name="sort" value="{e(sort)}"><input type="hidden" name="dir" value="{"desc" if desc else "asc"}">'
        '<button type="submit">filter</button></form></div>'
        + table(heads, rows, "list runs", "runs").replace(
            '<tbody id="runs">', f'<tbody id="runs" data-poll="{poll}" data-mode="replace">', 1
        )
        + (
            ""
            if rows
            else '<p class="empty">No results files found yet (CaptureResult, TrialResult or suite files, *.jsonl / *.json).</p>'
        )
    )
    return page("Runs", body, active="/")


# ---------------------------------------------------------------- a run


class Query(msgspec.Struct, frozen=True):
    """What a run page shows (filter, search, sort, page), read from its URL and written back into its links."""

    key: str
    status: str = ""
    q: str = ""
    page: int = 1
    sort: str = ""
    desc: bool = False

    def link(self, **change: object) -> str:
        """This page's URL with some parameters changed (the page number back to 1 unless given)."""
        params: dict[str, object] = {
            "f": self.key,
            "status": self.status,
            "q": self.q,
            "sort": self.sort,
            "dir": "desc" if self.desc and self.sort else "",
            "page": None,
        }
        params.update(change)
        return href("/run", **params)


#: Sortable result columns: header, column name in :class:`Columns`, and the value meaning "unknown".
RESULT_SORTS = {
    "score": ("score", "scores"),
    "duration": ("duration", "durations"),
    "tokens": ("tokens", "tokens"),
    "tools": ("tool calls", "tools"),
}


def _sorted(index: Index, chosen: list[int], sort: str, desc: bool) -> list[int]:
    """``chosen`` ordered by a column; unknown values (no score, no duration) last either way."""
    with index.lock:
        column = list(getattr(index.columns, RESULT_SORTS[sort][1]))

    def known(i: int) -> bool:
        v = column[i]
        return not (math.isnan(v) if isinstance(v, float) else v < 0)

    have = sorted((i for i in chosen if known(i)), key=lambda i: column[i], reverse=desc)
    return have + [i for i in chosen if not known(i)]


def _texts(record: CaptureResult | TrialResult) -> list[str]:
    """The texts search looks in: id, input turns, outputs, grader reasoning and errors, the agent's stderr."""
    out = [record.id]
    for a in attempts(record):
        out += a.turns
        out.append(a.output)
        out += a.errors
        out += [g.reasoning or "" for g in a.grades] + [g.error or "" for g in a.grades]
        out.append(a.stderr or "")
    return out


#: Characters every JSON writer leaves as they are; a needle made of others (quotes, backslashes, slashes,
#: ``<>&`` which some writers escape, non-ASCII) skips the raw-bytes test and is looked for in decoded text only.
RAW_SAFE = frozenset(string.ascii_lowercase + string.digits + " -_.,:;!?()[]{}=+*#@$%^~|'`")


def search(index: Index, needle: str, upto: int) -> list[int]:
    """Indexes of the records among the first ``upto`` whose texts contain ``needle`` (case-insensitive).

    The file is streamed; a raw-bytes test skips lines that cannot match before any is decoded.
    """
    low = needle.lower()
    raw_test = low.encode() if all(ch in RAW_SAFE for ch in low) else None
    found = []
    for i, raw in index.raw_lines(upto):
        if raw_test is not None and raw_test not in raw.lower():
            continue
        try:
            record = index.record(i) if index.kind == "suite" else _decode(index, raw)
        except ValueError:
            continue
        if any(low in t.lower() for t in _texts(record)):
            found.append(i)
    return found


def _decode(index: Index, raw: bytes) -> CaptureResult | TrialResult:
    cls = TrialResult if index.kind == "trials" else CaptureResult
    return cls.from_dict(orjson.loads(raw))


def selected(index: Index, query: Query) -> tuple[list[int], int]:
    """(matching record indexes, how many records were looked at)."""
    with index.lock:
        count = len(index.columns)
        statuses = index.columns.statuses[:count]
    chosen = range(count) if not query.q else search(index, query.q, count)
    if query.status:
        chosen = [i for i in chosen if statuses[i] == query.status]
    if query.sort in RESULT_SORTS:
        return _sorted(index, list(chosen), query.sort, query.desc), count
    return list(chosen), count


def _row(index: Index, i: int) -> str:
    c = index.columns
    f = c.fact(i)
    trials = f"<td>{e(f.trials)}</td>" if index.kind == "trials" else ""
    why = f'<div class="why-line">{e(f.why)}</div>' if f.why else ""
    return (
        f'<tr data-status="{e(f.status)}"><td class="num">{c.numbers[i] if index.kind != "suite" else i + 1}</td>'
        f'<td class="wrap"><a class="pid" href="{href("/prompt", f=index.key, i=i)}">{e(f.id)}</a>'
        + (f' <span class="muted">trial {e(f.trials[1:])}</span>' if f.trials and f.trials.startswith("#") else "")
        + f"</td><td>{badge(f.status)}{why}</td><td>{num(f.score)}</td><td>{e(secs(f.duration))}</td>"
        f"<td>{'' if f.tokens is None else f.tokens}</td><td>{f.tool_calls}</td>{trials}</tr>"
    )


def rows_fragment(index: Index, status: str, start: int) -> tuple[str, int]:
    """Rows added since ``start`` (for a page following a growing file), and the new end."""
    with index.lock:
        end = len(index.columns)
        rows = [_row(index, i) for i in range(start, end) if not status or index.columns.statuses[i] == status]
    return "".join(rows), end


def _status_filters(index: Index, query: Query) -> str:
    with index.lock:
        counts = dict(index.totals.statuses)
    links = [f'<a class="filter{"" if query.status else " on"}" href="{query.link(status="")}">all ({sum(counts.values())})</a>']
    for s in STATUS_ORDER:
        if counts.get(s):
            on = " on" if query.status == s else ""
            links.append(f'<a class="filter{on}" data-filter="{s}" href="{query.link(status=s)}">{s} ({counts[s]})</a>')
    hidden = {"f": index.key, "status": query.status, "sort": query.sort, "dir": "desc" if query.desc else ""}
    form = (
        '<form method="get" action="/run">'
        + "".join(f'<input type="hidden" name="{name}" value="{e(value)}">' for name, value in hidden.items() if value)
        + f'<input type="search" name="q" value="{e(query.q)}" placeholder="search ids, inputs, outputs, reasoning"><button type="submit">search</button></form>'
    )
    return f'<div class="controls">{"".join(links)}<span class="spacer"></span>{form}</div>'


_summaries: dict[tuple[str, int], TrialsSummary] = {}


def _trials_summary(index: Index) -> TrialsSummary | None:
    """The run's TrialsSummary as ``waza trials --summary`` computes it (seed 0), cached per result count.

    The bootstrap runs on a copy, outside the index's lock, so the indexer is not held up.
    """
    with index.lock:
        builder = index.totals.trials
        if builder is None or not builder.k_values:
            return None
        key = (index.key, builder.prompts)
        if key in _summaries:
            return _summaries[key]
        snapshot = copy.deepcopy(builder)
    summary = snapshot.build(seed=0)
    _summaries.clear()
    _summaries[key] = summary
    return summary


def _pass_k_chart(index: Index) -> str:
    summary = _trials_summary(index)
    if summary is None:
        return ""
    series = []
    for name, colour, values in (("pass@", "#2563eb", summary.pass_at_k), ("pass^", "#db2777", summary.pass_hat_k)):
        points = [Point(int(k), v.estimate, v.low, v.high) for k, v in values.items() if v is not None]
        series.append(Series(name, colour, points))
    return k_curves(series, title="pass@k and pass^k against k (95% CI)")


def charts(index: Index) -> str:
    with index.lock:
        c = index.columns
        scores = finite(c.scores.tolist())
        durations = [d / 1000 for d in c.durations if d >= 0]
        tokens = [float(t) for t in c.tokens if t >= 0]
        graders = {name: dict(counts) for name, counts in index.totals.graders.items()}
    rows = []
    for name, counts in sorted(graders.items()):
        judged = counts.get("passed", 0) + counts.get("failed", 0)
        rate = counts.get("passed", 0) / judged if judged else None
        extra = f", {counts['error']} errors" if counts.get("error") else ""
        rows.append((name, rate, f"{counts.get('passed', 0)}/{judged}{extra}"))
    parts = [
        histogram(scores, title="Score distribution", unit="score", bins=10, lo=0.0, hi=1.0),
        bars(rows, title="Pass rate per grader"),
        histogram(durations, title="Duration", unit="seconds"),
        histogram(tokens, title="Tokens per result", unit="tokens"),
    ]
    if index.kind == "trials":
        parts.insert(0, _pass_k_chart(index))
    drawn = "".join(p for p in parts if p)  # a chart with nothing to show is left out, not drawn empty
    return f'<div class="charts">{drawn}</div>' if drawn else ""


def _suite_head(suite: SuiteResult) -> str:
    s = suite.summary
    metrics = [
        f"<tr><td>{e(m.name)}</td><td>{num(m.value)}</td><td>{num(m.threshold)}</td>"
        f'<td>{badge("passed" if m.passed else "failed") if m.passed is not None else ""}</td><td class="wrap">{e(m.detail)}</td></tr>'
        for m in suite.metrics
    ]
    missed = "".join(f"<li>{e(m)}</li>" for m in s.missed)
    return (
        f"<p>{badge(s.status)} suite <b>{e(suite.suite)}</b> ({e(suite.file)}), adapter {e(suite.adapter)}: "
        f"{wording.count(s.tasks, 'task')}, {s.passed} passed, {s.failed} failed, {s.errored} errored, {s.pending} pending; score {num(s.score)}</p>"
        + (table(["metric", "value", "threshold", "", "detail"], metrics, "list") if metrics else "")
        + (f'<ul class="problems">{missed}</ul>' if missed else "")
    )


def _sort_head(query: Query, key: str) -> str:
    """A header that sorts by its column: most first on the first click, then the other way."""
    label = RESULT_SORTS[key][0]
    if query.sort != key:
        return f'<a href="{query.link(sort=key, dir="desc")}">{e(label)}</a>'
    arrow = " ▼" if query.desc else " ▲"
    return f'<a class="sorted" href="{query.link(sort=key, dir="" if query.desc else "desc")}">{e(label)}{arrow}</a>'


def run_page(index: Index, query: Query) -> str:
    chosen, count = selected(index, query)
    pages = max(1, math.ceil(len(chosen) / PAGE_SIZE))
    current = min(max(query.page, 1), pages)
    shown = chosen[(current - 1) * PAGE_SIZE : current * PAGE_SIZE]
    with index.lock:
        rows = [_row(index, i) for i in shown]
        t = index.totals
        counts = ", ".join(f"{n} {s}" for s, n in sorted(t.statuses.items(), key=lambda kv: -kv[1]))
        rate = "" if t.pass_rate is None else f"pass rate {t.pass_rate:.1%} ({DEFINITION}); "
        facts = f"{wording.count(t.results, 'result')} ({counts}); {rate}mean score {num(t.mean_score)}; {t.errors} errored"
        problems = list(index.problems)
        bad = index.bad_lines
        document = index.document
    head_cells = (
        ["line", "id", "status"]
        + [_sort_head(query, key) for key in RESULT_SORTS]
        + (["passes/n"] if index.kind == "trials" else [])
    )
    follows = not query.q and not query.sort and current == pages and index.kind != "suite"
    body_id = "rows"
    listing = table(head_cells, rows, "list", body_id)
    if follows:
        poll = href("/api/rows", f=index.key, status=query.status)
        listing = listing.replace(
            '<tbody id="rows">', f'<tbody id="rows" data-poll="{poll}" data-next="{count}" data-status-box="count">', 1
        )
    what = (
        f"{len(chosen)} of {count} results"
        + (f" matching “{e(query.q)}”" if query.q else "")
        + (f" with status {e(query.status)}" if query.status else "")
    )
    pager = ""
    if pages > 1:
        prev = f'<a href="{query.link(page=current - 1)}">« previous</a>' if current > 1 else ""
        nxt = f'<a href="{query.link(page=current + 1)}">next »</a>' if current < pages else ""
        pager = f'<div class="pager">{prev}<span>page {current} of {pages}</span>{nxt}</div>'
    trouble = ""
    if problems:
        more = f"<li>and {bad - len(problems)} more</li>" if bad > len(problems) else ""
        trouble = f'<ul class="problems">{"".join(f"<li>{e(p)}</li>" for p in problems)}{more}</ul>'
    body = (
        f'<h1>{e(index.key)}</h1><p class="facts-line">{e(index.kind)} file · {e(facts)}'
        f' · <a href="{href("/compare", a=index.key)}">compare with…</a></p>'
        + (_suite_head(document) if isinstance(document, SuiteResult) else "")
        + trouble
        + charts(index)
        + "<h2>Results</h2>"
        + _status_filters(index, query)
        + f'<p class="muted" id="count">{what}</p>'
        + listing
        + pager
    )
    return page(index.key, body, active="/")


# ---------------------------------------------------------------- a prompt


def clip(text: str, limit: int = TEXT_LIMIT) -> str:
    return text if len(text) <= limit else text[:limit] + f"\n… ({len(text) - limit} more characters not shown)"


def _clip_value(value: Any) -> Any:
    if value is None or isinstance(value, (int, float, bool)):
        return value
    if isinstance(value, str):
        return clip(value)
    dumped = orjson.dumps(value, option=orjson.OPT_INDENT_2, default=str)
    return value if len(dumped) <= TEXT_LIMIT else clip(dumped.decode())


def _clip_step(step: TrajectoryStep) -> TrajectoryStep:
    return msgspec.structs.replace(
        step,
        content=None if step.content is None else clip(step.content),
        input=_clip_value(step.input),
        output=_clip_value(step.output),
        tool_content=_clip_value(step.tool_content),
    )


def clipped(a: Attempt) -> Attempt:
    """The attempt with every long text cut to :data:`TEXT_LIMIT` characters."""
    return msgspec.structs.replace(
        a,
        output=clip(a.output),
        input=[clip(t) for t in a.turns],
        trajectory=[_clip_step(s) for s in a.trajectory],
        stderr=None if a.stderr is None else clip(a.stderr),
    )


def attempts_html(record: CaptureResult | TrialResult) -> str:
    tries = [clipped(a) for a in attempts(record)]
    if len(tries) == 1 and tries[0].trial is None:
        return attempt_html(tries[0])
    return "".join(
        f'<details class="trial" open><summary>trial {e(a.trial)} {badge(a.status)}</summary>{attempt_html(a)}</details>'
        for a in tries
    )


def prompt_page(index: Index, i: int) -> str:
    record = index.record(i)
    with index.lock:
        total = len(index.columns)
        status = index.columns.statuses[i]
    nav = []
    if i > 0:
        nav.append(link("« previous", "/prompt", f=index.key, i=i - 1))
    nav.append(link("back to the run", "/run", f=index.key))
    if i + 1 < total:
        nav.append(link("next »", "/prompt", f=index.key, i=i + 1))
    extra = ""
    if record.hint:
        extra += f"<h4>Hint</h4><pre>{e(clip(record.hint))}</pre>"
    if record.reference:
        extra += f"<h4>Reference</h4><pre>{e(clip(record.reference))}</pre>"
    trials = f" · {record.passes}/{record.n} trials passed" if isinstance(record, TrialResult) else ""
    body = (
        f'<div class="pager">{" ".join(nav)}</div>'
        f'<h1 class="pid">{e(clip(record.id, 2000))}</h1><p class="facts-line">{badge(status)} in {e(index.key)}{e(trials)}</p>'
        f'{extra}<div class="prompt-body">{attempts_html(record)}</div>'
    )
    return page(record.id[:80], body, active="/")
