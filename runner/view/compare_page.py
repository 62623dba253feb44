"""The compare page: two runs paired by prompt id, with the statistics ``waza compare`` reports.

The numbers come from :mod:`waza.runner.analysis.comparison` itself (pairing, per-prompt
change, paired bootstrap intervals, McNemar's exact test, pass@k/pass^k
differences), so the page and the command cannot disagree. A prompt's two
results are shown side by side: the outputs with the words that differ
marked, and the trajectories with the steps that differ marked.
"""

from __future__ import annotations

import difflib
import math
import re
import threading
from collections.abc import Sequence
from itertools import zip_longest

from waza.protocol.analysis_records import Difference, KDifference, PairedComparison, RunInfo
from waza.protocol.errors import ConfigError
from waza.protocol.records import TrajectoryStep
from waza.runner.analysis.attempts import Attempt, attempts
from waza.runner.analysis.comparison import Bootstrap, Outcome, Run, capture_side, compare
from waza.runner.analysis.summaries import step_text
from waza.runner.reports.report_html import score_html, stderr_html, step_html, verdicts_html
from waza.runner.view.html import badge, e, href, link, num, page, secs, table
from waza.runner.view.index import Index, Registry, pair_key
from waza.runner.view.pages import clipped
from waza.runner.wording import count

__all__ = ["compare_page", "compare_prompt_page"]

BOOT = Bootstrap(seed=0, resamples=2000, level=0.95)
SHOWN = 500
DIFF_TOKENS = 20_000
CHANGES = (("regression", "regressed"), ("improvement", "improved"), ("same", "unchanged"), ("not-judged", "not judged"))

_cache: dict[tuple[str, str, int, int], PairedComparison | str] = {}
_cache_lock = threading.Lock()


def _runs(registry: Registry) -> list[Index]:
    return sorted((i for i in registry.listing() if i.kind in ("capture", "trials")), key=lambda i: i.key)


def _picker(registry: Registry, a: str, b: str) -> str:
    def select(name: str, chosen: str, label: str) -> str:
        options = "".join(
            f'<option value="{e(i.key)}"{" selected" if i.key == chosen else ""}>{e(i.key)} ({e(i.kind)})</option>'
            for i in _runs(registry)
        )
        return (
            f'<label>{label} <select name="{name}" data-submit><option value="">choose a run</option>{options}</select></label>'
        )

    return (
        f'<form class="controls" method="get" action="/compare">{select("a", a, "baseline")}{select("b", b, "candidate")}'
        '<button type="submit">compare</button></form>'
    )


def run_of(index: Index) -> Run | str:
    """The run as ``waza compare`` loads it (errors excluded), from the index: no file is read again.

    A file ``waza compare`` would refuse (a bad line, an id twice, no results) gives the reason instead.
    """
    with index.lock:
        if index.problems:
            return index.problems[0]
        if index.duplicate:
            return index.duplicate
        if not index.first_line:
            return f"{index.key}: holds no results"
        c = index.columns
        ks: set[int] = set()
        if index.kind == "trials":
            outcomes = {key: index.outcomes[i] for key, i in index.first_line.items()}
            for o in index.outcomes:
                ks.update(o.pass_at_k)
        else:
            # Outcomes are only read by the comparison: one per distinct (status, score), shared by the prompts
            # that have it, instead of one per prompt.
            shared: dict[tuple[str, float | None], Outcome] = {}
            outcomes = {}
            for key, i in index.first_line.items():
                score = c.scores[i]  # NaN: no score
                pair = (c.statuses[i], None if math.isnan(score) else score)
                outcome = shared.get(pair)
                if outcome is None:
                    outcome = shared[pair] = Outcome(capture_side(pair[0], pair[1], "exclude"))
                outcomes[key] = outcome
    info = RunInfo(label=index.key, source=index.key, kind=index.kind, results=len(outcomes))  # type: ignore[arg-type]
    return Run(info, outcomes, sorted(ks))


def comparison(a: Index, b: Index) -> PairedComparison | str:
    """The comparison of two indexed runs (cached until either file changes), or why there is none."""
    key = (a.key, b.key, a.size, b.size)
    with _cache_lock:
        if key in _cache:
            return _cache[key]
    base, cand = run_of(a), run_of(b)
    if isinstance(base, str) or isinstance(cand, str):
        return base if isinstance(base, str) else str(cand)
    try:
        result: PairedComparison | str = compare(base, cand, BOOT)
    except ConfigError as exc:
        result = str(exc)
    with _cache_lock:
        _cache.clear()
        _cache[key] = result
    return result


