"""The Python API's edges, tried as a new user would: each mistake gets one clear error, each shortcut works."""

from __future__ import annotations

import ast
import asyncio
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import waza

from .conftest import ROOT, executable, write_jsonl

SUITE = ROOT / "examples" / "snippet-explainer"
PROMPTS = [{"id": "a", "input": "one"}]


def says_yes(request: dict[str, Any]) -> dict[str, Any]:
    return {"pass": True, "score": 1.0, "reasoning": f"saw {request['output']!r}"}


# --- blocking forms inside a running event loop (a Jupyter notebook) ------------------------------------


@pytest.mark.parametrize(
    ("name", "call"),
    [
        ("capture", lambda results, captured: waza.capture(PROMPTS, waza.MockAgent())),
        ("trials", lambda results, captured: waza.trials(PROMPTS, waza.MockAgent(), says_yes, k=1)),
        ("grade", lambda results, captured: waza.grade(captured, says_yes)),
        ("run_one", lambda results, captured: waza.run_one(PROMPTS[0], waza.MockAgent())),
        ("run_suite", lambda results, captured: waza.run_suite(SUITE, waza.MockAgent(), trials=1)),
        ("calibrate", lambda results, captured: waza.calibrate(str(results), graders=says_yes)),
    ],
)
def test_a_blocking_form_inside_a_running_event_loop_says_to_use_its_async_form(
    tmp_path: Path, name: str, call: Callable[[Path, list[waza.CaptureResult]], object]
) -> None:
    results = tmp_path / "results.jsonl"  # the inputs are made outside the loop: only the call meets it
    captured = waza.capture(PROMPTS, waza.MockAgent(), output=waza.Output(str(results)))

    async def notebook_cell() -> None:
        call(results, captured)

    with pytest.raises(RuntimeError) as raised:
        asyncio.run(notebook_cell())
    message = str(raised.value)
    assert f"waza.{name}()" in message and "already running an event loop" in message
    assert f"waza.a{name}(" in message  # the form to use there
    assert len(message.splitlines()) == 1


def test_the_async_forms_work_inside_a_running_event_loop() -> None:
    async def notebook_cell() -> tuple[list[str], str]:
        captured = [r.status async for r in waza.acapture(PROMPTS, waza.MockAgent(), says_yes)]
        one = await waza.arun_one(PROMPTS[0], waza.MockAgent(), says_yes)
        return captured, one.status

    assert asyncio.run(notebook_cell()) == (["passed"], "passed")


# --- commands given as one string -------------------------------------------------------------------------


def test_a_command_given_as_a_string_is_split_as_a_shell_would(tmp_path: Path) -> None:
    agent = tmp_path / "my agent.py"
    agent.write_text("import sys\nprint(sys.stdin.read()[::-1])\n")
    spec = waza.ExecAgent(command=f"{sys.executable} '{agent}'")
    assert spec.command == (sys.executable, str(agent))
    grader = executable(tmp_path / "grader.sh", '#!/bin/sh\ncat >/dev/null\necho \'{"pass": true, "score": 1}\'\n')
    assert waza.Executable(argv=f"{grader} --strict").argv == (str(grader), "--strict")
    [result] = waza.capture(PROMPTS, spec, waza.Executable(argv=str(grader)))
    assert (result.status, result.output.strip()) == ("passed", "eno")


def test_a_command_that_is_neither_a_string_nor_a_sequence_is_refused() -> None:
    with pytest.raises(waza.ConfigError, match=r"ExecAgent\.command takes a command line"):
        waza.ExecAgent(command=42)  # type: ignore[arg-type]


# --- output, limits and other values out of range --------------------------------------------------------


def test_an_output_in_a_missing_folder_is_one_clear_error_before_anything_runs(tmp_path: Path) -> None:
    ran = tmp_path / "ran"
    agent = tmp_path / "agent.py"
    agent.write_text(f"open({str(ran)!r}, 'w').close()\nprint('hi')\n")
    output = waza.Output(str(tmp_path / "missing" / "out.jsonl"))
    for call in (
        lambda: waza.capture(PROMPTS, waza.ExecAgent(command=(sys.executable, str(agent))), output=output),
        lambda: waza.trials(PROMPTS, waza.ExecAgent(command=(sys.executable, str(agent))), says_yes, k=1, output=output),
        lambda: waza.grade(waza.capture(PROMPTS, waza.MockAgent()), says_yes, output=output),
        lambda: waza.run_suite(SUITE, waza.MockAgent(), trials=1, output=output),
    ):
        with pytest.raises(waza.ConfigError) as raised:
            call()
        assert str(raised.value) == f"Output.path {output.path!r}: folder {str(tmp_path / 'missing')!r} does not exist"
    assert not ran.exists()


