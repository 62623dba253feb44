"""The Python API where people use it: in a Jupyter kernel, and with standard output redirected.

A notebook kernel's ``sys.stdout`` is a text stream with no byte buffer under it, and so is the
``io.StringIO`` of ``contextlib.redirect_stdout``; a capture must write its results and finish there
as it does in a terminal, whether the results go to a file or to standard output.
"""

from __future__ import annotations

import contextlib
import io
import json
import sys
import textwrap
from pathlib import Path

import pytest

import waza
from tests.conftest import executable, read_jsonl

SUITE = Path(__file__).parent.parent / "examples" / "snippet-explainer" / "eval.yaml"
AGENT = "#!/bin/sh\ncat >/dev/null\necho 'The answer is 42.'\n"


def test_a_capture_under_redirected_stdout_writes_its_file_and_finishes(tmp_path: Path) -> None:
    agent = executable(tmp_path / "agent.sh", AGENT)
    out = tmp_path / "results.jsonl"
    with contextlib.redirect_stdout(io.StringIO()) as printed:
        results = waza.capture([{"id": "q", "input": "x"}], waza.ExecAgent(command=(str(agent),)), output=waza.Output(str(out)))
    assert [r.output.strip() for r in results] == ["The answer is 42."]
    assert [row["id"] for row in read_jsonl(out)] == ["q"]
    assert printed.getvalue() == ""  # results to a file: nothing printed on standard output


def test_results_to_a_redirected_stdout_arrive_there_as_text(tmp_path: Path) -> None:
    agent = executable(tmp_path / "agent.sh", AGENT)
    with contextlib.redirect_stdout(io.StringIO()) as printed:
        waza.capture(
            [{"id": "a", "input": "x"}, {"id": "b", "input": "y"}], waza.ExecAgent(command=(str(agent),)), output=waza.Output("-")
        )
    rows = [json.loads(line) for line in printed.getvalue().splitlines()]
    assert sorted(r["id"] for r in rows) == ["a", "b"]
    assert all(r["output"].strip() == "The answer is 42." for r in rows)


def test_the_async_api_runs_in_a_real_jupyter_kernel(tmp_path: Path) -> None:
    nbformat = pytest.importorskip("nbformat", reason="the notebook test needs the test extra's nbformat")
    nbclient = pytest.importorskip("nbclient", reason="the notebook test needs the test extra's nbclient")
    pytest.importorskip("ipykernel", reason="the notebook test needs the test extra's ipykernel")
    agent = executable(tmp_path / "agent.sh", AGENT)
    out = tmp_path / "results.jsonl"
    # Top-level await in a cell, as a notebook user writes it; the kernel's stdout is an OutStream (no .buffer).
    cells = [
        "import waza",
        textwrap.dedent(
            f"""
            ids = []
            async for r in waza.acapture(
                [{{"id": "n1", "input": "x"}}, {{"id": "n2", "input": "y"}}],
                waza.ExecAgent(command=({str(agent)!r},)),
                output=waza.Output({str(out)!r}),
            ):
                ids.append(r.id)
            print(sorted(ids))
            """
        ),
    ]
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells])
    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    client = nbclient.NotebookClient(
        notebook, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}
    )
    # The kernel runs on this interpreter (where waza is installed), whatever kernels the machine lists.
    client.kernel_manager_class = _this_interpreter_kernel()
    client.execute()
    outputs = notebook.cells[1].outputs
    assert [o.get("ename") for o in outputs if o.output_type == "error"] == []
    printed = "".join(o.get("text", "") for o in outputs if o.output_type == "stream" and o.get("name") == "stdout")
    assert "['n1', 'n2']" in printed
    assert sorted(row["id"] for row in read_jsonl(out)) == ["n1", "n2"]


def _this_interpreter_kernel() -> type:
    from jupyter_client.manager import KernelManager

    class ThisInterpreter(KernelManager):  # type: ignore[misc]
        def format_kernel_cmd(self, extra_arguments: list[str] | None = None) -> list[str]:
            return [sys.executable, "-m", "ipykernel_launcher", "-f", self.connection_file]

    return ThisInterpreter


def test_trials_to_a_redirected_stdout_arrive_there_as_text(tmp_path: Path) -> None:
    agent = executable(tmp_path / "agent.sh", AGENT)
    with contextlib.redirect_stdout(io.StringIO()) as printed:
        waza.trials(
            [{"id": "t", "input": "x", "hint": "42"}],
            waza.ExecAgent(command=(str(agent),)),
            [waza.Builtin(grader="hint")],
            k=2,
            output=waza.Output("-"),
        )
    rows = [json.loads(line) for line in printed.getvalue().splitlines()]
    assert [(r["id"], r["passes"]) for r in rows] == [("t", 2)]


def test_analysis_outputs_and_suite_reporters_write_text_to_a_stdout_without_a_buffer(tmp_path: Path) -> None:
    """``waza report -o -`` and ``--reporter markdown:-`` through the same writers, under a stdout with no buffer."""
    from waza.runner.engine.sink import output_stream
    from waza.runner.suites.reporters import Reporter

    with contextlib.redirect_stdout(io.StringIO()) as printed:
        with output_stream("-") as out:
            out.write(b"# report\n")
        document = waza.run_suite(SUITE, waza.MockAgent(), trials=1, output=waza.Output(str(tmp_path / "t.jsonl")))
        Reporter("-", lambda result: f"suite {result.suite}\n".encode()).write(document)
    assert printed.getvalue() == f"# report\nsuite {document.suite}\n"