def _diff_cells(d: Difference | None) -> str:
    if d is None:
        return '<td colspan="5" class="muted">no pairs</td>'
    return (
        f"<td>{num(d.baseline)}</td><td>{num(d.candidate)}</td><td>{d.difference:+.3f}</td>"
        f"<td>[{d.low:+.3f}, {d.high:+.3f}]</td><td>{d.pairs}</td>"
    )


def _stats(c: PairedComparison) -> str:
    rows = [f"<tr><td>pass rate</td>{_diff_cells(c.pass_rate)}</tr>", f"<tr><td>mean score</td>{_diff_cells(c.mean_score)}</tr>"]
    for name, diffs in (("pass@", c.pass_at_k), ("pass^", c.pass_hat_k)):
        rows += [f"<tr><td>{name}{k.k}</td>{_diff_cells(k.difference)}</tr>" for k in diffs if isinstance(k, KDifference)]
    out = table(["metric", "baseline", "candidate", "difference", "95% CI (paired bootstrap)", "pairs"], rows, "list")
    if c.mcnemar is not None:
        m = c.mcnemar
        out += (
            f"<p>McNemar exact test: {m.baseline_only} passed only in the baseline, {m.candidate_only} only in the candidate "
            f"({m.both_pass} both, {m.both_fail} neither); p = {m.p_value:.4g}.</p>"
        )
    return out


def _counts(c: PairedComparison, a: str, b: str, show: str) -> str:
    counts = {name: sum(1 for d in c.deltas if d.change == name) for name, _ in CHANGES}
    items = [(name, label, counts[name]) for name, label in CHANGES]
    items += [("only-a", "only in baseline", len(c.only_baseline)), ("only-b", "only in candidate", len(c.only_candidate))]
    links = [f'<a class="filter{"" if show else " on"}" href="{href("/compare", a=a, b=b)}">all</a>']
    for name, label, n in items:
        on = " on" if show == name else ""
        links.append(f'<a class="filter{on}" data-show="{name}" href="{href("/compare", a=a, b=b, show=name)}">{label} ({n})</a>')
    return f'<div class="controls">{"".join(links)}</div>'


def _delta_rows(c: PairedComparison, a: str, b: str, show: str) -> list[str]:
    order = {name: n for n, (name, _) in enumerate(CHANGES)}
    rows = []
    if show in ("", *order):
        deltas = sorted((d for d in c.deltas if not show or d.change == show), key=lambda d: order[d.change])
        for d in deltas[:SHOWN]:
            delta = "" if d.score_delta is None else f"{d.score_delta:+.3f}"
            rows.append(
                f'<tr class="change-{e(d.change)}"><td class="wrap">{link(d.id, "/compare/prompt", a=a, b=b, id=d.id)}</td>'
                f'<td class="c-{e(d.change)}">{e(d.change)}</td><td>{badge(d.baseline.status)}</td><td>{badge(d.candidate.status)}</td>'
                f"<td>{delta}</td></tr>"
            )
    for name, ids, side in (("only-a", c.only_baseline, "baseline"), ("only-b", c.only_candidate, "candidate")):
        if show in ("", name):
            rows += [
                f'<tr><td class="wrap">{e(i)}</td><td>only in the {side}</td><td></td><td></td><td></td></tr>'
                for i in ids[:SHOWN]
            ]
    return rows


def compare_page(registry: Registry, a: str, b: str, show: str) -> str:
    body = "<h1>Compare two runs</h1>" + _picker(registry, a, b)
    base, cand = registry.get(a), registry.get(b)
    if base is None or cand is None or base.kind not in ("capture", "trials") or cand.kind not in ("capture", "trials"):
        body += '<p class="empty">Pick a baseline and a candidate: prompts are paired by id.</p>'
        return page("Compare", body, active="/compare")
    busy = [i for i in (base, cand) if not i.caught_up]
    if busy:
        done = ", ".join(f"{i.key} {i.scanned / i.size if i.size else 1:.0%}" for i in busy)
        body += f'<p class="live" id="indexing">Indexing ({e(done)}); this page reloads itself until both runs are read.</p>'
        return page("Compare", body, active="/compare", refresh=1)
    c = comparison(base, cand)
    if isinstance(c, str):
        return page("Compare", body + f'<p class="error">{e(c)}</p>', active="/compare")
    body += (
        f'<p class="facts-line">{count(c.shared, "prompt")} in both; {len(c.regressions)} regressed, {len(c.improvements)} improved. '
        "Errored, pending and ungraded results are not judged (left out of the statistics), as in <code>waza compare</code>.</p>"
        + _stats(c)
        + "<h2>Prompts</h2>"
        + _counts(c, a, b, show)
        + table(["id", "change", "baseline", "candidate", "score delta"], _delta_rows(c, a, b, show), "list compare")
    )
    return page("Compare", body, active="/compare")


