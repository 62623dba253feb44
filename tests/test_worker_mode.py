"""Worker mode end to end: real worker processes behind ``waza grade``, misbehaving on purpose.

The scripted worker (tests/graders/scripted_worker.py) picks its fault from the
request id and names, in every good answer, the id it answered and its pid, so
each test can check that a fault cost exactly one request and nothing was
misattributed.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import waza
from waza.protocol.schemas import errors

from .conftest import ROOT, run_waza, write_jsonl

EXAMPLES = ROOT / "examples" / "graders"
SCRIPTED = ROOT / "tests" / "graders" / "scripted_worker.py"
LEFTOVER = ROOT / "tests" / "graders" / "leftover_worker.py"
SCRIPTED_WORKER = waza.Worker(argv=(str(SCRIPTED),))


def results_file(tmp_path: Path, ids: list[str]) -> Path:
    rows = [
        {"id": i, "input": "q", "output": f"the answer to {i} is 42", "hint": "42" if n % 3 else "nope"}
        for n, i in enumerate(ids)
    ]
    return write_jsonl(tmp_path / "results.jsonl", rows)


def graded(source: Path, grader: waza.GraderSpecT, *, concurrency: int = 1, grader_timeout: float = 60) -> dict[str, dict]:
    """``waza grade`` through the API in-process: the worker processes are real, waza's own start-up is spared."""
    results = waza.grade(str(source), [grader], concurrency=concurrency, timeouts=waza.Timeouts(grader=grader_timeout))
    rows = [r.to_dict() for r in results]
    for row in rows:
        assert errors("CaptureResult", row) == []
    return {r["id"]: r for r in rows}


def verdicts(rows: dict[str, dict]) -> dict[str, list[tuple]]:
    """What a grader decided, without the time it took (the only field allowed to differ)."""
    return {
        i: [(g["name"], g["status"], g["pass"], g["score"], g["reasoning"], g["outcome"], g["error"]) for g in r["grades"]]
        + [r["status"], r["score"]]
        for i, r in rows.items()
    }


@pytest.mark.parametrize("grader", ["contains_hint.py", "contains_hint.js", "contains_hint.jq.sh"])
def test_worker_mode_gives_the_same_results_as_one_shot(tmp_path, grader):
    ids = [f"r{n}" for n in range(12)]
    rows = write_jsonl(
        tmp_path / "results.jsonl",
        [{"id": "nohint", "input": "q", "output": "x"}]
        + [
            {"id": i, "input": "q", "output": f"Ünïcode 🎉 answer {i}", "hint": "🎉 ANSWER" if n % 2 else "absent"}
            for n, i in enumerate(ids)
        ],
    )
    path = str(EXAMPLES / grader)
    one_shot = graded(rows, waza.Executable(argv=(path,), name="g"), concurrency=2)
    worker = graded(rows, waza.Worker(argv=(path,), name="g"), concurrency=2)
    assert verdicts(worker) == verdicts(one_shot)
    assert sum(r["status"] == "passed" for r in worker.values()) == 6
    assert worker["nohint"]["grades"][0]["error"] == "grader reported an error: the prompt has no hint to look for"


def test_isolated_builtins_run_as_workers_with_in_process_results(tmp_path):
    source = results_file(tmp_path, [f"r{n}" for n in range(9)])
    in_process = graded(source, waza.Builtin(grader="hint"), concurrency=2)
    isolated = graded(source, waza.Builtin(grader="hint", isolate=True), concurrency=2)
    assert verdicts(isolated) == verdicts(in_process)
    assert [r["status"] for r in isolated.values()].count("passed") == 6


def test_a_crash_mid_stream_costs_one_request_and_the_worker_is_replaced(tmp_path):
    ids = ["a1", "a2", "crash", "a3", "a4", "a5"]
    rows = graded(results_file(tmp_path, ids), SCRIPTED_WORKER)
    crashed = rows["crash"]["grades"][0]
    assert crashed["status"] == "error"
    assert crashed["error"] == "grader exited with code 3 before answering"
    assert "about to crash" in crashed["details"]["stderr"]
    for i in ids:
        if i != "crash":
            assert rows[i]["grades"][0]["outcome"]["for"] == i
    before = {rows[i]["grades"][0]["outcome"]["pid"] for i in ("a1", "a2")}
    after = {rows[i]["grades"][0]["outcome"]["pid"] for i in ("a3", "a4", "a5")}
    assert len(before) == len(after) == 1 and before != after


def test_a_hung_worker_is_killed_at_the_timeout_and_the_rest_are_graded(tmp_path):
    ids = ["b1", "hang", "b2", "b3"]
    # One budget covers every request of a grader, the hung one's and the healthy ones': long enough for a healthy
    # worker (the standard library only) to start and answer on a busy machine, short enough that the test waits
    # a few seconds for the hang.
    rows = graded(results_file(tmp_path, ids), SCRIPTED_WORKER, grader_timeout=5, concurrency=2)
    assert rows["hang"]["grades"][0]["error"] == "grader timed out after 5s"
    assert rows["hang"]["status"] == "error"
    for i in ("b1", "b2", "b3"):
        assert rows[i]["grades"][0]["outcome"]["for"] == i


