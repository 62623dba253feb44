"""waza view: the real server on loopback, driven by Playwright in a real headless Chromium.

The results files are made by `waza capture` / `waza trials` with the quiz agent, plus a
hand-written hostile file (markup in ids and outputs, a javascript: link, a huge line)
and a file that grows while the page is open. Every page visited is screenshotted under
the test's temporary directory, and no page may log a console error.
"""

from __future__ import annotations

import contextlib
import os
import re
import select
import shutil
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from html import escape as html_escape
from pathlib import Path

import httpx
import orjson
import pytest

from .analysis_runs import capture, trials
from .conftest import read_jsonl, run_waza, write_jsonl

pytest.importorskip("starlette", reason="waza view needs the view extra: pip install '.[view]'")
pytest.importorskip("uvicorn", reason="waza view needs the view extra: pip install '.[view]'")

CHROMIUM = next((p for name in ("chromium", "chromium-browser") if (p := shutil.which(name))), None)
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
WAIT_MS = 20_000
HUGE = 3_000_000


@contextlib.contextmanager
def leaving(page) -> Iterator[None]:
    """Leave the page before its private viewer stops, so its polling never meets a closed port."""
    try:
        yield
    finally:
        page.goto("about:blank")


#: Starts ``waza view ARGS`` with SIGINT's default disposition: a test worker may have come to ignore SIGINT
#: (a native library it loaded in an earlier test can), and a child inherits an ignored SIGINT through exec,
#: so Ctrl-C would not reach the viewer as it reaches it from a terminal.
_WITH_SIGINT = (
    "import os, signal, sys\n"
    "signal.signal(signal.SIGINT, signal.SIG_DFL)\n"
    "os.execv(sys.executable, [sys.executable, '-m', 'waza', 'view', *sys.argv[1:]])\n"
)


@contextlib.contextmanager
def viewer(*args: str | os.PathLike[str]) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """`waza view ARGS` on a free loopback port; yields (base URL, process) once it prints its URL."""
    proc = subprocess.Popen([sys.executable, "-c", _WITH_SIGINT, *map(str, args)], stderr=subprocess.PIPE, stdout=subprocess.PIPE)
    assert proc.stderr is not None
    try:
        ready, _, _ = select.select([proc.stderr], [], [], 60)
        assert ready, "waza view printed nothing"
        line = proc.stderr.readline().decode()
        match = re.search(r"open (http://127\.0\.0\.1:\d+/)", line)
        assert match, line
        yield match.group(1), proc
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def hostile_rows() -> list[dict]:
    base = {
        "input": "Say <b>hi</b>",
        "status": "failed",
        "adapter": "exec<script>alert(3)</script>",
        "grades": [
            {
                "name": "judge<i>",
                "status": "failed",
                "pass": False,
                "score": 0.0,
                "reasoning": '<img src=x onerror="window.__pwned=1"> [click](javascript:window.__pwned=2)',
            }
        ],
        "score": {"status": "failed", "pass": False, "score": 0.0},
    }
    return [
        {
            **base,
            "id": "<script>window.__pwned=3</script>",
            "output": 'javascript:window.__pwned=4 <a href="javascript:window.__pwned=5">x</a>',
        },
        {**base, "id": "huge", "output": "<script>window.__pwned=6</script>" + "A" * HUGE},
    ]


TINY_SUITE = """\
name: tiny-eval
config:
  trials_per_task: 2
  executor: mock
metrics:
  - name: task_completion
    threshold: 0.5
graders:
  - type: code
    name: says_something
    config:
      assertions:
        - "len(output) > 5"
tasks:
  - "tasks/*.yaml"
"""


