"""``--resume --retry-errors`` (``Output(resume=True, retry_errors=True)``): the results that ended as errors run
again and replace their error records, nothing else runs, and the output keeps one record per id (per id for
trials, whose errored trials alone run again). The agent is a real subprocess that fails while a marker file
exists and logs every start, so a test counts what ran; the runs go through the API in-process, the option and
its usage error through ``waza capture``, and one case through an embedded Ray instance."""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest

import waza

from .conftest import read_jsonl, run_waza, write_jsonl

COMMAND = (sys.executable, str(Path(__file__).parent / "agents" / "marker_agent.py"))
AGENT = waza.ExecAgent(command=COMMAND)
GRADERS = [waza.Builtin(grader="hint")]


def write_prompts(tmp_path: Path, specs: dict[str, dict[str, Any]]) -> Path:
    """One prompt per id; each logs its runs to tmp_path/runs.log and answers what the hint wants unless its spec fails."""
    log = str(tmp_path / "runs.log")
    rows = [{"id": pid, "input": orjson.dumps({"log": log, **spec}).decode(), "hint": "ok-answer"} for pid, spec in specs.items()]
    return write_jsonl(tmp_path / "p.jsonl", rows)


def runs(tmp_path: Path) -> list[tuple[str, ...]]:
    """What the agent ran since the last call, as (id,) or (id, trial); the log starts empty again."""
    log = tmp_path / "runs.log"
    lines = log.read_text().splitlines() if log.exists() else []
    log.unlink(missing_ok=True)
    return sorted(tuple(line.split()) for line in lines)


def lines(path: Path) -> dict[str, bytes]:
    """The output's lines by id (each line exactly as on disk); an id written twice fails the test."""
    by_id: dict[str, bytes] = {}
    for line in path.read_bytes().splitlines(keepends=True):
        pid = orjson.loads(line)["id"]
        assert pid not in by_id, f"{pid} written twice"
        by_id[pid] = line
    return by_id


def status(line: bytes) -> str:
    return str(orjson.loads(line)["status"])


def with_an_error(tmp_path: Path, **b_spec: Any) -> tuple[Path, Path]:
    """Prompts a (passes) and b (fails while a marker exists) run once into out.jsonl; then b's cause is fixed."""
    marker = tmp_path / "broken"
    prompts = write_prompts(tmp_path, {"a": {}, "b": {"fail_while": str(marker), **b_spec}})
    out = tmp_path / "out.jsonl"
    marker.touch()
    waza.capture(prompts, AGENT, GRADERS, output=waza.Output(out))
    assert [status(line) for line in lines(out).values()] == ["passed", "error"]
    marker.unlink()
    runs(tmp_path)
    return prompts, out


def test_only_the_errors_run_again_and_each_id_keeps_one_record(tmp_path, capsys):
    marker = tmp_path / "broken"
    failing = {"fail_while": str(marker)}
    prompts = write_prompts(tmp_path, {"a": {}, "b": failing, "c": {}, "d": failing, "e": {}})
    out = tmp_path / "out.jsonl"
    marker.touch()
    waza.capture(prompts, AGENT, GRADERS, output=waza.Output(out))
    before = lines(out)
    assert {pid: status(line) for pid, line in before.items()} == dict(a="passed", b="error", c="passed", d="error", e="passed")
    assert runs(tmp_path) == [("a",), ("b",), ("c",), ("d",), ("e",)]
    marker.unlink()  # the dependency is fixed

    # --resume alone counts an error as done: nothing runs.
    assert waza.capture(prompts, AGENT, GRADERS, output=waza.Output(out, resume=True)) == []
    assert runs(tmp_path) == [] and lines(out) == before
    capsys.readouterr()
    out.chmod(0o600)  # a results file kept private stays so when its error records are replaced

    again = waza.capture(prompts, AGENT, GRADERS, output=waza.Output(out, resume=True, retry_errors=True))
    assert sorted(r.id for r in again) == ["b", "d"] and all(r.status == "passed" for r in again)
    assert runs(tmp_path) == [("b",), ("d",)]  # the agent ran for the errors only
    assert f"waza: 2 results in {out} ended as errors; running them again" in capsys.readouterr().err
    after = lines(out)
    assert sorted(after) == ["a", "b", "c", "d", "e"]  # one record per id: no error line beside its rerun
    assert all(status(line) == "passed" for line in after.values())
    kept = [before[pid] for pid in "ace"]
    assert out.read_bytes().startswith(b"".join(kept))  # the records that passed: the same bytes, in their order
    assert out.stat().st_mode & 0o777 == 0o600

    # With nothing left in error, retrying runs nothing and leaves the file as it is.
    unchanged = out.read_bytes()
    assert waza.capture(prompts, AGENT, GRADERS, output=waza.Output(out, resume=True, retry_errors=True)) == []
    assert runs(tmp_path) == [] and out.read_bytes() == unchanged
    assert "ended as" not in capsys.readouterr().err


