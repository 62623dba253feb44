"""waza report: Markdown, CSV, JUnit (parsed as XML) and the HTML page in a real headless Chromium."""

from __future__ import annotations

import csv
import io
import xml.etree.ElementTree as ET

import pytest

from . import chromium
from .analysis_runs import capture, trials
from .conftest import run_waza, write_jsonl


def report(path, fmt, *extra):
    proc = run_waza("report", path, "--format", fmt, *extra)
    assert proc.returncode == 0, proc.stderr.decode()
    return proc.stdout.decode()


def test_junit_one_testcase_per_prompt_with_reasoning(tmp_path):
    results = capture(tmp_path, "r.jsonl", "q2=fail", "q4=error")
    root = ET.fromstring(report(results, "junit", "--title", "suite <1>"))
    suite = root.find("testsuite")
    assert suite.get("name") == "suite <1>"
    assert (suite.get("tests"), suite.get("failures"), suite.get("errors"), suite.get("skipped")) == ("4", "1", "1", "0")
    cases = {c.get("name"): c for c in suite.findall("testcase")}
    assert list(cases) == ["q1", "q2", "q3", "q4"]
    assert cases["q1"].find("failure") is None and cases["q1"].find("error") is None
    failure = cases["q2"].find("failure")
    assert failure.get("message") == "failed: hint"
    assert "hint: output does not contain the hint 'pear'" in failure.text
    assert "agent exited with code 3" in cases["q4"].find("error").text
    out = cases["q3"].find("system-out").text
    assert "output: <script>alert(1)</script>" in out and "tool `lookup` (completed" in out


def test_junit_trials_in_system_out_and_control_characters(tmp_path):
    results = trials(tmp_path, "t.jsonl", 2, "q1=2")
    suite = ET.fromstring(report(results, "junit")).find("testsuite")
    q1 = next(c for c in suite.findall("testcase") if c.get("name") == "q1")
    assert q1.find("failure").get("message") == "flaky: 1/2 trials passed"
    assert "trial 1: hint:" in q1.find("failure").text
    text = q1.find("system-out").text
    assert "trial 1: failed" in text and "trial 2: passed" in text
    # an agent that prints a control character cannot break the XML
    rows = [{"id": "ctl", "input": "x", "output": "bell\x07 and nul\x00", "status": "ungraded"}]
    root = ET.fromstring(report(write_jsonl(tmp_path / "c.jsonl", rows), "junit"))
    case = root.find("testsuite/testcase")
    assert case.find("skipped").get("message") == "ungraded"
    assert "bell\ufffd and nul\ufffd" in case.find("system-out").text


def test_markdown_and_csv(tmp_path):
    results = capture(tmp_path, "r.jsonl", "q2=fail")
    md = report(results, "markdown")
    assert "4 prompts: 3 passed, 1 failed" in md
    assert "| 2 | q2 | failed | 0.000 |" in md
    assert "# Not passed" in md and "## `q2`: failed" in md and "## `q1`" not in md
    rows = list(csv.DictReader(io.StringIO(report(results, "csv"))))
    assert [r["id"] for r in rows] == ["q1", "q2", "q3", "q4"]
    assert (rows[1]["status"], rows[1]["pass"], rows[1]["score"], rows[1]["tool_calls"]) == ("failed", "false", "0.0", "1")
    assert rows[1]["reasoning"].startswith("hint: output does not contain")
    assert rows[2]["output"] == "<script>alert(1)</script>"
    per_trial = list(csv.DictReader(io.StringIO(report(trials(tmp_path, "t.jsonl", 2), "csv"))))
    assert [(r["id"], r["trial"]) for r in per_trial[:2]] == [("q1", "1"), ("q1", "2")]


def test_html_is_one_offline_file_with_everything_escaped(tmp_path):
    results = capture(tmp_path, "r.jsonl", "q2=fail")
    page = report(results, "html")
    assert page.startswith("<!DOCTYPE html>") and page.count("<script>") == 1
    assert "default-src 'none'" in page  # the page may fetch nothing
    assert "<script>alert(1)</script>" not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "<b>not bold</b>" not in page
    for url_start in ("http://", "https://", "src="):
        assert url_start not in page