@pytest.mark.parametrize(
    ("make", "names"),
    [
        (lambda: waza.Timeouts(prompt=-1), "Timeouts.prompt"),
        (lambda: waza.Timeouts(prompt=0), "Timeouts.prompt"),
        (lambda: waza.Timeouts(prompt=float("inf")), "Timeouts.prompt"),
        (lambda: waza.Timeouts(grader=-5), "Timeouts.grader"),
        (lambda: waza.Timeouts(grader=float("nan")), "Timeouts.grader"),
        (lambda: waza.Timeouts(prompt_unit="h"), "Timeouts.prompt_unit"),  # type: ignore[arg-type]
        (lambda: waza.Executable(argv=("true",), timeout=0), "Executable.timeout"),
        (lambda: waza.Builtin(grader="hint", weight=-1), "Builtin.weight"),
        (lambda: waza.PythonGrader(fn=says_yes, name="no spaces"), "PythonGrader.name"),
        (lambda: waza.HttpAgent(max_tokens=0), "HttpAgent.max_tokens"),
        (lambda: waza.HttpAgent(temperature=-0.5), "HttpAgent.temperature"),
        (lambda: waza.Output(""), "Output.path"),
    ],
)
def test_out_of_range_spec_values_are_refused_when_the_spec_is_made(make: Callable[[], object], names: str) -> None:
    with pytest.raises(waza.ConfigError) as raised:
        make()
    assert str(raised.value).startswith(names + " ")


def test_sensible_values_are_accepted() -> None:
    assert waza.Timeouts(prompt=0.5, grader=30, prompt_unit="ms").prompt == 0.5
    assert waza.Timeouts(prompt=None).prompt is None
    assert waza.Output(Path("x.jsonl")).path == "x.jsonl"  # type: ignore[arg-type]


# --- what graders= takes ---------------------------------------------------------------------------------


def test_graders_takes_one_spec_a_string_a_function_or_a_list_of_them(tmp_path: Path) -> None:
    grader = executable(tmp_path / "grader.sh", '#!/bin/sh\ncat >/dev/null\necho \'{"pass": true, "score": 1}\'\n')
    module = tmp_path / "check.py"
    module.write_text("def grade(request):\n    return {'pass': True, 'score': 1.0}\n")
    for graders, names in [
        (waza.Builtin(grader="regex", config={"must_match": ["Mock"]}), ["regex"]),
        (str(grader), ["grader.sh"]),  # a program, as --grader reads it
        (f"{module}:grade", ["grade"]),
        (says_yes, ["says_yes"]),
        ([says_yes, str(grader), waza.PythonGrader(fn=f"{module}:grade", name="file")], ["says_yes", "grader.sh", "file"]),
    ]:
        [result] = waza.capture(PROMPTS, waza.MockAgent(), graders)
        assert [g.name for g in result.grades] == names, graders
        assert result.status == "passed", result.grades


@pytest.mark.parametrize("bad", [42, [waza.MockAgent()], [None]])
def test_graders_that_are_not_graders_are_refused_by_position(bad: object) -> None:
    with pytest.raises(waza.ConfigError, match=r"graders"):
        waza.capture(PROMPTS, waza.MockAgent(), bad)  # type: ignore[arg-type]


def test_a_string_naming_no_grader_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(waza.ConfigError, match="does not exist"):
        waza.capture(PROMPTS, waza.MockAgent(), str(tmp_path / "missing.sh"))


# --- the exported names ----------------------------------------------------------------------------------


def test_all_is_a_literal_list_naming_every_lazily_loaded_name() -> None:
    """A computed ``__all__`` hides every ``waza.X`` from ``mypy --strict``; CI type-checks the manual's example."""
    tree = ast.parse((ROOT / "runner" / "_waza" / "__init__.py").read_text())
    [assignment] = [
        n for n in tree.body if isinstance(n, ast.Assign) and any(getattr(t, "id", None) == "__all__" for t in n.targets)
    ]
    names = ast.literal_eval(assignment.value)
    assert names == waza.__all__
    assert sorted(names) == sorted(["__version__", *waza._EXPORTS])
    for name in names:
        assert getattr(waza, name) is not None


def test_prompts_from_a_file_and_errors_inside_the_run_reach_the_caller_unwrapped(tmp_path: Path) -> None:
    """An error raised inside the run's task groups is itself, not an ExceptionGroup traceback."""
    prompts = write_jsonl(tmp_path / "p.jsonl", [{"id": "a", "input": "x"}])
    with prompts.open("ab") as f:
        f.write(b"{not json\n")
    with pytest.raises(waza.WazaError) as raised:
        waza.capture(str(prompts), waza.MockAgent())
    assert not isinstance(raised.value, BaseExceptionGroup)
    assert "p.jsonl:2" in str(raised.value)
