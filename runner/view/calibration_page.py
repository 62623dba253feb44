"""The calibration page: how far a grader agrees with human labels, as a picture.

Two sources: a CalibrationReport that ``waza calibrate --labels`` wrote, shown
as it is, or a labelled sheet paired here with a results file through the same
code ``waza calibrate --labels`` runs (:func:`load_labels`, the
:class:`Comparisons` tally, :mod:`waza.runner.analysis.agreement`), so κ and the
confusion matrix are the ones the command prints.
"""

from __future__ import annotations

from waza.protocol.errors import ConfigError
from waza.protocol.jsonl import JsonlError, decode_line, iter_lines
from waza.protocol.trial_records import Agreement, CalibrationLabel, CalibrationReport
from waza.runner.analysis.calibration import items_of
from waza.runner.view.html import e, href, page, table
from waza.runner.view.index import Index, Registry
from waza.runner.view.svg import confusion

__all__ = ["agreement_html", "calibration_page"]

SHOWN = 200


def _rate(value: float | None) -> str:
    return "undefined" if value is None else f"{value:.3f}"


def agreement_html(a: Agreement) -> str:
    c = a.confusion
    picture = confusion(
        (c.true_pass, c.false_pass, c.false_fail, c.true_fail),
        grader=a.grader,
        reference=a.reference,
        title=f"{a.grader} against {a.reference}",
    )
    rows = [
        f'<tr><td class="wrap">{e(d.id)}{"" if d.trial is None else f" #{d.trial}"}</td><td>{"pass" if d.verdict else "fail"}</td>'
        f'<td>{"pass" if d.reference else "fail"}</td><td class="wrap">{e(d.reasoning)}</td><td class="wrap">{e(d.notes)}</td></tr>'
        for d in a.disagreements[:SHOWN]
    ]
    stats = (
        f'<div><span class="stat">κ<b class="kappa">{_rate(a.kappa)}</b></span><span class="stat">agreement<b>{_rate(a.agreement)}</b></span>'
        f'<span class="stat">false-pass rate<b>{_rate(a.false_pass_rate)}</b></span><span class="stat">false-fail rate<b>{_rate(a.false_fail_rate)}</b></span>'
        f'<span class="stat">items<b>{a.items}</b></span></div>'
    )
    listing = (
        f"<h4>Disagreements ({len(a.disagreements)})</h4>"
        + table(["id", e(a.grader), e(a.reference), "reasoning", "notes"], rows, "list")
        if rows
        else ""
    )
    return f'<section class="agreement"><h2>{e(a.grader)} vs {e(a.reference)}</h2><div class="charts">{picture}<div>{stats}</div></div>{listing}</section>'


def _report_html(report: CalibrationReport) -> str:
    notes = []
    if report.skipped:
        notes.append(f"{report.skipped} items without a verdict (error, pending, ungraded) left out")
    if report.unlabelled:
        notes.append(f"{report.unlabelled} sheet lines not labelled yet")
    if report.unmatched:
        notes.append(f"{len(report.unmatched)} labels match no item: {', '.join(report.unmatched[:20])}")
    gate = f"; --min-kappa {report.min_kappa:g}: {report.gate}" if report.gate else ""
    head = f'<p class="facts-line">{report.items} items from {e(report.results)}{e(gate)}. {e("; ".join(notes))}</p>'
    return head + "".join(agreement_html(a) for a in report.comparisons)


def compute(sheet: Index, run: Index) -> CalibrationReport:
    """What ``waza calibrate RESULTS --labels SHEET`` reports, computed by its own functions over both files
    as the viewer reads them (each opened once, confined and non-blocking, like every read of the viewer)."""
    from waza.runner.engine.calibration import Comparisons, labels_from

    with sheet.place.open() as stream:
        numbered = ((n, decode_line(sheet.key, n, line, CalibrationLabel)) for n, line in iter_lines(stream, sheet.key))
        labels, unlabelled = labels_from(numbered, sheet.key)
    tally = Comparisons.ordered(None, labelled=True)
    found = set()
    for result in items_of(run.records()):
        key = (result.id, result.trial)
        if key in labels:
            found.add(key)
            tally.add(result, None, labels[key], None)
    return CalibrationReport(
        results=run.key,
        items=tally.items,
        unlabelled=unlabelled,
        unmatched=[k[0] if k[1] is None else f"{k[0]}#{k[1]}" for k in labels if k not in found],
        skipped=tally.skipped,
        comparisons=tally.agreements(),
    )


def _choices(registry: Registry, labels: str, results: str) -> str:
    runs = sorted((i for i in registry.listing() if i.kind in ("capture", "trials")), key=lambda i: i.key)
    sheets = sorted((i for i in registry.listing() if i.kind == "labels"), key=lambda i: i.key)

    def options(indexes: list[Index], chosen: str) -> str:
        return "".join(f'<option value="{e(i.key)}"{" selected" if i.key == chosen else ""}>{e(i.key)}</option>' for i in indexes)

    return (
        '<form class="controls" method="get" action="/calibration">'
        f'<label>labelled sheet <select name="labels" data-submit><option value="">choose</option>{options(sheets, labels)}</select></label>'
        f'<label>results <select name="results" data-submit><option value="">choose</option>{options(runs, results)}</select></label>'
        '<button type="submit">show</button></form>'
    )


def _reports(registry: Registry) -> str:
    reports = sorted((i for i in registry.listing() if i.kind == "calibration"), key=lambda i: i.key)
    if not reports:
        return ""
    links = "".join(f'<li><a href="{href("/calibration", report=i.key)}">{e(i.key)}</a></li>' for i in reports)
    return f"<h2>Calibration reports</h2><ul>{links}</ul>"


def _default_results(registry: Registry, labels: str) -> str:
    """A results file beside the sheet (the usual layout), else none."""
    sheet = registry.get(labels)
    if sheet is None:
        return ""
    beside = sorted(i.key for i in registry.listing() if i.kind in ("capture", "trials") and i.path.parent == sheet.path.parent)
    return beside[0] if beside else ""


def calibration_page(registry: Registry, labels: str, results: str, report: str) -> str:
    body = "<h1>Calibration</h1>"
    shown = registry.get(report)
    if shown is not None and shown.kind == "calibration":
        body += f'<p class="facts-line">Report {e(shown.key)}</p>'
        if isinstance(shown.document, CalibrationReport):
            body += _report_html(shown.document)
        else:
            body += f'<p class="error">{e(shown.error or "not read yet")}</p>'
        return page("Calibration", body, active="/calibration")
    if labels and not results:
        results = _default_results(registry, labels)
    body += _choices(registry, labels, results)
    sheet, run = registry.get(labels), registry.get(results)
    if sheet is None or run is None or sheet.kind != "labels" or run.kind not in ("capture", "trials"):
        body += '<p class="empty">Pick a labelled sheet (from <code>waza calibrate --sample</code>, with "pass" filled in) and the results it was drawn from.</p>'
        return page("Calibration", body + _reports(registry), active="/calibration")
    try:
        body += _report_html(compute(sheet, run))
    except (JsonlError, ConfigError, OSError, ValueError) as exc:
        body += f'<p class="error">{e(exc)}</p>'
    return page("Calibration", body + _reports(registry), active="/calibration")