def tiny_suite(folder: Path) -> Path:
    """An eval.yaml with two tasks for the mock agent (2 trials each)."""
    (folder / "tasks").mkdir(parents=True)
    for n, what in ((1, "a loop"), (2, "a list")):
        (folder / "tasks" / f"t{n}.yaml").write_text(
            f'id: explain-00{n}\nname: Explain {what}\ninputs:\n  prompt: "Explain {what}"\n'
        )
    eval_yaml = folder / "eval.yaml"
    eval_yaml.write_text(TINY_SUITE)
    return eval_yaml


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("runs")
    made = root / "made"
    made.mkdir()
    capture(made, "base.jsonl", "q4=crash")  # an agent error with a traceback on stderr
    capture(made, "cand.jsonl", "q2=fail")
    trials(made, "trials.jsonl", 3, "q1=1,3")
    (made / "prompts.jsonl").unlink()  # a prompts file is not a run and is not listed
    write_jsonl(root / "hostile.jsonl", hostile_rows())
    with (root / "hostile.jsonl").open("ab") as f:  # two bad lines: listed with their line numbers, the rest still shown
        f.write(b"<script>not json</script>\n" + orjson.dumps({"id": 5, "input": "x", "output": ""}) + b"\n")
    nested = root / "deep" / "er"
    nested.mkdir(parents=True)
    shutil.copy(made / "cand.jsonl", nested / "copy.jsonl")
    (root / "notes.json").write_text('{"not": "a run"}')
    write_jsonl(root / "<img src=x onerror=window.__pwned=7>.jsonl", hostile_rows()[:1])
    suite = run_waza("run", tiny_suite(root.parent / "suite"), "--reporter", f"json:{root / 'suite.json'}", "-o", os.devnull)
    assert suite.returncode in (0, 1), suite.stderr.decode()
    return root


@pytest.fixture(scope="module")
def server(runs: Path) -> Iterator[str]:
    """The viewer over ``runs``, once every run there is listed and read whole: a page asked for while its
    file is still being indexed shows what is read so far, which on a loaded machine may be nothing yet."""
    with viewer(runs) as (url, _):
        settled(url, *(path.name for path in runs.rglob("*.json*") if path.name != "notes.json"))
        yield url


def settled(url: str, *names: str) -> None:
    """Until the viewer at ``url`` lists ``names`` and is indexing nothing (it serves while it reads)."""
    with httpx.Client(base_url=url, timeout=60) as client:
        for _ in range(300):
            html = client.get("/api/runs").json()["html"]
            if all(html_escape(name) in html for name in names) and "indexing" not in html:
                return
            time.sleep(0.1)
    raise AssertionError(f"{names} never all listed and indexed: {html}")


@pytest.fixture(scope="module")
def browser():
    if CHROMIUM is None:
        pytest.skip("chromium is not installed (apt-get install chromium; .ci/run installs it)")
    sync_api = pytest.importorskip(
        "playwright.sync_api", reason="playwright is not installed (pip install playwright; .ci/run installs it)"
    )
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        yield b
        b.close()


@pytest.fixture
def page(browser, tmp_path: Path):
    """A page that records console errors and failed requests; both must be empty at the end."""
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    pg = context.new_page()
    pg.set_default_timeout(WAIT_MS)
    problems: list[str] = []
    pg.on("console", lambda m: problems.append(f"console {m.type}: {m.text}") if m.type == "error" else None)
    pg.on("pageerror", lambda exc: problems.append(f"page error: {exc}"))
    pg.on("dialog", lambda d: (problems.append(f"dialog: {d.message}"), d.dismiss()))
    pg.problems = problems
    yield pg
    context.close()
    assert problems == []


def shot(pg, tmp_path: Path, name: str) -> Path:
    path = tmp_path / f"{name}.png"
    pg.screenshot(path=str(path), full_page=True)
    assert path.stat().st_size > 10_000, f"{name}.png is only {path.stat().st_size} bytes"
    return path


def test_runs_page_lists_every_run_and_sorts(server, page, tmp_path):
    page.goto(server)
    rows = page.locator("#runs tr")
    files = rows.locator("td:first-child a").all_inner_texts()
    assert sorted(Path(f).name for f in files) == [
        "<img src=x onerror=window.__pwned=7>.jsonl",
        "base.jsonl",
        "cand.jsonl",
        "copy.jsonl",
        "hostile.jsonl",
        "suite.json",
        "trials.jsonl",
    ]
    base = page.locator("#runs tr", has_text="base.jsonl")
    assert base.locator("td").nth(1).inner_text() == "capture"
    assert base.locator("td").nth(2).inner_text() == "4"
    assert base.locator("td").nth(3).inner_text() == "100.0%"  # 3 passed of 3 judged; the error is not judged
    assert page.locator("#runs tr", has_text="trials.jsonl").locator("td").nth(1).inner_text() == "trials"
    page.get_by_role("link", name="results").click()  # sort by results, most first
    page.wait_for_url(re.compile(r"sort=results"))
    counts = [int(t) for t in page.locator("#runs tr td:nth-child(3)").all_inner_texts()]
    assert counts == sorted(counts, reverse=True)
    page.fill("input[name=q]", "trials")
    page.press("input[name=q]", "Enter")
    page.wait_for_url(re.compile(r"q=trials"))
    assert page.locator("#runs tr").count() == 1
    shot(page, tmp_path, "runs")


