"""The gate's report in words: for a terminal, for Markdown (a PR comment, a step summary), for GitHub Actions.

The wording follows the original waza's gate, line for line where a script
might grep it ("Waza gate: PASS", "Regression: 1.50 percentage points").
"""

from __future__ import annotations

from waza.runner.analysis.gate import GateIssue, GateReport
from waza.runner.wording import count

__all__ = ["FORMATS", "human", "markdown", "workflow_commands"]

FORMATS = ("human", "json", "markdown", "github-actions")


def _or_na(value: str) -> str:
    return value or "n/a"


def _issues(title: str, issues: list[GateIssue], heading: str) -> list[str]:
    if not issues:
        return []
    return ["", f"{heading}{title}{':' if not heading else ''}", *([""] if heading else []), *(f"- {i.message}" for i in issues)]


def human(report: GateReport) -> str:
    status = "PASS" if report.passed else report.verdict.upper()
    lines = [
        f"Waza gate: {status}",
        "",
        f"Baseline: {report.baseline_success_rate * 100:.1f}% pass rate "
        f"({count(report.baseline_task_count, 'task')}, model: {_or_na(report.baseline_model)})",
        f"Current:  {report.current_success_rate * 100:.1f}% pass rate "
        f"({count(report.current_task_count, 'task')}, model: {_or_na(report.current_model)})",
        f"Regression: {report.regression_pct:.2f} percentage points (max allowed {report.max_regression_pct:.2f})",
    ]
    if report.golden_must_pass:
        lines.append(f"Golden tasks: {len(report.golden_failures)} failure(s)")
    lines.append(f"Task changes: {len(report.new_tasks)} new, {len(report.removed_tasks)} removed")
    lines += _issues("Failures", report.failures, "")
    lines += _issues("Warnings", report.warnings, "")
    return "\n".join(lines) + "\n"


def markdown(report: GateReport) -> str:
    status = "PASS" if report.passed else "FAIL"
    lines = [
        f"## Waza gate: {status}",
        "",
        "| Metric | Baseline | Current |",
        "|---|---:|---:|",
        f"| Pass rate | {report.baseline_success_rate * 100:.1f}% | {report.current_success_rate * 100:.1f}% |",
        f"| Aggregate score | {report.baseline_aggregate_score:.4f} | {report.current_aggregate_score:.4f} |",
        f"| Tasks | {report.baseline_task_count} | {report.current_task_count} |",
        "",
        f"- Regression: {report.regression_pct:.2f} percentage points (max allowed {report.max_regression_pct:.2f})",
        f"- New tasks: {len(report.new_tasks)} (`{report.new_task_policy}`)",
        f"- Removed tasks: {len(report.removed_tasks)} (`{report.removed_task_policy}`)",
    ]
    if report.golden_must_pass:
        lines.append(f"- Golden failures: {len(report.golden_failures)}")
    lines += _issues("Failures", report.failures, "### ")
    lines += _issues("Warnings", report.warnings, "### ")
    return "\n".join(lines) + "\n"


def _escape(text: str) -> str:
    """A workflow command's value: the characters GitHub Actions reads as syntax, percent-encoded."""
    for char, code in (("%", "%25"), ("\r", "%0D"), ("\n", "%0A"), (":", "%3A"), (",", "%2C")):
        text = text.replace(char, code)
    return text


def workflow_commands(report: GateReport) -> str:
    """One ``::warning`` / ``::error`` workflow command per issue, warnings first."""
    lines = [f"::warning title=Waza gate::{_escape(i.message)}" for i in report.warnings]
    lines += [f"::error title=Waza gate::{_escape(i.message)}" for i in report.failures]
    return "".join(line + "\n" for line in lines)
