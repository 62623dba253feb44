"""waza compare: McNemar and paired intervals against hand-computed values, then end to end on real runs."""

from __future__ import annotations

import orjson
import pytest

from waza.protocol.schemas import errors
from waza.runner.analysis.paired import mcnemar_exact, mcnemar_table, paired_difference
from waza.runner.analysis.stats import bootstrap_ci

from .analysis_runs import capture, trials
from .conftest import read_jsonl, run_waza, write_jsonl


@pytest.mark.parametrize(
    ("b", "c", "p"),
    [
        (1, 6, 2 * (1 + 7) / 2**7),  # 0.125
        (0, 5, 2 / 32),  # 0.0625
        (2, 8, 2 * (1 + 10 + 45) / 1024),  # 0.109375
        (3, 3, 1.0),  # the doubled tail exceeds 1 and is capped
        (0, 0, 1.0),  # no discordant pairs: no evidence either way
    ],
)
def test_mcnemar_exact_matches_hand_computed_binomial_tails(b, c, p):
    assert mcnemar_exact(b, c) == pytest.approx(p, abs=1e-15)
    assert mcnemar_exact(c, b) == mcnemar_exact(b, c)


def test_mcnemar_table_counts_the_four_cells():
    pairs = [(True, True)] * 4 + [(True, False)] * 1 + [(False, True)] * 6 + [(False, False)] * 2
    t = mcnemar_table(pairs)
    assert (t.both_pass, t.baseline_only, t.candidate_only, t.both_fail) == (4, 1, 6, 2)
    assert t.p_value == pytest.approx(0.125)


def test_mcnemar_stays_exact_for_large_tables():
    # b=0, c=2000: p = 2 / 2^2000, far below float's smallest normal but computed without overflow
    assert mcnemar_exact(0, 60) == pytest.approx(2 / 2**60, rel=1e-12)
    assert mcnemar_exact(1000, 1000) == 1.0


def test_paired_difference_is_a_bootstrap_over_per_prompt_differences():
    pairs = [(1.0, 0.0), (1.0, 1.0), (0.0, 1.0), (0.0, 1.0), (0.5, 0.75)]
    d = paired_difference(pairs, seed=3, resamples=500, level=0.9)
    assert d is not None
    assert d.pairs == 5
    assert d.baseline == pytest.approx(2.5 / 5)
    assert d.candidate == pytest.approx(3.75 / 5)
    assert d.difference == pytest.approx((-1 + 0 + 1 + 1 + 0.25) / 5)
    same = bootstrap_ci([b - a for a, b in pairs], seed=3, resamples=500, level=0.9)
    assert (d.low, d.high) == (same.low, same.high)
    assert d.low <= d.difference <= d.high
    assert paired_difference([], seed=0, resamples=500, level=0.9) is None


def test_compare_two_capture_runs_end_to_end(tmp_path):
    a = capture(tmp_path, "a.jsonl", "q2=fail")  # q1 q3 q4 pass
    b = capture(tmp_path, "b.jsonl", "q1=fail", "q3=fail", "q4=error")  # q2 passes; q4 errors
    proc = run_waza("compare", a, b, "--seed", "5")
    assert proc.returncode == 0, proc.stderr.decode()
    report = orjson.loads(proc.stdout)
    assert errors("ComparisonReport", report) == []
    assert [r["kind"] for r in report["runs"]] == ["capture", "capture"]
    c = report["comparisons"][0]
    assert (c["baseline"], c["candidate"], c["shared"]) == ("a.jsonl", "b.jsonl", 4)
    assert c["regressions"] == ["q1", "q3"]
    assert c["improvements"] == ["q2"]
    assert c["notJudged"] == ["q4"]
    # judged pairs q1 (P,F), q2 (F,P), q3 (P,F): b=2, c=1 -> p = 2 * (1 + 3) / 8 = 1
    m = c["mcnemar"]
    assert (m["bothPass"], m["baselineOnly"], m["candidateOnly"], m["bothFail"]) == (0, 2, 1, 0)
    assert m["pValue"] == 1.0
    pr = c["passRate"]
    assert (pr["pairs"], pr["baseline"], pr["candidate"]) == (3, pytest.approx(2 / 3), pytest.approx(1 / 3))
    assert pr["difference"] == pytest.approx(-1 / 3)
    assert pr["low"] <= pr["difference"] <= pr["high"]
    assert {d["id"]: d["change"] for d in c["deltas"]} == {
        "q1": "regression",
        "q2": "improvement",
        "q3": "regression",
        "q4": "not-judged",
    }
    # the same seed gives the same interval; --errors fail brings q4 in as a regression
    again = orjson.loads(run_waza("compare", a, b, "--seed", "5").stdout)
    assert again == report
    failing = orjson.loads(run_waza("compare", a, b, "--errors", "fail").stdout)["comparisons"][0]
    assert failing["regressions"] == ["q1", "q3", "q4"] and failing["passRate"]["pairs"] == 4


def test_unshared_ids_are_listed_not_mixed_in_and_stdin_works(tmp_path):
    a = capture(tmp_path, "a.jsonl")
    rows = [orjson.loads(line) for line in a.read_bytes().splitlines()]
    b = write_jsonl(tmp_path / "b.jsonl", [r for r in rows if r["id"] != "q1"] + [{**rows[0], "id": "extra", "status": "failed"}])
    proc = run_waza("compare", a, "-", "--label", "old", "--label", "new", "-f", "markdown", input=b.read_bytes())
    assert proc.returncode == 0, proc.stderr.decode()
    text = proc.stdout.decode()
    assert "## new vs old" in text and "3 shared prompts" in text
    assert "Only in old: `q1`" in text and "Only in new: `extra`" in text
    assert "| pass rate | 1.000 | 1.000 | +0.000 |" in text