def test_run_page_filter_search_and_plots(server, page, tmp_path):
    page.goto(server)
    page.locator("#runs a", has_text="base.jsonl").click()
    assert page.locator("#rows tr").count() == 4
    assert page.locator("svg.chart").count() == 4  # scores, per-grader pass rates, durations, tokens
    assert "Pass rate per grader" in page.locator(".charts").inner_text()
    page.locator("th a", has_text="tokens").click()  # most tokens first; q4 (no usage) last
    page.wait_for_url(re.compile(r"sort=tokens"))
    assert page.locator("#rows tr td:nth-child(2)").all_inner_texts()[-1] == "q4"
    page.locator("th a", has_text="score").click()
    page.locator("th a", has_text="score ▼").click()  # lowest score first
    page.wait_for_url(re.compile(r"sort=score(?!.*dir=desc)"))
    # q4 errored: its graders judged an output that never came, so it has no score and sorts last either way
    assert page.locator("#rows tr td:nth-child(2)").all_inner_texts()[-1] == "q4"
    assert page.locator("#rows tr", has_text="q4").locator("td").nth(3).inner_text() == "n/a"
    page.locator("a.filter[data-filter=error]").click()
    page.wait_for_url(re.compile(r"status=error"))
    assert page.locator("#rows tr td:nth-child(2)").all_inner_texts() == ["q4"]
    page.locator("a.filter", has_text="all").click()
    page.fill("input[name=q]", "PEAR")  # case-insensitive, over ids, inputs, outputs and reasoning
    page.press("input[name=q]", "Enter")
    page.wait_for_url(re.compile(r"q=PEAR"))
    assert page.locator("#rows tr td:nth-child(2)").all_inner_texts() == ["q2"]
    page.fill("input[name=q]", "agent exited with code 3")  # an error text is searched too
    page.press("input[name=q]", "Enter")
    page.wait_for_url(re.compile(r"q=agent"))
    assert page.locator("#rows tr td:nth-child(2)").all_inner_texts() == ["q4"]
    page.fill("input[name=q]", "<SCRIPT>alert")
    page.press("input[name=q]", "Enter")
    page.wait_for_url(re.compile(r"q=%3CSCRIPT"))
    assert page.locator("#rows tr td:nth-child(2)").all_inner_texts() == ["q3"]
    shot(page, tmp_path, "run")


def test_trials_page_plots_pass_at_k(server, page, tmp_path):
    page.goto(server)
    page.locator("#runs a", has_text="trials.jsonl").click()
    chart = page.locator("svg.chart", has_text="pass@k and pass^k")
    assert chart.count() == 1
    assert chart.locator("circle").count() == 6  # k = 1..3, pass@k and pass^k
    assert page.locator("#rows tr", has_text="q1").locator("td").nth(7).inner_text() == "2/3"
    shot(page, tmp_path, "trials")


def test_a_suite_result_is_a_run(server, runs, page, tmp_path):
    suite = orjson.loads((runs / "suite.json").read_bytes())
    trials_run = sum(len(task["trials"]) for task in suite["tasks"])
    page.goto(server)
    row = page.locator("#runs tr", has_text="suite.json")
    assert row.locator("td").nth(1).inner_text() == "suite"
    assert row.locator("td").nth(2).inner_text() == str(trials_run)
    row.locator("a").click()
    assert f"suite {suite['suite']}" in page.inner_text("main")
    assert page.locator("table.list").first.locator("tbody tr").count() == len(suite["metrics"])
    assert page.locator("#rows tr").count() == trials_run
    page.locator("#rows a.pid").first.click()
    assert page.locator("h1.pid").inner_text() == suite["tasks"][0]["trials"][0]["id"]
    shot(page, tmp_path, "suite")


def test_a_trajectory_opens_with_its_tool_calls(server, page, tmp_path):
    page.goto(server)
    page.locator("#runs a", has_text="cand.jsonl").first.click()
    page.locator("#rows a.pid", has_text="q3").click()
    page.wait_for_url(re.compile(r"/prompt\?"))
    tool = page.locator("li.step.tool_call")
    assert tool.count() == 1
    assert tool.locator(".name").inner_text() == "lookup"
    assert '"note": "<b>not bold</b>"' in tool.inner_text()  # a tool's output is text, not markup
    assert page.locator("li.step.tool_call b").count() == 0
    assert page.locator("pre.output").inner_text() == "<script>alert(1)</script>"
    assert "output contains the hint" in page.locator("table.grades").inner_text()
    shot(page, tmp_path, "prompt")


