"""Trials with a scripted exec agent (a real subprocess) that passes, fails or crashes by trial: the records
and statistics through the API in-process; the interrupt (a signal to waza), the summary lines, the
exit codes and the usage errors through `waza trials`."""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path

import orjson
import pytest

import waza
from waza.protocol.schemas import errors

from .conftest import read_jsonl, run_waza, write_jsonl

AGENT = [sys.executable, str(Path(__file__).parent / "agents" / "trial_agent.py")]


def prompts(path: Path) -> Path:
    return write_jsonl(
        path / "prompts.jsonl",
        [
            {"id": "always", "input": orjson.dumps({"pass": [1, 2, 3, 4, 5]}).decode(), "hint": "ok-answer"},
            {"id": "flaky", "input": orjson.dumps({"pass": [1, 3], "crash": [2]}).decode(), "hint": "ok-answer"},
            {"id": "never", "input": orjson.dumps({"pass": []}).decode(), "hint": "ok-answer"},
        ],
    )


def trials(tmp_path: Path, *args: str, env: dict[str, str] | None = None):
    return run_waza("trials", prompts(tmp_path), "--adapter", "exec", "-g", "builtin:hint", *args, "--", *AGENT, env=env)


def run_trials(tmp_path: Path, **options) -> list[waza.TrialResult]:
    """The same trials through the API in-process (the agent still a real subprocess per trial)."""
    return waza.trials(prompts(tmp_path), waza.ExecAgent(command=tuple(AGENT)), [waza.Builtin(grader="hint")], **options)


def by_id(lines: list[dict]) -> dict[str, dict]:
    for line in lines:
        assert errors("TrialResult", line) == []
    return {line["id"]: line for line in lines}


def test_trials_estimates_errors_flaky_and_summary(tmp_path):
    out = tmp_path / "trials.jsonl"
    # concurrency 3: trials of several prompts run at once; lines still come out whole, trials in order.
    runs = run_trials(tmp_path, k=5, k_values=[1, 3, 5], concurrency=3, output=waza.Output(str(out)))
    results = by_id(read_jsonl(out))
    assert results == {r.id: r.to_dict() for r in runs}
    assert sorted(results) == ["always", "flaky", "never"]
    always, flaky, never = results["always"], results["flaky"], results["never"]
    # Every trial of "always" passes: each ran in a fresh workspace (a shared one answers "dirty").
    assert [t["status"] for t in always["trials"]] == ["passed"] * 5
    assert always["passAtK"] == {"1": 1.0, "3": 1.0, "5": 1.0} and always["passHatK"]["5"] == 1.0
    # flaky: trial 2 crashed (an error, excluded from n by default): n=4, c=2.
    assert [t["trial"] for t in flaky["trials"]] == [1, 2, 3, 4, 5]
    assert [t["status"] for t in flaky["trials"]] == ["passed", "error", "passed", "failed", "failed"]
    assert "exited with code 3" in flaky["trials"][1]["error"]
    assert flaky["trials"][1]["exit"]["code"] == 3
    assert (flaky["k"], flaky["n"], flaky["passes"], flaky["errored"]) == (5, 4, 2, 1)
    assert flaky["passRate"] == 0.5 and flaky["flaky"] is True
    assert flaky["meanScore"] == 0.5  # the crashed trial left n, so it leaves the mean too
    assert flaky["passAtK"] == {"1": pytest.approx(0.5), "3": 1.0, "5": None}  # k > n: undefined
    assert flaky["passHatK"] == {"1": pytest.approx(0.5), "3": 0.0, "5": None}
    assert flaky["trials"][0]["output"] == "ok-answer" and flaky["trials"][0]["grades"][0]["name"] == "hint"
    assert flaky["trials"][0]["trajectory"][-1]["content"] == "ok-answer"
    assert isinstance(flaky["trials"][0]["duration"], int)
    assert never["passAtK"]["5"] == 0.0 and never["flaky"] is False

    report = waza.summarize_trials(runs, seed=4).to_dict()
    assert errors("TrialsSummary", report) == []
    # errored 1: what makes the CLI exit 1
    assert (report["prompts"], report["trials"], report["passed"], report["failed"], report["errored"]) == (3, 15, 7, 7, 1)
    assert report["flaky"] == ["flaky"] and report["seed"] == 4
    assert report["passAtK"]["1"]["estimate"] == pytest.approx((1 + 0.5 + 0) / 3)
    # pass@5 over the 2 prompts where it is defined (the CLI's "pass@5 0.500 ... (2 of 3 prompts)")
    assert report["passAtK"]["5"]["prompts"] == 2 and report["passAtK"]["5"]["estimate"] == 0.5
    low, high = report["passAtK"]["1"]["low"], report["passAtK"]["1"]["high"]
    assert 0.0 <= low <= report["passAtK"]["1"]["estimate"] <= high <= 1.0
    assert not Path(str(out) + ".trials.jsonl").exists()  # the resume sidecar goes once the run is complete