def test_a_retry_cut_short_then_retried_again_ends_with_one_record_per_id(tmp_path):
    marker, hold = tmp_path / "broken", tmp_path / "hold"
    failing = {"fail_while": str(marker)}
    prompts = write_prompts(tmp_path, {"a": {}, "b": failing, "c": {**failing, "wait_while": str(hold)}, "d": failing})
    out = tmp_path / "out.jsonl"
    marker.touch()
    waza.capture(prompts, AGENT, GRADERS, output=waza.Output(out))
    first = lines(out)
    assert [status(first[pid]) for pid in "abcd"] == ["passed", "error", "error", "error"]
    marker.unlink()
    hold.touch()  # c's rerun waits: the run is stopped while it does
    runs(tmp_path)

    async def stop_after_first() -> list[str]:
        output = waza.Output(out, resume=True, retry_errors=True)
        async with contextlib.aclosing(waza.acapture(prompts, AGENT, GRADERS, output=output)) as results:
            async for result in results:
                return [result.id]
        return []

    assert asyncio.run(stop_after_first()) == ["b"]
    cut = lines(out)
    assert sorted(cut) == ["a", "b"] and status(cut["b"]) == "passed"  # c and d: no error line left, not run yet
    assert cut["a"] == first["a"]
    hold.unlink()
    runs(tmp_path)

    waza.capture(prompts, AGENT, GRADERS, output=waza.Output(out, resume=True, retry_errors=True))
    assert runs(tmp_path) == [("c",), ("d",)]  # the missing ones, nothing twice
    final = lines(out)
    assert sorted(final) == ["a", "b", "c", "d"] and all(status(line) == "passed" for line in final.values())
    assert final["a"] == first["a"] and final["b"] == cut["b"]


def test_a_retry_stopped_before_its_first_result_leaves_the_errors_in_place(tmp_path):
    hold = tmp_path / "hold"
    prompts, out = with_an_error(tmp_path, wait_while=str(hold))
    before = out.read_bytes()
    hold.touch()  # b's rerun never answers: the run is stopped (as by Ctrl-C, or a cluster that cannot be joined) first

    async def stop_while_waiting() -> None:
        output = waza.Output(out, resume=True, retry_errors=True)
        async with contextlib.aclosing(waza.acapture(prompts, AGENT, GRADERS, output=output)) as results:
            with pytest.raises(TimeoutError):
                await asyncio.wait_for(anext(results), 2)

    asyncio.run(stop_while_waiting())
    assert out.read_bytes() == before  # the error record stays until a rerun result replaces it


def test_errors_whose_prompts_might_not_come_are_not_removed(tmp_path):
    _, out = with_an_error(tmp_path)
    before = out.read_bytes()
    retry = waza.Output(out, resume=True, retry_errors=True)
    only_a = write_jsonl(tmp_path / "other.jsonl", [{"id": "a", "input": "{}"}])
    with pytest.raises(waza.ConfigError) as refused:
        waza.capture(only_a, AGENT, GRADERS, output=retry)
    assert f"holds results for ids not in {only_a} (first: 'b')" in str(refused.value)
    fifo = tmp_path / "prompts.fifo"  # a stream: its ids cannot be known before b's error record would go
    os.mkfifo(fifo)
    with pytest.raises(waza.ConfigError) as refused:
        waza.capture(fifo, AGENT, GRADERS, output=retry)
    assert "Output.retry_errors needs the prompts in a file, not a stream" in str(refused.value)
    assert out.read_bytes() == before


def trial_lines(path: Path) -> dict[str, dict[str, Any]]:
    return {pid: orjson.loads(line) for pid, line in lines(path).items()}


def test_trials_run_again_only_their_errored_trials(tmp_path, capsys):
    marker = tmp_path / "broken"
    prompts = write_prompts(
        tmp_path,
        {
            "steady": {},
            "flaky": {"fail_while": str(marker), "fail_trials": [2]},
            "shaky": {"fail_while": str(marker), "fail_trials": [1, 3]},
        },
    )
    out = tmp_path / "out.jsonl"
    marker.touch()
    waza.trials(prompts, AGENT, GRADERS, k=3, output=waza.Output(out))
    before, raw = trial_lines(out), lines(out)
    assert {pid: r["errored"] for pid, r in before.items()} == {"steady": 0, "flaky": 1, "shaky": 2}
    marker.unlink()
    runs(tmp_path)
    capsys.readouterr()

    waza.trials(prompts, AGENT, GRADERS, k=3, output=waza.Output(out, resume=True, retry_errors=True))
    assert runs(tmp_path) == [("flaky", "2"), ("shaky", "1"), ("shaky", "3")]  # the errored (id, trial) pairs only
    assert f"waza: 3 trials in {out} ended as errors; running them again" in capsys.readouterr().err
    after = trial_lines(out)
    assert sorted(after) == ["flaky", "shaky", "steady"]  # one line per prompt
    assert lines(out)["steady"] == raw["steady"]
    for result in after.values():
        assert result["errored"] == 0 and result["passes"] == 3 and [t["trial"] for t in result["trials"]] == [1, 2, 3]
    assert after["flaky"]["trials"][0] == before["flaky"]["trials"][0]  # a trial that passed is kept, not rerun
    assert after["flaky"]["trials"][2] == before["flaky"]["trials"][2]
    assert after["shaky"]["trials"][1] == before["shaky"]["trials"][1]
    assert not Path(f"{out}.trials.jsonl").exists()  # complete: no sidecar left


