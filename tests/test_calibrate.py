"""``waza calibrate``: kappa by hand, the stratified blind sheet, labels and re-grading, on real capture/trials files."""

from __future__ import annotations

import sys
from pathlib import Path

import orjson
import pytest

import waza
from waza.protocol.schemas import errors
from waza.runner.analysis.agreement import Pair, agreement

from .conftest import read_jsonl, run_waza, write_jsonl

ECHO = [sys.executable, "-c", "import sys; print(sys.stdin.read())"]
TRIAL_AGENT = [sys.executable, str(Path(__file__).parent / "agents" / "trial_agent.py")]
PASSING = [f"p{i}" for i in range(8)]
FAILING = [f"f{i}" for i in range(4)]


def pairs(cells: dict[tuple[bool, bool], int]) -> list[Pair]:
    out = []
    for (truth, said), count in cells.items():
        out += [Pair(id=f"{truth}-{said}-{i}", trial=None, reference=truth, verdict=said) for i in range(count)]
    return out


def test_kappa_and_rates_on_a_hand_computed_table():
    # 20 both pass, 5 grader-only pass, 10 human-only pass, 15 both fail (n = 50):
    # p_o = 35/50 = 0.7; p_e = 0.6 * 0.5 + 0.4 * 0.5 = 0.5; kappa = (0.7 - 0.5) / 0.5 = 0.4.
    a = agreement(
        pairs({(True, True): 20, (False, True): 5, (True, False): 10, (False, False): 15}), grader="g", reference="human"
    )
    assert a.kappa == pytest.approx(0.4)
    assert a.agreement == pytest.approx(0.7)
    assert a.false_pass_rate == pytest.approx(5 / 20)
    assert a.false_fail_rate == pytest.approx(10 / 30)
    assert (a.confusion.true_pass, a.confusion.false_pass, a.confusion.false_fail, a.confusion.true_fail) == (20, 5, 10, 15)
    assert len(a.disagreements) == 15
    opposite = agreement(pairs({(True, False): 5, (False, True): 5}), grader="g", reference="human")
    assert opposite.kappa == pytest.approx(-1.0)
    constant = agreement(pairs({(True, True): 7}), grader="g", reference="human")
    assert constant.kappa is None and constant.agreement == 1.0 and constant.false_pass_rate is None


@pytest.fixture(scope="module")
def captured(tmp_path_factory) -> Path:
    """A real capture file: 8 prompts whose echoed input holds the hint (pass), 4 that do not (fail)."""
    root = tmp_path_factory.mktemp("captured")
    rows = [{"id": i, "input": f"say ok {i}", "hint": "ok"} for i in PASSING]
    rows += [{"id": i, "input": f"say no {i}", "hint": "ok"} for i in FAILING]
    out = root / "results.jsonl"
    # Made through the API in-process: calibrate reads this file; the capture is not the point here.
    results = waza.capture(rows, waza.ExecAgent(command=tuple(ECHO)), [waza.Builtin(grader="hint")], output=waza.Output(str(out)))
    assert sorted(r.status for r in results) == ["failed"] * len(FAILING) + ["passed"] * len(PASSING)
    return out


def test_sheet_is_stratified_blind_and_reproducible(captured, tmp_path):
    sheet, md = tmp_path / "sheet.jsonl", tmp_path / "sheet.md"
    proc = run_waza("calibrate", captured, "--sample", "6", "--seed", "5", "-o", sheet, "--sheet-markdown", md)
    assert proc.returncode == 0, proc.stderr
    items = read_jsonl(sheet)
    for item in items:
        assert errors("CalibrationItem", item) == []
        assert item["pass"] is None and not {"status", "score", "grades"} & set(item)
    ids = [i["id"] for i in items]
    assert sum(i in PASSING for i in ids) == 3 and sum(i in FAILING for i in ids) == 3  # equal shares per stratum
    assert [i["sample"] for i in items] == [1, 2, 3, 4, 5, 6]
    text = md.read_text()
    assert all(f"`{i}`" in text for i in ids) and "passed" not in text and "does not contain" not in text
    again = run_waza("calibrate", captured, "--sample", "6", "--seed", "5")
    assert again.stdout == sheet.read_bytes()
    # Asking for more than the smaller stratum holds: all 4 fails, the rest from the passes.
    spill = read_jsonl(run_waza("calibrate", captured, "--sample", "10").stdout)
    assert sorted(i["id"] for i in spill if i["id"] in FAILING) == FAILING and len(spill) == 10


def labels_file(path: Path) -> Path:
    """Human labels: 6 of the 8 grader passes are good, 2 of the 4 grader fails are good (one as a full sheet line)."""
    rows = [{"id": i, "pass": i not in ("p0", "p1")} for i in PASSING]
    rows += [{"id": "f0", "pass": True}, {"id": "f1", "pass": False, "notes": "wrong"}, {"id": "f2", "pass": False}]
    rows.append(
        {
            "sample": 12,
            "id": "f3",
            "trial": None,
            "input": "say no f3",
            "output": "say no f3",
            "hint": "ok",
            "reference": None,
            "trajectory": [],
            "pass": True,
            "notes": "",
        }
    )
    rows += [{"id": "later", "pass": None}, {"id": "ghost", "pass": True}]
    return write_jsonl(path / "labels.jsonl", rows)