def test_compare_page_shows_the_regression(server, page, tmp_path):
    page.goto(server + "compare")
    options = page.locator("select[name=a] option").all_inner_texts()
    base = next(o for o in options if "made/base.jsonl" in o).rsplit(" (", 1)[0]
    cand = next(o for o in options if "made/cand.jsonl" in o).rsplit(" (", 1)[0]
    page.select_option("select[name=a]", base)
    page.wait_for_url(re.compile(r"a="))
    page.select_option("select[name=b]", cand)
    page.wait_for_url(re.compile(r"b="))
    regression = page.locator("tr.change-regression")
    assert regression.locator("td").first.inner_text() == "q2"
    assert page.locator("a.filter[data-show=regression]").inner_text() == "regressed (1)"
    assert page.locator("a.filter[data-show=not-judged]").inner_text() == "not judged (1)"  # q4 errored in the baseline
    stats = page.locator("table.list").first.inner_text()
    assert "pass rate" in stats and "-0.333" in stats  # 3/3 -> 2/3 over the 3 judged pairs
    assert "McNemar exact test: 1 passed only in the baseline, 0 only in the candidate" in page.inner_text("main")
    shot(page, tmp_path, "compare")
    regression.locator("a").click()
    page.wait_for_url(re.compile(r"/compare/prompt"))
    assert page.locator(".diff-del").first.inner_text() == "pear"
    assert "rather" in page.locator(".diff-add").first.inner_text()
    assert page.locator("li.step.changed").count() == 2  # the final answer differs on each side
    shot(page, tmp_path, "compare-prompt")


def test_a_run_in_progress_gains_rows(runs, page, tmp_path):
    live_dir = runs.parent / (runs.name + "-live")
    live_dir.mkdir()
    lines = (runs / "made" / "cand.jsonl").read_bytes().splitlines(keepends=True)
    live = live_dir / "live.jsonl"
    live.write_bytes(lines[0])
    with viewer(live_dir) as (url, _), leaving(page):
        page.goto(url)
        settled(url, "live.jsonl")
        page.locator("#runs a", has_text="live.jsonl").click()
        assert page.locator("#rows tr").count() == 1
        with live.open("ab") as f:
            f.write(lines[1])
            f.write(lines[2][:40])  # half a line: not shown until it is whole
            f.flush()
            page.locator("#rows tr").nth(1).wait_for()
            f.write(lines[2][40:] + lines[3])
            f.flush()
            page.locator("#rows tr").nth(3).wait_for()
        assert page.locator("#rows tr td:nth-child(2)").all_inner_texts() == ["q1", "q2", "q3", "q4"]
        assert page.url.endswith("live.jsonl")  # no reload
        shot(page, tmp_path, "live-run")
        page.goto(url)
        row = page.locator("#runs tr", has_text="live.jsonl")
        assert row.locator("td").nth(2).inner_text() == "4"
        with live.open("ab") as f:
            f.write(lines[0].replace(b'"q1"', b'"q5"', 1))
        page.locator("#runs tr td:nth-child(3)", has_text="5").wait_for()
        (live_dir / "started.jsonl").write_bytes(lines[0])  # a run that starts while the list is open
        page.locator("#runs a", has_text="started.jsonl").wait_for()
        assert page.url == url
        # the file is written again from the start (a new run to the same -o), longer than before: indexed anew
        live.write_bytes(
            lines[3]
            + lines[2]
            + lines[1]
            + lines[0]
            + lines[0].replace(b'"q1"', b'"q5"', 1)
            + lines[1].replace(b'"q2"', b'"q6"', 1)
        )
        page.locator("#runs tr", has_text="live.jsonl").locator("td:nth-child(3)", has_text="6").wait_for()
        page.locator("#runs a", has_text="live.jsonl").click()
        assert page.locator("#rows tr td:nth-child(2)").all_inner_texts() == ["q4", "q3", "q2", "q1", "q5", "q6"]


