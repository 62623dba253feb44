"""One parameter list per entry point: each run's blocking, async and prepare forms take the options of one
``TypedDict`` (``waza.CaptureOptions``, ...), so a new option is added once and a form cannot miss it."""

from __future__ import annotations

import inspect
import os
import sys
import typing
from collections.abc import Callable
from typing import Any

import pytest

import waza
from waza.runner.cli.options import AgentOptions

# (the TypedDict, the form that gives the defaults, what only that form takes, the forms taking **options)
ENTRY_POINTS: list[tuple[type, Callable[..., Any], set[str], list[Callable[..., Any]]]] = [
    (waza.CaptureOptions, waza.CaptureRun.prepare, {"table", "executor"}, [waza.capture, waza.acapture]),
    (waza.RunOneOptions, waza.arun_one, set(), [waza.run_one]),
    (waza.TrialsOptions, waza.TrialsRun.prepare, {"seed", "summary", "table", "executor"}, [waza.trials, waza.atrials]),
    (waza.GradeOptions, waza.GradeRun.prepare, {"skip_invalid"}, [waza.grade, waza.agrade]),
    (
        waza.SuiteOptions,
        waza.SuiteRun.prepare,
        {"fail_fast", "context_dir", "keep_workspaces", "workspace_root", "triggers", "isolate", "executor"},
        [waza.run_suite, waza.arun_suite],
    ),
    (waza.CalibrateOptions, waza.CalibrationRun.prepare, set(), [waza.calibrate, waza.acalibrate]),
    (waza.BenchmarkOptions, waza.arun_benchmark, set(), [waza.run_benchmark]),
]


def _keywords(fn: Callable[..., Any]) -> set[str]:
    return {p.name for p in inspect.signature(fn).parameters.values() if p.kind is p.KEYWORD_ONLY}


@pytest.mark.parametrize("options, defining, own, forms", ENTRY_POINTS, ids=lambda v: getattr(v, "__name__", ""))
def test_every_form_of_an_entry_point_takes_one_parameter_list(
    options: type, defining: Callable[..., Any], own: set[str], forms: list[Callable[..., Any]]
) -> None:
    keys = set(typing.get_type_hints(options))
    assert keys == _keywords(defining) - own, f"{options.__name__} and {defining.__qualname__} disagree"
    for form in forms:
        (extra,) = [p for p in inspect.signature(form).parameters.values() if p.kind is p.VAR_KEYWORD]
        assert typing.get_args(typing.get_type_hints(form)[extra.name]) == (options,), form.__name__
        assert not _keywords(form), f"{form.__name__} spells options of its own"


def test_an_unknown_option_is_refused() -> None:
    with pytest.raises(TypeError, match="concurency"):
        waza.capture([{"id": "a", "input": "x"}], waza.MockAgent(), concurency=2)  # type: ignore[call-arg]


def test_every_agent_flag_sets_the_spec_field_of_its_name() -> None:
    """The CLI's agent flags are the specs' fields (three places for an option: the field, the adapter, the flag)."""
    fields = {f for spec in waza.AgentSpec.__args__ for f in spec.__struct_fields__} - {"command"}
    flags = set(AgentOptions.__struct_fields__)
    assert fields - {"mcp_servers", "env"} <= flags


def test_an_agent_spec_env_reaches_the_agent_and_leaves_this_process_alone(tmp_path) -> None:
    agent = waza.ExecAgent(command=[sys.executable, "-c", "import os; print(os.environ['WAZA_TEST_GREETING'])"],
                           env={"WAZA_TEST_GREETING": "hello from env"})  # fmt: skip
    (result,) = waza.capture([{"id": "a", "input": "x"}], agent, workspace=waza.Workspace(cwd=tmp_path))
    assert result.status != "error" and "hello from env" in (result.output or "")
    assert "WAZA_TEST_GREETING" not in os.environ