def test_labels_give_kappa_confusion_rates_and_disagreements(captured, tmp_path):
    labels = labels_file(tmp_path)
    proc = run_waza("calibrate", captured, "--labels", labels, "--min-kappa", "0.2")
    assert proc.returncode == 0, proc.stderr
    report = orjson.loads(proc.stdout)
    assert errors("CalibrationReport", report) == []
    assert (report["items"], report["unlabelled"], report["unmatched"], report["gate"]) == (12, 1, ["ghost"], "passed")
    (verdict,) = report["comparisons"]
    # 6 pass/pass, 2 pass/fail, 2 fail/pass, 2 fail/fail: p_o = 8/12, p_e = 5/9, kappa = 0.25.
    assert verdict["confusion"] == {"truePass": 6, "falsePass": 2, "falseFail": 2, "trueFail": 2}
    assert verdict["kappa"] == pytest.approx(0.25)
    assert verdict["falsePassRate"] == pytest.approx(0.5) and verdict["falseFailRate"] == pytest.approx(0.25)
    assert sorted(d["id"] for d in verdict["disagreements"]) == ["f0", "f3", "p0", "p1"]
    assert "kappa 0.250" in proc.stderr.decode()
    strict = run_waza("calibrate", captured, "--labels", labels, "--min-kappa", "0.3")
    assert strict.returncode == 1 and orjson.loads(strict.stdout)["gate"] == "failed"


def test_new_grader_is_compared_with_labels_and_old_verdicts(captured, tmp_path):
    grader = tmp_path / "lenient.py"
    grader.write_text("def grade(request):\n    return {'pass': True, 'score': 1.0, 'reasoning': 'looks fine'}\n")
    proc = run_waza("calibrate", captured, "--labels", labels_file(tmp_path), "--grader", f"{grader}:grade")
    report = orjson.loads(proc.stdout)
    assert errors("CalibrationReport", report) == []
    names = [(c["grader"], c["reference"]) for c in report["comparisons"]]
    assert names == [("grade (new)", "human"), ("verdict", "human"), ("grade (new)", "verdict")]
    new_vs_human, _, new_vs_old = report["comparisons"]
    # Passing everything: 8 human passes, 4 human fails; kappa 0 (no better than chance).
    assert new_vs_human["confusion"] == {"truePass": 8, "falsePass": 4, "falseFail": 0, "trueFail": 0}
    assert new_vs_human["kappa"] == pytest.approx(0.0) and new_vs_human["falsePassRate"] == 1.0
    assert new_vs_old["agreement"] == pytest.approx(8 / 12)
    gated = run_waza("calibrate", captured, "--grader", f"{grader}:grade", "--min-kappa", "0.5")
    assert gated.returncode == 1
    assert orjson.loads(gated.stdout)["comparisons"][0]["items"] == 12


def test_trials_files_are_sampled_and_labelled_per_trial(tmp_path):
    prompts = write_jsonl(
        tmp_path / "prompts.jsonl",
        [
            {"id": "x", "input": orjson.dumps({"pass": [1]}).decode(), "hint": "ok-answer"},
            {"id": "y", "input": orjson.dumps({"pass": [2]}).decode(), "hint": "ok-answer"},
        ],
    )
    out = tmp_path / "trials.jsonl"
    waza.trials(
        prompts, waza.ExecAgent(command=tuple(TRIAL_AGENT)), [waza.Builtin(grader="hint")], k=2, output=waza.Output(str(out))
    )
    sheet = read_jsonl(run_waza("calibrate", out, "--sample", "4").stdout)
    assert sorted((i["id"], i["trial"]) for i in sheet) == [("x", 1), ("x", 2), ("y", 1), ("y", 2)]
    for item in sheet:
        item["pass"] = item["output"] == "ok-answer"
    labels = write_jsonl(tmp_path / "labels.jsonl", sheet)
    report = orjson.loads(run_waza("calibrate", out, "--labels", labels).stdout)
    assert report["comparisons"][0]["items"] == 4 and report["comparisons"][0]["kappa"] == pytest.approx(1.0)


@pytest.mark.parametrize(
    ("rows", "args", "says"),
    [
        ([{"id": "p0", "pass": True}, {"id": "p0", "pass": False}], [], "labels.jsonl:2: field 'id': p0 is labelled twice"),
        ([{"id": "p0", "pass": "yes"}], [], "labels.jsonl:1: field 'pass'"),
        ([{"id": "p0", "pass": True}], ["--sheet-markdown", "x.md"], "--sheet-markdown writes the labelling sheet"),
        ([{"id": "p0", "pass": None}], [], 'no line has "pass" set'),
    ],
)
def test_bad_labels_and_options_exit_2(captured, tmp_path, rows, args, says):
    proc = run_waza("calibrate", captured, "--labels", write_jsonl(tmp_path / "labels.jsonl", rows), *args)
    assert proc.returncode == 2 and says in proc.stderr.decode(), proc.stderr


def test_calibrate_without_a_mode_is_a_usage_error(captured):
    proc = run_waza("calibrate", captured)
    assert proc.returncode == 2 and "--sample N" in proc.stderr.decode()