def test_hostile_content_stays_inert(server, page, tmp_path):
    page.goto(server)
    page.locator("#runs a", has_text="hostile.jsonl").click()
    ids = page.locator("#rows tr td:nth-child(2)").all_inner_texts()
    assert ids == ["<script>window.__pwned=3</script>", "huge"]
    problems = page.locator("ul.problems li").all_inner_texts()
    assert [p.split(": ", 1)[0].rsplit("/", 1)[-1] for p in problems] == ["hostile.jsonl:3", "hostile.jsonl:4"]
    assert "invalid JSON" in problems[0]
    assert "field 'id'" in problems[1]
    for i in range(2):
        page.locator("#rows a.pid").nth(i).click()
        page.wait_for_url(re.compile(r"/prompt\?"))
        assert page.locator("a[href^='javascript:']").count() == 0
        assert "<img src=x" in page.locator("table.grades").inner_text()
        page.go_back()
    assert "more characters not shown" in page.goto(page.url.replace("/run?", "/prompt?") + "&i=1").text()
    assert page.locator("pre.output").inner_text().startswith("<script>window.__pwned=6</script>AAAA")
    assert page.evaluate("window.__pwned") is None
    shot(page, tmp_path, "hostile")
    runs_page = page.goto(server)
    assert "script-src 'self'" in runs_page.headers["content-security-policy"]
    # a page of another site whose name was rebound to 127.0.0.1 is turned away
    rebound = urllib.request.Request(server, headers={"Host": "attacker.example"})
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(rebound)
    assert refused.value.code == 400
    listed = page.locator("#runs").inner_text()
    assert listed.count("exec<script>alert(3)</script>") == 2  # hostile.jsonl and the file with a hostile name
    assert "<img src=x onerror=window.__pwned=7>.jsonl" in listed
    assert page.locator("#runs img, #runs script").count() == 0
    page.locator("#runs a", has_text="onerror").click()
    assert page.locator("h1").inner_text().endswith("<img src=x onerror=window.__pwned=7>.jsonl")
    assert page.evaluate("window.__pwned") is None


def test_calibration_page_shows_kappa_and_confusion(runs, tmp_path, page):
    results = runs / "made" / "cand.jsonl"
    sheet = tmp_path / "cal" / "sheet.jsonl"
    sheet.parent.mkdir()
    proc = run_waza("calibrate", results, "--sample", "4", "--seed", "1", "-o", sheet)
    assert proc.returncode == 0, proc.stderr.decode()
    # the human fails q1 and q4, which the grader passed
    labelled = [{**row, "pass": row["id"] not in ("q1", "q2", "q4")} for row in read_jsonl(sheet)]
    sheet.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in labelled))
    shutil.copy(results, sheet.parent / "results.jsonl")
    report = run_waza("calibrate", sheet.parent / "results.jsonl", "--labels", sheet)
    expected = orjson.loads(report.stdout)["comparisons"][0]
    (sheet.parent / "report.json").write_bytes(report.stdout)  # the CalibrationReport, shown as it is
    with viewer(sheet.parent) as (url, _), leaving(page):
        settled(url, "sheet.jsonl", "results.jsonl", "report.json")
        page.goto(url)
        page.locator("#runs a", has_text="sheet.jsonl").click()
        page.wait_for_url(re.compile(r"/calibration\?"))
        assert page.locator("b.kappa").first.inner_text() == f"{expected['kappa']:.3f}"
        matrix = page.locator("svg.chart").first
        counts = matrix.locator("text[font-size='18']").all_text_contents()
        c = expected["confusion"]
        assert counts == [str(c["truePass"]), str(c["falsePass"]), str(c["falseFail"]), str(c["trueFail"])]
        shot(page, tmp_path, "calibration")
        page.goto(url)
        page.locator("#runs a", has_text="report.json").click()
        assert page.locator("b.kappa").first.inner_text() == f"{expected['kappa']:.3f}"
        assert page.locator("svg.chart").first.locator("text[font-size='18']").all_text_contents() == counts


def test_paging_over_a_large_file(tmp_path, page):
    row = read_jsonl(hostile_rows_file(tmp_path))[0]
    write_jsonl(tmp_path / "big.jsonl", ({**row, "id": f"p{n:04d}"} for n in range(250)))
    with viewer(tmp_path / "big.jsonl") as (url, _), leaving(page):
        settled(url, "big.jsonl")
        page.goto(url)
        page.locator("#runs a", has_text="big.jsonl").click()
        assert page.locator("#rows tr").count() == 100
        assert "page 1 of 3" in page.locator(".pager").inner_text()
        page.get_by_role("link", name="next »").click()
        assert page.locator("#rows tr td:nth-child(2)").first.inner_text() == "p0100"


def hostile_rows_file(tmp: Path) -> Path:
    return write_jsonl(tmp / "one.jsonl", hostile_rows()[:1])


