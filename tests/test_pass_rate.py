"""One run, one pass rate: the terminal summary, `waza report` and `waza view` show the figure `waza compare`
counts (passed / (passed + failed)), say so beside it, and count errors apart."""

from __future__ import annotations

import sys
from pathlib import Path

import httpx

from .conftest import executable, run_waza, write_jsonl
from .test_view import settled, viewer

DEFINITION = "passed / (passed + failed)"


def mixed_run(tmp_path: Path) -> tuple[Path, bytes]:
    """5 passed, 1 failed, 2 errors (the agent crashes): 0.833 by compare's count, 0.625 with errors as fails."""
    prompts = [{"id": f"p{i}", "input": word} for i, word in enumerate(["good"] * 5 + ["bad"] + ["crash"] * 2)]
    agent = executable(
        tmp_path / "agent.py",
        f"#!{sys.executable}\nimport sys\nword = sys.stdin.read().strip()\nif word == 'crash':\n    sys.exit(3)\nprint(word)\n",
    )
    grader = executable(
        tmp_path / "grader.py",
        f"#!{sys.executable}\nimport json, sys\nr = json.load(sys.stdin)\n"
        "print(json.dumps({'pass': 'good' in r['output'], 'score': 1.0 if 'good' in r['output'] else 0.0}))\n",
    )
    results = tmp_path / "results.jsonl"
    proc = run_waza(
        "capture", write_jsonl(tmp_path / "prompts.jsonl", prompts), "--adapter", "exec", "-g", grader, "-o", results, "--", agent
    )
    assert proc.returncode == 1, proc.stderr  # an errored result still fails the run
    return results, proc.stderr


def test_the_terminal_summary_and_waza_report_show_compares_pass_rate_with_errors_apart(tmp_path: Path) -> None:
    results, stderr = mixed_run(tmp_path)
    summary = stderr.decode()
    assert f"pass rate 0.833 (5/6 = {DEFINITION}; 2 errors counted apart)" in summary, summary
    assert "0.625" not in summary
    report = run_waza("report", results, "-o", tmp_path / "report.md")
    assert report.returncode == 0, report.stderr
    assert f"pass rate 0.833 (5/6 = {DEFINITION}; 2 errors counted apart)" in report.stderr.decode()
    assert f"pass rate 0.833 (5/6 = {DEFINITION}" in (tmp_path / "report.md").read_text()
    compare = run_waza("compare", results, results, "--label", "a", "--label", "b")
    assert compare.returncode == 0, compare.stderr
    assert "0.833" in compare.stdout.decode() + compare.stderr.decode()


def test_waza_view_shows_the_same_pass_rate_and_says_what_it_is(tmp_path: Path) -> None:
    results, _ = mixed_run(tmp_path)
    with viewer(tmp_path) as (url, _):
        settled(url, results.name)
        with httpx.Client(base_url=url, timeout=60) as client:
            listing = client.get("/").text
            run = client.get("/run", params={"f": str(results)}).text
    assert "83.3%" in listing and DEFINITION in listing
    assert "pass rate 83.3%" in run and DEFINITION in run and "2 errored" in run


def test_a_trials_file_written_with_errors_as_fails_shows_the_same_pass_rate_in_report_and_view(tmp_path: Path) -> None:
    """Whatever ``--errors`` policy wrote the file, report and view count its trials as compare does by default."""
    prompts = [{"id": "good", "input": "good"}, {"id": "crash", "input": "crash"}, {"id": "bad", "input": "bad"}]
    agent = executable(
        tmp_path / "agent.py",
        f"#!{sys.executable}\nimport sys\nword = sys.stdin.read().strip()\nif word == 'crash':\n    sys.exit(3)\nprint(word)\n",
    )
    grader = executable(
        tmp_path / "grader.py",
        f"#!{sys.executable}\nimport json, sys\nr = json.load(sys.stdin)\nprint(json.dumps({{'pass': 'good' in r['output'], 'score': 1.0}}))\n",
    )
    results = tmp_path / "trials.jsonl"
    proc = run_waza(
        "trials", write_jsonl(tmp_path / "p.jsonl", prompts), "--adapter", "exec", "-g", grader, "-k", "2",
        "--errors", "fail", "-o", results, "--", agent,
    )  # fmt: skip
    assert proc.returncode in (0, 1), proc.stderr
    # good: 2/2, bad: 0/2, crash: no judged trial (2 errors) -> mean over 2 prompts = 0.500
    report = run_waza("report", results, "-o", tmp_path / "report.md")
    assert report.returncode == 0, report.stderr
    assert "pass rate 0.500 (mean over 2 prompts of passed / (passed + failed) trials; 2 errored trials counted apart)" in (
        report.stderr.decode()
    )
    with viewer(tmp_path) as (url, _):
        settled(url, results.name)
        with httpx.Client(base_url=url, timeout=60) as client:
            run = client.get("/run", params={"f": str(results)}).text
    assert "pass rate 50.0%" in run, run