@pytest.fixture(scope="module")
def browser():
    exe = chromium.find()
    if exe is None:
        pytest.skip("no Chromium found (Debian: apt-get install chromium; .ci/run installs it)")
    b = chromium.Browser(exe)
    yield b
    b.close()


def test_html_trajectory_opens_on_click_in_headless_chromium(tmp_path, browser):
    results = capture(tmp_path, "r.jsonl", "q2=fail")
    page = tmp_path / "report.html"
    assert run_waza("report", results, "--format", "html", "-o", page).returncode == 0
    browser.open(page)
    prompt = 'details.prompt[data-id="q2"]'
    visible = f"document.querySelector('{prompt} .trajectory').checkVisibility()"
    assert browser.js("document.querySelectorAll('details.prompt').length") == 4
    assert browser.js(visible) is False
    browser.click(f"{prompt} > summary")
    assert browser.js(f"document.querySelector('{prompt}').open") is True
    assert browser.js(visible) is True
    shown = browser.js(f"document.querySelector('{prompt} .body').innerText")
    for text in (
        "The user wants me to say pear.",
        "look the word up",
        "lookup",
        '"word": "pear"',
        "I would rather not",
        "output does not contain the hint 'pear'",
    ):
        assert text in shown
    # agent text stays text: no element was made of it, and no script ran but the page's own
    assert browser.js("document.scripts.length") == 1
    assert browser.js("document.querySelectorAll('.trajectory b').length") == 0
    # a link in the summary table opens its prompt too
    assert browser.js("document.querySelector('details.prompt[data-id=\"q3\"]').open") is False
    browser.click('a[data-open="p3"]')
    assert browser.js("document.querySelector('details.prompt[data-id=\"q3\"]').open") is True
    # the status filter hides the other prompts
    browser.click('button[data-filter="failed"]')
    assert browser.js(
        "[...document.querySelectorAll('details.prompt')].filter(d => d.checkVisibility()).map(d => d.dataset.id)"
    ) == ["q2"]


def test_html_for_trials_opens_the_first_trial(tmp_path, browser):
    page = tmp_path / "t.html"
    assert run_waza("report", trials(tmp_path, "t.jsonl", 2, "q1=2"), "-f", "html", "-o", page).returncode == 0
    browser.open(page)
    browser.click('details.prompt[data-id="q1"] > summary')
    assert (
        browser.js("document.querySelector('details.prompt[data-id=\"q1\"] details.trial .trajectory').checkVisibility()") is True
    )
    assert "trial 2" in browser.js("document.querySelector('details.prompt[data-id=\"q1\"]').innerText")


def test_report_errors(tmp_path):
    assert run_waza("report", tmp_path / "missing.jsonl").returncode == 2
    assert run_waza("report", "-", "--format", "pdf", input=b"").returncode == 2
    assert b"Example" in run_waza("report", "--help").stdout


def test_csv_cells_a_spreadsheet_would_evaluate_are_written_as_text(tmp_path):
    """OWASP's CSV-injection rule: a cell starting with = + - @ tab or CR gets a leading single quote."""
    attacks = [
        '=HYPERLINK("http://evil.example","x")',
        "@SUM(1+1)*cmd|' /C calc'!A0",
        "+cmd|' /C calc'!A0",
        "-2+3",
        "\t=1",
        "\r=1",
    ]
    rows = [
        {
            "id": attack,
            "input": "x",
            "output": attack,
            "errors": [attack],
            "status": "error",
            "grades": [{"name": attack, "status": "error", "error": "broke"}],
        }
        for attack in attacks
    ]
    rows.append({"id": "plain", "input": "x", "output": "a = b, safe", "status": "ungraded"})
    written = list(csv.DictReader(io.StringIO(report(write_jsonl(tmp_path / "r.jsonl", rows), "csv"), newline="")))
    for row, attack in zip(written, attacks, strict=False):
        assert (row["id"], row["output"], row["errors"]) == ("'" + attack,) * 3
        assert row["grades"] == f"'{attack}:error"
    assert (written[-1]["id"], written[-1]["output"]) == ("plain", "a = b, safe")
    assert all(not cell.startswith(("=", "+", "-", "@", "\t", "\r")) for row in written for cell in row.values() if cell)