def test_usage_errors_the_host_warning_and_ctrl_c(tmp_path):
    proc = run_waza("view", tmp_path / "missing")
    assert proc.returncode == 2
    assert proc.stderr.decode().strip() == f"waza: {tmp_path / 'missing'}: no such file or directory"
    (tmp_path / "prompts.jsonl").write_text('{"id": "a", "input": "hi"}\n')
    proc = run_waza("view", tmp_path / "prompts.jsonl")
    assert proc.returncode == 2
    assert "prompts.jsonl: not a CaptureResult, TrialResult, suite result" in proc.stderr.decode()
    # 192.0.2.1 (TEST-NET-1) is not this machine's: the warning, then a one-line error, exit 2
    proc = run_waza("view", tmp_path, "--host", "192.0.2.1")
    assert proc.returncode == 2
    lines = proc.stderr.decode().splitlines()
    assert lines[0] == "waza: warning: listening on 192.0.2.1: anyone who can reach this address can read these results"
    assert lines[1].startswith("waza: cannot listen on 192.0.2.1:0: ")
    with viewer(tmp_path) as (_url, server):
        pass
    assert server.returncode == 130
    assert server.stderr is not None and server.stderr.read().decode() == "waza: interrupted by SIGINT\n"


def test_why_a_result_errored_is_shown_and_searchable(server, page, tmp_path):
    page.goto(server)
    page.locator("#runs a", has_text="base.jsonl").click()
    q4 = page.locator("#rows tr", has_text="q4")
    assert q4.locator(".why-line").inner_text() == "agent exited with code 3"  # the first error line, in the list
    assert page.locator("#rows .why-line").count() == 1  # only the errored row says why
    page.fill("input[name=q]", "QUIZ_API_KEY")  # the agent's stderr is searched
    page.press("input[name=q]", "Enter")
    page.wait_for_url(re.compile(r"q=QUIZ"))
    assert page.locator("#rows tr td:nth-child(2)").all_inner_texts() == ["q4"]
    page.locator("#rows a.pid", has_text="q4").click()
    page.wait_for_url(re.compile(r"/prompt\?"))
    assert "KeyError: 'QUIZ_API_KEY'" in page.locator("pre.stderr").inner_text()
    assert page.locator("pre.stderr").inner_text().startswith("Traceback (most recent call last):")
    facts = page.locator(".prompt-body .facts").inner_text()
    assert "no verdict (the agent errored)" in facts and "score" not in facts
    # the hint grader failed the empty output: kept aside, closed, and said not to be a verdict
    assert "Not a verdict" in page.locator("p.void").inner_text()
    assert page.locator("details.void").get_attribute("open") is None
    assert page.locator("table.grades").is_visible() is False
    shot(page, tmp_path, "prompt-error")


def test_charts_without_values_are_left_out(server, page):
    page.goto(server)
    page.locator("#runs a", has_text="hostile.jsonl").click()  # no scores kept, no timing, no usage
    titles = page.locator("svg.chart").evaluate_all("charts => charts.map(c => c.getAttribute('aria-label'))")
    assert titles == ["Score distribution", "Pass rate per grader"]  # two failed results scored 0 by one grader
    assert page.locator("svg.chart", has_text="no values").count() == 0


@pytest.mark.parametrize("where", ["run", "prompt", "compare", "runs"])
def test_pages_do_not_scroll_sideways_at_400px(server, browser, where):
    context = browser.new_context(viewport={"width": 400, "height": 800})
    pg = context.new_page()
    pg.set_default_timeout(WAIT_MS)
    try:
        pg.goto(server)
        base = pg.locator("#runs a", has_text="base.jsonl").first.get_attribute("href")
        cand = pg.locator("#runs a", has_text="cand.jsonl").first.get_attribute("href")
        run_url = server.rstrip("/") + base
        if where == "run":
            pg.goto(run_url)
        elif where == "prompt":
            pg.goto(run_url.replace("/run?", "/prompt?") + "&i=2")  # q3: a tool call with JSON input and output
        elif where == "compare":
            a, b = (h.split("f=", 1)[1] for h in (base, cand))
            pg.goto(f"{server}compare?a={a}&b={b}")
            assert pg.locator("table.list").count() == 2
        widths = pg.evaluate("[document.documentElement.scrollWidth, document.documentElement.clientWidth]")
        assert widths[0] <= widths[1], f"{where}: {widths[0]} px of content in a {widths[1]} px window"
    finally:
        context.close()


def simple_rows(prefix: str, n: int, status: str = "passed") -> list[dict]:
    return [
        {
            "id": f"{prefix}{i}",
            "input": "x",
            "output": f"answer {i}",
            "status": status,
            "score": {"status": status, "pass": True, "score": 1.0},
        }
        for i in range(n)
    ]