def test_a_trials_retry_cut_short_keeps_the_trials_that_passed(tmp_path):
    marker, hold = tmp_path / "broken", tmp_path / "hold"
    fails = {"fail_while": str(marker), "fail_trials": [2]}
    prompts = write_prompts(tmp_path, {"p": fails, "q": {**fails, "wait_while": str(hold)}})
    out, sidecar = tmp_path / "out.jsonl", Path(f"{tmp_path / 'out.jsonl'}.trials.jsonl")
    marker.touch()
    waza.trials(prompts, AGENT, GRADERS, k=2, output=waza.Output(out))
    before = trial_lines(out)
    assert before["p"]["errored"] == before["q"]["errored"] == 1
    marker.unlink()
    hold.touch()

    async def stop_after_first() -> list[str]:
        output = waza.Output(out, resume=True, retry_errors=True)
        async with contextlib.aclosing(waza.atrials(prompts, AGENT, GRADERS, k=2, output=output)) as results:
            async for result in results:
                return [result.id]
        return []

    assert asyncio.run(stop_after_first()) == ["p"]
    assert sorted(trial_lines(out)) == ["p"]  # q left the output; its trial 1, which passed, waits in the sidecar
    assert any(r["id"] == "q" and "passes" in r for r in read_jsonl(sidecar))
    hold.unlink()
    runs(tmp_path)

    waza.trials(prompts, AGENT, GRADERS, k=2, output=waza.Output(out, resume=True))  # a plain resume finishes it
    assert runs(tmp_path) == [("q", "2")]
    after = trial_lines(out)
    assert sorted(after) == ["p", "q"] and after["q"]["errored"] == 0
    assert after["q"]["trials"][0] == before["q"]["trials"][0]
    assert not sidecar.exists()


def test_the_option_on_the_command_line(tmp_path):
    prompts, out = with_an_error(tmp_path)
    before = out.read_bytes()
    args = ["capture", prompts, "--adapter", "exec", "-g", "builtin:hint", "-o", out]

    proc = run_waza(*args, "--retry-errors", "--", *COMMAND)
    assert proc.returncode == 2
    assert proc.stderr.decode().splitlines() == [
        "waza: --retry-errors needs --resume (it runs again the errors of the file being resumed)"
    ]
    assert out.read_bytes() == before

    proc = run_waza(*args, "--resume", "--retry-errors", "--", *COMMAND)
    assert proc.returncode == 0, proc.stderr
    assert f"waza: 1 result in {out} ended as an error; running it again" in proc.stderr.decode()
    assert runs(tmp_path) == [("b",)]
    assert sorted(lines(out)) == ["a", "b"] and all(status(line) == "passed" for line in lines(out).values())


@pytest.mark.slow  # --retry-errors runs locally in the main suite, as does --resume on Ray (tests/test_ray.py)
def test_errors_run_again_on_ray(tmp_path):
    pytest.importorskip("ray", reason="the ray extra is not installed (pip install '.[ray]' in the checkout)")
    marker = tmp_path / "broken"
    failing = {"fail_while": str(marker)}
    prompts = write_prompts(tmp_path, {"a": {}, "b": failing, "c": failing})
    out = tmp_path / "out.jsonl"
    marker.touch()
    waza.capture(prompts, AGENT, GRADERS, output=waza.Output(out))
    before = lines(out)
    marker.unlink()
    runs(tmp_path)
    # The same sink as a local run: the driver removes the error records and appends what the tasks return.
    proc = run_waza(
        "capture", prompts, "--adapter", "exec", "-g", "builtin:hint", "-o", out, "--resume", "--retry-errors",
        "--executor", "ray", "-j", "1", "--", *COMMAND,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert runs(tmp_path) == [("b",), ("c",)]
    after = lines(out)
    assert sorted(after) == ["a", "b", "c"] and all(status(line) == "passed" for line in after.values())
    assert after["a"] == before["a"]
    assert all("ray" in orjson.loads(after[pid])["metadata"] for pid in "bc")  # where each rerun ran: a Ray node