def test_errors_counted_as_fails_gives_the_unbiased_n5_c2_values(tmp_path):
    runs = run_trials(tmp_path, k=5, errors="fail")
    # mean pass rate over prompts: (1 + 2/5 + 0) / 3, what --fail-under pass_rate compares
    assert waza.summarize_trials(runs).pass_rate.estimate == pytest.approx((1 + 2 / 5 + 0) / 3)
    flaky = by_id([r.to_dict() for r in runs])["flaky"]
    assert (flaky["n"], flaky["passes"], flaky["errorPolicy"]) == (5, 2, "fail")
    assert flaky["meanScore"] == pytest.approx(0.4)  # the crash counts as a fail scoring 0
    assert flaky["passAtK"]["5"] == 1.0  # not the plug-in 1 - 0.6^5 = 0.92
    assert flaky["passAtK"]["1"] == pytest.approx(0.4)
    assert flaky["passHatK"]["2"] == pytest.approx(0.1)  # not (2/5)^2 = 0.16


def test_resume_after_a_cut_runs_only_the_missing_trials(tmp_path):
    """The cut is a SIGTERM to waza itself and the summary lines are the CLI's: both through `waza trials`."""
    out, log, summary = tmp_path / "trials.jsonl", tmp_path / "runs.log", tmp_path / "summary.json"
    sidecar = Path(str(out) + ".trials.jsonl")
    first = trials(tmp_path, "-k", "4", "-o", str(out), env={"TRIAL_LOG": str(log), "CUT_AT": "flaky:3"})
    assert first.returncode == 143, first.stderr  # SIGTERM from the agent, mid-run
    assert "--resume" in first.stderr.decode()
    assert [r["id"] for r in read_jsonl(out)] == ["always"]
    assert [(r["id"], r["trial"]) for r in read_jsonl(sidecar)][-2:] == [("flaky", 1), ("flaky", 2)]
    for line in read_jsonl(sidecar):
        assert errors("CaptureResult", line) == []

    second = trials(
        tmp_path, "-k", "4", "-o", str(out), "--resume", "--summary", str(summary), "--fail-under", "pass_rate=0.9",
        env={"TRIAL_LOG": str(log)},
    )  # fmt: skip
    assert second.returncode == 1, second.stderr  # flaky's trial 2 errored, and the gate is missed
    results = by_id(read_jsonl(out))
    assert list(results) == ["always", "flaky", "never"]
    assert [t["trial"] for t in results["flaky"]["trials"]] == [1, 2, 3, 4]
    assert [t["status"] for t in results["flaky"]["trials"]] == ["passed", "error", "passed", "failed"]
    runs = Counter(tuple(line.split()) for line in log.read_text().splitlines())
    # Each (id, trial) ran once, except the one the cut interrupted.
    expected = {(p, str(t)): 1 for p in ("always", "flaky", "never") for t in range(1, 5)}
    expected[("flaky", "3")] = 2
    assert runs == expected
    assert not sidecar.exists()
    # The summary counts the prompts finished before the cut; its lines say what TrialsSummary holds.
    report = orjson.loads(summary.read_bytes())
    assert errors("TrialsSummary", report) == []
    assert (report["prompts"], report["passed"], report["failed"], report["errored"]) == (3, 6, 5, 1)
    stderr = second.stderr.decode()
    assert "3 prompts x 4 trials: 6 passed, 5 failed, 1 errored (errors excluded from n)" in stderr
    assert "(1 prompt from the earlier run included)" in stderr
    assert "pass@4 0.500" in stderr and "(2 of 3 prompts)" in stderr and "flaky (1): flaky" in stderr
    assert "--fail-under not met: pass_rate 0.556 < 0.9" in stderr  # (1 + 2/3 + 0) / 3

    with pytest.raises(waza.ConfigError, match=f"^{out}:1: written with k=4"):
        run_trials(tmp_path, k=3, output=waza.Output(str(out), resume=True))


def test_each_trial_gets_its_own_copy_of_cwd(tmp_path, monkeypatch):
    """Engine behaviour, so through the API in-process (``--cwd`` is ``Workspace(template=...)``)."""
    template = tmp_path / "template"
    template.mkdir()
    (template / "data.txt").write_text("seed")
    monkeypatch.setenv("NEED_FILE", "data.txt")  # the agent answers only when the file is in its workspace
    runs = waza.trials(
        prompts(tmp_path),
        waza.ExecAgent(command=tuple(AGENT)),
        [waza.Builtin(grader="hint")],
        k=2,
        workspace=waza.Workspace(fresh=True, template=template),
    )
    always = next(r for r in runs if r.id == "always")
    assert [t.output for t in always.trials] == ["ok-answer", "ok-answer"]
    assert not (template / "touched").exists()  # the template itself is never used as a workspace


@pytest.mark.parametrize(
    ("options", "says"),
    [({"k": 3, "k_values": [1, 4]}, "k_values=4 exceeds k=3"), ({"errors": "ignore"}, "errors= takes exclude or fail")],
)
def test_bad_options_are_refused_before_anything_runs(tmp_path, options, says):
    with pytest.raises(waza.ConfigError, match=says):
        run_trials(tmp_path, **options)


def test_bad_options_exit_2_with_one_line(tmp_path):
    proc = trials(tmp_path, "--resume")
    assert proc.returncode == 2
    assert "--resume needs a file as -o" in proc.stderr.decode() and proc.stdout == b""


def test_trials_needs_a_grader(tmp_path):
    proc = run_waza("trials", prompts(tmp_path), "--adapter", "exec", "--", *AGENT)
    assert proc.returncode == 2 and "at least one grader in --grader" in proc.stderr.decode()


def test_help_shows_an_example():
    assert b"waza trials prompts.jsonl -k 5" in run_waza("trials", "--help").stdout
