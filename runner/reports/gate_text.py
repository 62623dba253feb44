"""The gate's report in words: for a terminal, for Markdown (a PR comment, a step summary), for GitHub Actions.

Each form says the outcome and its exit status in one place a script can find
(``outcome: PASS (exit 0)``); the JSON form (``--format json``) is the one to
parse.
"""

from __future__ import annotations

from waza.runner.analysis.gate import PASS, GateReport

__all__ = ["FORMATS", "human", "markdown", "workflow_commands"]

FORMATS = ("human", "json", "markdown", "github-actions")


def _rates(report: GateReport) -> str:
    return (
        f"{report.baseline_pass_rate * 100:.1f}% -> {report.current_pass_rate * 100:.1f}% "
        f"(delta {report.pass_rate_delta * 100:+.1f} points, at most {report.max_regression_pct:.1f} allowed)"
    )


def _golden(report: GateReport) -> str:
    failed = len(report.golden_failures)
    tail = f"{failed} failed" if failed else "all passing"
    blocking = "" if report.golden_must_pass or not failed else " (not blocking: --golden-must-pass=false)"
    return f"{report.golden_total} total, {tail}{blocking}"


def human(report: GateReport) -> str:
    lines = [
        f"Waza gate: {report.outcome.upper()}",
        f"  baseline:  {report.baseline_file}",
        f"  current:   {report.current_file}",
        f"  pass rate: {_rates(report)}",
    ]
    if report.regression_exceeds_threshold:
        lines.append(f"  regression of {report.regression_pct:.2f} points exceeds {report.max_regression_pct:.2f}")
    lines.append(f"  golden tasks: {_golden(report)}")
    lines += [f"    {g.test_id} ({g.display_name}): {g.current_status}" for g in report.golden_failures]
    if report.new_tasks:
        lines.append(f"  new tasks ({report.on_new_tasks}): {', '.join(report.new_tasks)}")
    if report.removed_tasks:
        lines.append(f"  removed tasks ({report.on_removed_tasks}): {', '.join(report.removed_tasks)}")
    lines += [f"  warning: {w}" for w in report.warnings]
    lines += [f"  error: {e}" for e in report.errors]
    lines.append(f"outcome: {report.outcome.upper()} (exit {report.exit_code})")
    return "\n".join(lines) + "\n"


def markdown(report: GateReport) -> str:
    mark = "✅" if report.exit_code == PASS else "❌"
    lines = [
        f"## {mark} Waza gate: `{report.outcome.upper()}`",
        "",
        "| | Baseline | Current | Delta |",
        "|---|---:|---:|---:|",
        f"| Pass rate | {report.baseline_pass_rate * 100:.1f}% | {report.current_pass_rate * 100:.1f}% "
        f"| {report.pass_rate_delta * 100:+.1f} points |",
        "",
        f"- Regression: **{report.regression_pct:.2f}** points (at most {report.max_regression_pct:.1f} allowed)",
        f"- Golden tasks: {_golden(report)}",
    ]
    lines += [f"  - `{g.test_id}` {g.display_name}: `{g.current_status}`" for g in report.golden_failures]
    if report.new_tasks:
        lines.append(f"- New tasks (`{report.on_new_tasks}`): {', '.join(f'`{t}`' for t in report.new_tasks)}")
    if report.removed_tasks:
        lines.append(f"- Removed tasks (`{report.on_removed_tasks}`): {', '.join(f'`{t}`' for t in report.removed_tasks)}")
    lines += [f"- Warning: {w}" for w in report.warnings]
    lines += [f"- Error: {e}" for e in report.errors]
    lines += ["", f"_outcome: {report.outcome.upper()} (exit {report.exit_code})_"]
    return "\n".join(lines) + "\n"


def _escape(text: str) -> str:
    """A workflow command's value: the characters GitHub Actions reads as syntax, percent-encoded."""
    for char, code in (("%", "%25"), ("\r", "%0D"), ("\n", "%0A"), (":", "%3A"), (",", "%2C")):
        text = text.replace(char, code)
    return text


def workflow_commands(report: GateReport) -> str:
    """Workflow commands: the pass rate (an error when it regressed too far, else a notice), one per golden
    failure (an error, or a warning when golden tasks do not block), then the warnings and the errors."""
    rates = _escape(_rates(report))
    lines = [f"::{'error' if report.regression_exceeds_threshold else 'notice'} title=Waza gate pass rate::{rates}"]
    level = "error" if report.golden_must_pass else "warning"
    for g in report.golden_failures:
        lines.append(f"::{level} title=Waza gate golden task::{_escape(f'{g.test_id} ({g.display_name}): {g.current_status}')}")
    lines += [f"::warning title=Waza gate::{_escape(w)}" for w in report.warnings]
    lines += [f"::error title=Waza gate::{_escape(e)}" for e in report.errors]
    return "".join(line + "\n" for line in lines)