def wait_listed(client, *names: str) -> str:
    for _ in range(300):
        html = client.get("/api/runs").json()["html"]
        if all(name in html for name in names):
            return html
        time.sleep(0.1)
    raise AssertionError(f"{names} never listed: {html}")


def test_a_fifo_or_a_symlink_swapped_in_blocks_no_request(tmp_path):
    runs, outside = tmp_path / "runs", tmp_path / "outside"
    runs.mkdir()
    outside.mkdir()
    secret = write_jsonl(outside / "secret.jsonl", simple_rows("SECRET-", 2))
    (runs / "link.jsonl").symlink_to(secret)  # points outside the directory: neither listed nor served
    (runs / "linked").symlink_to(outside, target_is_directory=True)
    good = write_jsonl(runs / "good.jsonl", simple_rows("g", 3))
    write_jsonl(runs / "other.jsonl", simple_rows("g", 3, "failed"))
    with viewer(runs) as (url, _), httpx.Client(base_url=url, timeout=60) as client:
        settled(url, "good.jsonl", "other.jsonl")  # both read whole: the comparison below comes from the index alone
        listed = wait_listed(client, "good.jsonl", "other.jsonl")
        assert "SECRET" not in listed and "link.jsonl" not in listed and "linked" not in listed
        for link in (runs / "link.jsonl", runs / "linked" / "secret.jsonl", secret):
            assert client.get("/run", params={"f": str(link)}).status_code == 404
        key, other = str(good), str(runs / "other.jsonl")
        assert client.get("/prompt", params={"f": key, "i": 0}).status_code == 200
        good.unlink()
        os.mkfifo(good)  # no writer will ever come: an open for reading without O_NONBLOCK would wait forever
        reads = [
            ("/prompt", {"f": key, "i": 0}),
            ("/run", {"f": key, "q": "answer"}),
            ("/compare/prompt", {"a": key, "b": other, "id": "g0"}),
            ("/compare", {"a": key, "b": other}),  # first asked after the swap: nothing cached
        ]
        with ThreadPoolExecutor(max_workers=64) as pool:  # more requests at once than the server has worker threads
            answers = list(
                pool.map(lambda n: httpx.get(url.rstrip("/") + reads[n % 4][0], params=reads[n % 4][1], timeout=60), range(96))
            )
        assert {a.status_code for a in answers[:3]} == {409}  # the file is read again for these: refused at once
        assert answers[3].status_code == 200 and "regressed" in answers[3].text  # from the index, no read at all
        assert "not a regular file" in answers[0].text or "FIFO" in answers[0].text
        assert client.get("/").status_code == 200  # still answering
        assert "not read" in wait_listed(client, "not read")  # the list says why the file is not shown
        good.unlink()
        good.symlink_to(secret)  # the same name, now a symlink to a file outside
        for path, params in reads[:3]:
            answer = client.get(path, params=params)
            assert answer.status_code == 409 and "SECRET" not in answer.text
        compared = client.get("/compare", params={"a": key, "b": other})
        assert compared.status_code == 200 and "SECRET" not in compared.text


def read_bytes_so_far() -> int:
    """Bytes this process has read with read() so far (Linux's /proc/self/io rchar)."""
    for line in Path("/proc/self/io").read_text().splitlines():
        if line.startswith("rchar:"):
            return int(line.split()[1])
    raise AssertionError("no rchar in /proc/self/io")


@pytest.mark.skipif(not Path("/proc/self/io").exists(), reason="counts bytes read through Linux's /proc/self/io")
@pytest.mark.parametrize("inotify", [True, False])
def test_a_torn_last_line_is_read_once_not_at_every_look(tmp_path, inotify):
    from waza.runner.view.index import Registry

    run = write_jsonl(tmp_path / "run.jsonl", simple_rows("r", 3))
    registry = Registry(roots=[tmp_path], files=[], inotify=inotify)
    registry.scan()
    (index,) = registry.listing()
    torn = 40_000_000
    with run.open("ab") as out:
        out.write(b'{"id": "torn", "input": "x", "status": "passed", "output": "' + b"A" * torn)
        out.flush()
        before = read_bytes_so_far()
        registry.catch_up(registry.listing())
        assert read_bytes_so_far() - before >= torn  # read once, to find it unfinished
        assert len(index.columns) == 3
        before = read_bytes_so_far()
        for _ in range(20):
            registry.catch_up(registry.listing())
        assert read_bytes_so_far() - before < 1_000_000  # not again while it does not grow
        out.write(b"B" * 5000)  # it grows, still unfinished: only the new bytes are looked at
        out.flush()
        before = read_bytes_so_far()
        registry.catch_up(registry.listing())
        assert read_bytes_so_far() - before < 1_000_000
        out.write(b'"}\n')
    registry.catch_up(registry.listing())
    assert index.columns.ids[-1] == "torn" and len(index.columns) == 4