@pytest.mark.parametrize(
    ("bad", "reason"),
    [
        ("garbage", "grader answer is not one JSON object; it starts 'this is not json'"),
        ("double", "grader wrote more than one line for one request"),
        ("wrongid", "grader answered for id 'someone-else' while grading 'wrongid'"),
        ("noid", """grader answer does not echo requestId '2' (worker protocol 2); it starts '{"pass": true, "score": 1}'"""),
        ("stale", "grader answered requestId '1' while grading requestId '2'"),
    ],
)
def test_an_answer_out_of_step_is_an_error_and_the_worker_is_replaced(tmp_path, bad, reason):
    ids = ["c1", bad, "c2", "c3"]
    rows = graded(results_file(tmp_path, ids), SCRIPTED_WORKER, concurrency=1)
    assert rows[bad]["grades"][0]["error"] == reason
    for i in ("c1", "c2", "c3"):
        assert rows[i]["grades"][0]["outcome"]["for"] == i
    assert rows["c1"]["grades"][0]["outcome"]["pid"] != rows["c2"]["grades"][0]["outcome"]["pid"]


def test_a_leftover_line_never_becomes_the_verdict_of_the_next_request(tmp_path):
    """The issue's case: good, bad, bad, bad, and a stray pass line in place of each worker's 2nd answer."""
    rows = [{"id": "good", "input": "q", "output": "the answer is 42", "hint": "42"}]
    rows += [{"id": f"bad{n}", "input": "q", "output": "no idea", "hint": "42"} for n in (1, 2, 3)]
    graded_rows = graded(write_jsonl(tmp_path / "results.jsonl", rows), waza.Worker(argv=(str(LEFTOVER),)), concurrency=1)
    assert graded_rows["good"]["status"] == "passed"
    # The stray line costs the request in flight an error and the worker its life; the next
    # request gets a fresh worker, whose own stray line (its 2nd answer) costs the last one.
    assert [graded_rows[i]["status"] for i in ("bad1", "bad2", "bad3")] == ["error", "failed", "error"]
    for i in ("bad1", "bad3"):
        assert graded_rows[i]["grades"][0]["error"].startswith("grader answer does not echo requestId")


def test_a_rejected_request_is_an_error_and_the_worker_keeps_serving(tmp_path):
    ids = ["d1", "reject", "d2"]
    rows = graded(results_file(tmp_path, ids), SCRIPTED_WORKER)
    assert rows["reject"]["grades"][0]["error"] == "grader reported an error: cannot grade this one"
    assert rows["d1"]["grades"][0]["outcome"]["pid"] == rows["d2"]["grades"][0]["outcome"]["pid"]


def test_stderr_is_drained_and_the_pool_never_outgrows_the_concurrency(tmp_path):
    ids = [f"noisy{n}" for n in range(40)]  # 8 MB of stderr in all: a pipe left unread would block the worker
    rows = graded(results_file(tmp_path, ids), SCRIPTED_WORKER, concurrency=3)
    assert all(rows[i]["grades"][0]["outcome"]["for"] == i for i in ids)
    pids = {r["grades"][0]["outcome"]["pid"] for r in rows.values()}
    assert 1 <= len(pids) <= 3
    for pid in pids:  # stdin closed at the end of the run: every worker is gone
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)


def test_one_slot_means_one_worker_for_the_whole_run(tmp_path):
    rows = graded(results_file(tmp_path, [f"e{n}" for n in range(20)]), SCRIPTED_WORKER)
    assert len({r["grades"][0]["outcome"]["pid"] for r in rows.values()}) == 1


def test_a_worker_that_cannot_start_is_a_config_error_before_anything_runs(tmp_path):
    proc = run_waza("grade", results_file(tmp_path, ["f1"]), "-g", f"worker:{tmp_path / 'missing.py'}")
    assert proc.returncode == 2
    assert b"does not exist" in proc.stderr
    assert proc.stdout == b""


def test_requests_larger_than_a_pipe_reach_the_worker_whole(tmp_path):
    # 1 MB requests: written while the worker reads them, one after another on one process.
    rows = write_jsonl(
        tmp_path / "results.jsonl",
        [{"id": f"big{n}", "input": "q", "output": "x" * (1 << 20) + f" tail{n}", "hint": f"tail{n}"} for n in range(3)],
    )
    graded_rows = graded(rows, waza.Worker(argv=(str(EXAMPLES / "contains_hint.py"),), name="g"))
    assert [graded_rows[f"big{n}"]["status"] for n in range(3)] == ["passed"] * 3
