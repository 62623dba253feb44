"""The Python API: the manual's example (docs/manual/guides/python-api.md) as written, run_one as a shippable unit, async use, errors."""

from __future__ import annotations

import asyncio
import contextlib
import pickle
import re
import sys
import threading
import typing
from pathlib import Path

import pytest

import waza
from waza.adapters import adapter_class
from waza.runner.engine.specs import AGENTS

from .conftest import ROOT, executable, read_jsonl, run_waza, write_jsonl

SUITE = ROOT / "examples" / "snippet-explainer"
PYTHON_GUIDE = "docs/manual/guides/python-api.md"


def _manual_example() -> str:
    text = (ROOT / PYTHON_GUIDE).read_text()
    match = re.search(r"```python\n(.*?)```", text, re.S)
    assert match, f"{PYTHON_GUIDE} has no python block"
    return match.group(1)


def test_the_manual_example_runs_as_written(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    exec(compile(_manual_example(), PYTHON_GUIDE, "exec"), {"__name__": "manual_example"})
    out = capsys.readouterr().out.splitlines()
    assert (out[0] == "add passed 42" and out[1] == "mul passed 42") or sorted(out[:2]) == ["add passed 42", "mul passed 42"]
    assert "'add': {'1': 1.0, '2': 1.0, '3': 1.0}" in out[2]
    assert out[3] == "1.0"
    rows = read_jsonl(tmp_path / "results.jsonl")
    assert sorted(r["id"] for r in rows) == ["add", "mul"]
    assert {g["name"] for g in rows[0]["grades"]} == {"says_hint", "hint"}


def test_each_agent_spec_is_what_its_adapter_takes():
    for name, spec in AGENTS.items():
        assert typing.get_args(adapter_class(name).__orig_bases__[0]) == (spec,), name


def grade_mentions_mock(request: dict) -> dict:
    """A module-level grader: pickled by reference, importable on another machine as tests.test_api:..."""
    ok = "Mock answer" in request["output"]
    return {"pass": ok, "score": float(ok)}


def test_run_one_takes_picklable_specs_and_leaves_nothing_behind(tmp_path):
    template = tmp_path / "template"
    template.mkdir()
    (template / "notes.txt").write_text("seed file")
    args = (
        {"id": "p1", "input": "hello"},
        waza.MockAgent(),
        [waza.PythonGrader(fn=grade_mentions_mock), waza.PythonGrader(fn="tests.test_api:grade_mentions_mock", name="by_ref")],
    )
    kwargs = {"trial": 2, "timeouts": waza.Timeouts(prompt=30), "workspace": waza.Workspace(fresh=True, template=template)}
    args, kwargs = pickle.loads(pickle.dumps((args, kwargs)))
    result = waza.run_one(*args, **kwargs)
    assert isinstance(result, waza.CaptureResult)
    assert result.status == "passed" and result.trial == 2
    assert [g.name for g in result.grades] == ["grade_mentions_mock", "by_ref"]
    assert "notes.txt" in result.output  # the mock agent lists the workspace: the template was copied in
    assert result.cwd and not Path(result.cwd).exists()  # the fresh workspace is removed after grading
    assert pickle.loads(pickle.dumps(result)).to_dict() == result.to_dict()


def test_other_event_loops_can_still_start_subprocesses_after_a_run(tmp_path):
    """waza installs a process-wide child watcher on Python 3.11; a notebook's or a library's own
    asyncio loop, in this thread or another, must still start and reap subprocesses afterwards
    (a watcher bound to waza's finished loop made them fail with "get_child_watcher() is not activated")."""
    agent = executable(tmp_path / "agent.sh", '#!/bin/sh\ncat >/dev/null\necho \'{"type": "message", "content": "done"}\'\n')
    result = waza.capture([{"id": "p", "input": "x"}], waza.ExecAgent(command=(str(agent),), events=True), [])[0]
    assert result.output == "done"

    async def child_exit_code() -> int:
        proc = await asyncio.create_subprocess_exec(sys.executable, "-c", "raise SystemExit(7)")
        return await proc.wait()

    assert asyncio.run(child_exit_code()) == 7
    codes: list[int] = []
    thread = threading.Thread(target=lambda: codes.append(asyncio.run(child_exit_code())))
    thread.start()
    thread.join(30)
    assert codes == [7]


def test_run_one_records_an_agent_fault_instead_of_raising(tmp_path):
    agent = executable(tmp_path / "crash.sh", "#!/bin/sh\necho boom >&2\nexit 3\n")
    result = waza.run_one({"id": "p", "input": "x"}, waza.ExecAgent(command=(str(agent),)))
    assert result.status == "error" and result.exit is not None and result.exit.code == 3
    assert "boom" in (result.stderr or "")
    with pytest.raises(waza.ConfigError, match="cannot be run"):  # a missing program is found before anything runs
        waza.run_one({"id": "p", "input": "x"}, waza.ExecAgent(command=(str(tmp_path / "missing"),)))


def test_bad_specs_raise_config_errors_before_anything_runs(tmp_path):
    out = tmp_path / "out.jsonl"
    with pytest.raises(waza.ConfigError, match="does not exist"):
        waza.capture(
            [{"id": "a", "input": "x"}], waza.MockAgent(), [waza.PythonGrader(fn="nope.py:f")], output=waza.Output(str(out))
        )
    with pytest.raises(waza.ConfigError, match="duplicate id 'a'"):
        waza.capture([{"id": "a", "input": "x"}, {"id": "a", "input": "y"}], waza.MockAgent())
    with pytest.raises(waza.ConfigError, match="needs an agent command"):
        waza.capture([{"id": "a", "input": "x"}], waza.ExecAgent(command=()))
    with pytest.raises(waza.UsageError):  # every ConfigError is a usage error: exit 2 on the command line
        waza.trials([{"id": "a", "input": "x"}], waza.MockAgent(), [])
    assert not out.exists()
    error = pickle.loads(pickle.dumps(waza.ConfigError("bad", source="f.yaml", line=3, field="x")))
    assert str(error) == "f.yaml:3: field 'x': bad" and error.line == 3


def test_the_async_form_yields_as_results_finish_and_stops_early_inside_a_running_loop(tmp_path):
    prompts = [{"id": f"p{i}", "input": f"question {i}"} for i in range(20)]
    captured = waza.capture(prompts[:3], waza.MockAgent())

    async def main() -> tuple[list[str], list[str]]:
        first: list[str] = []
        stream = waza.acapture(prompts, waza.MockAgent(), [waza.PythonGrader(fn=grade_mentions_mock)], concurrency=3)
        async with contextlib.aclosing(stream) as results:
            async for result in results:
                first.append(result.status)
                if len(first) == 2:
                    break
        graded = [r.status async for r in waza.agrade(captured, [waza.Builtin(grader="hint")])]
        return first, graded

    first, graded = asyncio.run(main())
    assert first == ["passed", "passed"]
    assert graded == ["error"] * 3  # no hint to look for: each record's error, not an exception


def test_capture_resumes_from_its_output_file(tmp_path):
    out = tmp_path / "r.jsonl"
    prompts = [{"id": "a", "input": "x"}, {"id": "b", "input": "y"}]
    waza.capture(prompts[:1], waza.MockAgent(), output=waza.Output(str(out)))
    again = waza.capture(prompts, waza.MockAgent(), output=waza.Output(str(out), resume=True))
    assert [r.id for r in again] == ["b"]
    assert [r["id"] for r in read_jsonl(out)] == ["a", "b"]


def test_trials_and_summary(tmp_path):
    prompts = write_jsonl(tmp_path / "p.jsonl", [{"id": "a", "input": "x"}, {"id": "b", "input": "y"}])
    runs = waza.trials(prompts, waza.MockAgent(), [waza.PythonGrader(fn=grade_mentions_mock)], k=2, k_values=[1, 2])
    assert sorted(r.id for r in runs) == ["a", "b"]
    assert all(r.pass_at_k == {"1": 1.0, "2": 1.0} and len(r.trials) == 2 for r in runs)
    summary = waza.summarize_trials(runs)
    assert summary.prompts == 2 and summary.pass_at_k["2"].estimate == 1.0


def test_a_suite_runs_in_process_and_returns_its_document(tmp_path):
    document = waza.run_suite(SUITE, waza.MockAgent(), trials=1, output=waza.Output(str(tmp_path / "t.jsonl")))
    assert document.summary.status in ("passed", "failed")
    assert len(read_jsonl(tmp_path / "t.jsonl")) >= len(document.tasks)


def test_compare_and_calibrate_in_process(tmp_path):
    prompts = [{"id": f"p{i}", "input": f"q{i}", "hint": "Mock" if i % 2 else "absent"} for i in range(6)]
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    waza.capture(prompts, waza.MockAgent(), [waza.Builtin(grader="hint")], output=waza.Output(str(a)))
    waza.capture(prompts, waza.MockAgent(), [waza.PythonGrader(fn=grade_mentions_mock)], output=waza.Output(str(b)))
    report = waza.compare([str(a), str(b)])
    assert report.comparisons[0].shared == 6
    assert sorted(report.comparisons[0].improvements) == ["p0", "p2", "p4"]
    calibration = waza.calibrate(str(a), graders=[waza.PythonGrader(fn=grade_mentions_mock)], min_kappa=0.5)
    assert calibration.items == 6 and calibration.gate == "failed"


def test_an_agent_that_cannot_start_is_one_line_and_exit_1(tmp_path):
    """The CLI maps AgentError to exit 1 with one line, no traceback (the mapping lives in runtime.EXIT_CODES)."""
    prompts = write_jsonl(tmp_path / "p.jsonl", [{"id": "a", "input": "x"}])
    agent = executable(tmp_path / "not_acp.sh", "#!/bin/sh\nexit 3\n")
    proc = run_waza("capture", prompts, "--adapter", "acp", "--", agent, timeout=120)
    assert proc.returncode == 1, proc.stderr
    lines = proc.stderr.decode().strip().splitlines()
    assert "Traceback" not in proc.stderr.decode()
    assert any(line.startswith("waza: ") for line in lines)


def test_import_waza_is_cheap_and_typed():
    code = "import sys, waza; assert 'waza.runner.engine.capture' not in sys.modules; print(len(waza.__all__))"
    proc = __import__("subprocess").run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert int(proc.stdout) > 30
    assert (Path(waza.__file__).parent / "py.typed").exists()