def until(test, seconds: float = 60) -> None:
    """Wait until ``test()`` holds (an indexer thread's work is seen), failing after ``seconds``."""
    for _ in range(int(seconds / 0.05)):
        if test():
            return
        time.sleep(0.05)
    raise AssertionError("never seen")


@pytest.mark.parametrize("inotify", [True, False])
def test_the_indexer_follows_new_directories_files_and_lines(tmp_path, inotify):
    """With inotify (Linux) and with the stat fallback: a new directory, a new file in it and a new line are seen."""
    from waza.runner.view.index import Registry

    registry = Registry(roots=[tmp_path], files=[], inotify=inotify)
    registry.start()
    try:
        time.sleep(0.5)
        assert registry.watching is (inotify and sys.platform.startswith("linux"))
        (tmp_path / "later" / "deeper").mkdir(parents=True)
        run = write_jsonl(tmp_path / "later" / "deeper" / "run.jsonl", simple_rows("n", 2))
        until(lambda: any(i.path == run and len(i.columns) == 2 for i in registry.listing()))
        with run.open("ab") as f:
            f.write(orjson.dumps(simple_rows("m", 1)[0]) + b"\n")
        until(lambda: len(registry.get(str(run)).columns) == 3)
        (tmp_path / "link.jsonl").symlink_to(run)  # never listed, whichever way changes are seen
        time.sleep(1)
        assert [i.path for i in registry.listing()] == [run]
    finally:
        registry.stop()


@pytest.mark.parametrize("inotify", [True, False])
def test_an_idle_viewer_reads_no_file_again(tmp_path, monkeypatch, inotify):
    """Once indexed, a file that does not change is not opened again (with inotify: nothing is looked at;
    without: one lstat at each look, looking often here), and a file that grows is read, alone."""
    from waza.runner.view.index import Index, Registry

    reads: list[str] = []
    advance = Index.advance

    def counted(self: Index) -> bool:
        reads.append(self.key)
        return advance(self)

    monkeypatch.setattr(Index, "advance", counted)
    runs = []
    for n in range(12):
        (tmp_path / f"d{n % 3}").mkdir(exist_ok=True)
        runs.append(write_jsonl(tmp_path / f"d{n % 3}" / f"run{n}.jsonl", simple_rows(f"r{n}-", 40)))
    registry = Registry(roots=[tmp_path], files=[], inotify=inotify, interval=0.02, slowest=0.1)
    registry.start()
    try:
        until(lambda: len(registry.listing()) == 12 and all(len(i.columns) == 40 for i in registry.listing()))
        time.sleep(0.5)
        reads.clear()
        time.sleep(2)  # the fallback looks at each file 20 times or more in this while
        assert reads == []
        with runs[5].open("ab") as f:
            f.write(orjson.dumps(simple_rows("late", 1)[0]) + b"\n")
        until(lambda: len(registry.get(str(runs[5])).columns) == 41)
        assert set(reads) == {str(runs[5])}
    finally:
        registry.stop()


def test_an_acp_harness_file_is_indexed_as_the_other_commands_read_it(tmp_path):
    """acp-harness's result lines carry no status: the viewer derives it from the grader's pass, as summarize does."""
    from waza.runner.view.index import Registry

    rows = [
        {"id": "a", "input": "x", "output": "yes", "score": {"pass": True, "score": 1.0}},
        {"id": "b", "input": "x", "output": "no", "score": {"pass": False, "score": 0.0}},
        {"id": "c", "input": "x", "output": "", "errors": ["agent crashed"]},
    ]
    run = write_jsonl(tmp_path / "harness.jsonl", rows)
    registry = Registry(roots=[], files=[run], inotify=False)
    registry.scan()
    (index,) = registry.listing()
    assert index.problems == []
    assert index.columns.statuses == ["passed", "failed", "error"]
    assert [s["status"] for s in read_jsonl(run_waza("summarize", run).stdout)] == index.columns.statuses
    assert index.record(1).score is not None and index.record(1).score.passed is False