# ---------------------------------------------------------------- one prompt, side by side


def _tokens(text: str) -> list[str]:
    return [t for t in re.split(r"(\s+)", text) if t]


def marked_outputs(left: str, right: str) -> tuple[str, str]:
    """Both texts escaped, with deleted words marked on the left and inserted ones on the right."""
    a, b = _tokens(left), _tokens(right)
    if len(a) + len(b) > DIFF_TOKENS:
        return e(left), e(right)
    out_a, out_b = [], []
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        chunk_a, chunk_b = e("".join(a[i1:i2])), e("".join(b[j1:j2]))
        if op == "equal":
            out_a.append(chunk_a)
            out_b.append(chunk_b)
            continue
        if chunk_a:
            out_a.append(f'<span class="diff-del">{chunk_a}</span>')
        if chunk_b:
            out_b.append(f'<span class="diff-add">{chunk_b}</span>')
    return "".join(out_a), "".join(out_b)


def _signature(step: TrajectoryStep) -> tuple[object, ...]:
    return (step.type, step.role, step.name, step.status, (step_text(step) or "")[:500])


def marked_steps(left: Sequence[TrajectoryStep], right: Sequence[TrajectoryStep]) -> tuple[str, str]:
    """Both trajectories; steps without a counterpart on the other side carry the class ``changed``."""
    changed_a: set[int] = set()
    changed_b: set[int] = set()
    matcher = difflib.SequenceMatcher(None, [_signature(s) for s in left], [_signature(s) for s in right], autojunk=False)
    for op, i1, i2, j1, j2 in matcher.get_opcodes():
        if op != "equal":
            changed_a.update(range(i1, i2))
            changed_b.update(range(j1, j2))

    def render(steps: Sequence[TrajectoryStep], changed: set[int]) -> str:
        return "".join(
            step_html(s).replace('class="step ', 'class="step changed ', 1) if n in changed else step_html(s)
            for n, s in enumerate(steps)
        )

    return render(left, changed_a), render(right, changed_b)


def _side(label: str, key: str, a: Attempt | None, output: str, steps: str) -> str:
    if a is None:
        return f'<div><h2>{e(label)}</h2><p class="empty">Not in {e(key)}.</p></div>'
    trial = f" trial {a.trial}" if a.trial is not None else ""
    return (
        f'<div><h2>{e(label)}{e(trial)}</h2><p class="facts-line">{e(key)}</p><div class="facts">{badge(a.status)} {score_html(a)} · {e(secs(a.duration) or "n/a")}</div>'
        + "".join(f'<p class="error">{e(err)}</p>' for err in a.errors)
        + stderr_html(a)
        + f'<h4>Output</h4><pre class="output">{output}</pre><h4>Grades</h4>{verdicts_html(a)}'
        f'<h4>Trajectory ({count(len(a.trajectory), "step")})</h4><ol class="trajectory">{steps}</ol></div>'
    )


def _attempts(index: Index | None, id_: str) -> list[Attempt]:
    """The prompt's attempts in one run (one, or one per trial), long texts cut; none when the run lacks it."""
    if index is None:
        return []
    with index.lock:
        i = index.first_line.get(pair_key(id_))
    if i is None:
        return []
    return [clipped(a) for a in attempts(index.record(i))]


def _pair(a: str, b: str, left: Attempt | None, right: Attempt | None) -> str:
    out_a, out_b = marked_outputs(left.output if left else "", right.output if right else "")
    steps_a, steps_b = marked_steps(left.trajectory if left else [], right.trajectory if right else [])
    return f'<div class="side">{_side("baseline", a, left, out_a, steps_a)}{_side("candidate", b, right, out_b, steps_b)}</div>'


def compare_prompt_page(registry: Registry, a: str, b: str, id_: str) -> str | None:
    lefts, rights = _attempts(registry.get(a), id_), _attempts(registry.get(b), id_)
    if not lefts and not rights:
        return None
    turns = (lefts or rights)[0].turns
    pairs = list(zip_longest(lefts, rights))  # trials side by side by their place (trial 1 with trial 1, ...)
    body = (
        f'<div class="pager">{link("back to the comparison", "/compare", a=a, b=b)}</div>'
        f'<h1 class="pid">{e(id_[:2000])}</h1><h4>Input</h4><ol class="turns">{"".join(f"<li><pre>{e(t)}</pre></li>" for t in turns)}</ol>'
        '<p class="muted">Words only one side has are marked in the outputs; steps without a match on the other side are marked in the trajectories.</p>'
        + "".join(_pair(a, b, left, right) for left, right in pairs)
    )
    return page(f"Compare {id_[:60]}", body, active="/compare")