def test_trials_runs_compare_pass_at_k_and_pass_hat_k(tmp_path):
    a = trials(tmp_path, "a.jsonl", 3)  # every trial passes
    b = trials(tmp_path, "b.jsonl", 3, "q1=1", "q2=fail")  # q1 passes 1 of 3, q2 none
    proc = run_waza("compare", a, b)
    assert proc.returncode == 0, proc.stderr.decode()
    report = orjson.loads(proc.stdout)
    assert errors("ComparisonReport", report) == []
    c = report["comparisons"][0]
    assert c["mcnemar"] is None
    assert c["regressions"] == ["q1", "q2"]
    at = {d["k"]: d["difference"] for d in c["passAtK"]}
    hat = {d["k"]: d["difference"] for d in c["passHatK"]}
    # per prompt (n=3): q1 c=1: pass@2 = 1 - C(2,2)/C(3,2) = 2/3, pass^2 = 0; q2 c=0: 0, 0; others 1, 1
    assert at[2]["candidate"] == pytest.approx((2 / 3 + 0 + 1 + 1) / 4)
    assert at[2]["baseline"] == 1.0
    assert hat[2]["candidate"] == pytest.approx((0 + 0 + 1 + 1) / 4)
    assert at[1]["difference"] == pytest.approx(((1 / 3 - 1) + (0 - 1)) / 4)
    assert sorted(at) == [1, 2, 3]
    q1 = next(d for d in c["deltas"] if d["id"] == "q1")
    assert q1["candidate"]["status"] == "flaky" and q1["passRateDelta"] == pytest.approx(-2 / 3)
    assert "| pass@2 |" in run_waza("compare", a, b, "--format", "markdown").stdout.decode()


def test_bad_inputs_exit_2_with_one_line(tmp_path):
    a = capture(tmp_path, "a.jsonl")
    t = trials(tmp_path, "t.jsonl", 1)
    mixed = run_waza("compare", a, t)
    assert mixed.returncode == 2 and b"cannot compare a capture file" in mixed.stderr
    row = a.read_bytes().splitlines()[0]
    dup = write_jsonl(tmp_path / "dup.jsonl", [orjson.loads(row), orjson.loads(row)])
    proc = run_waza("compare", a, dup)
    assert proc.returncode == 2
    assert (
        proc.stderr.decode().strip() == f"waza: {dup}:2: field 'id': duplicate id 'q1' (first on line 1); runs are paired on ids"
    )
    bad = tmp_path / "bad.jsonl"
    bad.write_bytes(row + b"\n" + b'{"id": "x", "input": "y", "output": 3}\n')
    proc = run_waza("compare", a, bad)
    assert proc.returncode == 2 and f"{bad}:2: field 'output'".encode() in proc.stderr
    assert run_waza("compare", a).returncode == 2
    assert b"Example" in run_waza("compare", "--help").stdout


@pytest.mark.slow  # a CPU-bound reference computation; the exact-test cases stay in main
def test_mcnemar_sums_the_same_tail_as_the_binomial_coefficients():
    """The tail is summed term by term (each from the last); it is the exact sum of C(n, i), large n included."""
    import math

    for b, c in [(0, 0), (0, 1), (3, 9), (17, 4), (250, 251), (4950, 5050)]:
        n = b + c
        tail = sum(math.comb(n, i) for i in range(min(b, c) + 1))
        assert mcnemar_exact(b, c) == min(1.0, 2 * tail / (1 << n))


def test_compare_reads_what_it_needs_of_a_line_and_counts_as_a_whole_read_would(tmp_path):
    """compare takes id, status and score from a capture line without decoding the rest; its outcomes are the
    ones the whole record gives, for acp-harness lines too, and a bad field it reads is named."""
    from waza.runner.analysis.comparison import capture_outcome, load_run
    from waza.runner.analysis.runs import ResultsFile

    rows = read_jsonl(capture(tmp_path, "a.jsonl", "q2=fail", "q4=error"))
    harness = {k: v for k, v in rows[1].items() if k not in ("status", "score")}
    harness.update(id="h1", score={"pass": True, "score": 0.5})
    odd = write_jsonl(tmp_path / "odd.jsonl", [*rows, harness, {**rows[0], "id": "u1", "unknown": {}}])
    for policy in ("exclude", "fail"):
        run = load_run(str(odd), "odd", policy)
        whole = {r.id: capture_outcome(r, policy) for _, r in ResultsFile(str(odd))}
        assert run.outcomes == whole
    assert run.outcomes["h1"].side.status == "passed"  # converted as every analysis command converts it
    bad = write_jsonl(tmp_path / "bad.jsonl", [rows[0], {**rows[1], "status": "fine"}])
    proc = run_waza("compare", odd, bad)
    assert proc.returncode == 2
    assert proc.stderr.decode().startswith(f"waza: {bad}:2: field 'status': ")
    bad = write_jsonl(tmp_path / "bad.jsonl", [rows[0], {**rows[1], "score": {"status": "passed", "score": 7}}])
    assert f"{bad}:2: field 'score.score': ".encode() in run_waza("compare", odd, bad).stderr
