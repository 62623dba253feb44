"""waza: evaluate AI agents, from the command line or from Python.

``import waza`` is the Python API (README, "Using waza from Python"): typed
specs of agents and graders, and the engine's runs (``capture``, ``trials``,
``grade``, ``run_one``, ``run_suite``, ``run_benchmark``, ``calibrate``,
``compare``), each with an async form. The names are loaded on first use, so ``import waza`` (and every
``waza`` command, which imports this package) stays cheap.

The distribution installs several packages under this one namespace
(``waza.runner``, ``waza.protocol``, ``waza.adapters``, ``waza.graders``,
``waza.schemas``) so that nothing generic lands in site-packages.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

#: public name -> module that defines it.
_EXPORTS: dict[str, str] = {
    **dict.fromkeys(
        ["acapture", "arun_one", "capture", "run_one", "CaptureOptions", "CaptureRun", "RunOneOptions"], "waza.runner.engine.capture",
    ),
    **dict.fromkeys(["agrade", "grade", "GradeOptions", "GradeRun"], "waza.runner.engine.grade"),
    **dict.fromkeys(["atrials", "trials", "summarize_trials", "TrialsOptions", "TrialsRun"], "waza.runner.engine.trials"),
    **dict.fromkeys(["arun_suite", "run_suite", "SuiteOptions", "SuiteRun"], "waza.runner.suites.run"),
    **dict.fromkeys(["arun_benchmark", "run_benchmark", "BenchmarkOptions"], "waza.runner.benchmarks.api"),
    "BenchmarkResult": "waza.protocol.benchmark_records",
    **dict.fromkeys(["acalibrate", "calibrate", "compare", "CalibrateOptions", "CalibrationRun"], "waza.runner.engine.calibration"),
    **dict.fromkeys(
        ["AcpAgent", "AgentSpec", "Builtin", "ExecAgent", "Executable", "GraderBase", "GraderSpecT", "Graders", "HeadlessAgent", "HttpAgent",
         "Judge", "Limits", "MockAgent", "Output", "PythonGrader", "ReplayAgent", "Timeouts", "Worker", "Workspace"], "waza.runner.engine.specs",
    ),
    **dict.fromkeys(["pass_at_k", "pass_hat_k"], "waza.runner.analysis.passk"),
    **dict.fromkeys(["CaptureResult", "PromptCase", "Grade", "GraderRequest"], "waza.protocol.records"),
    **dict.fromkeys(["TrialResult", "TrialsSummary", "CalibrationReport"], "waza.protocol.trial_records"),
    **dict.fromkeys(["AgentError", "ConfigError", "GraderError", "UsageError", "WazaError"], "waza.protocol.errors"),
    "Sandbox": "waza.adapters.sandbox.bwrap",
    "SandboxLimits": "waza.adapters.sandbox.limits",
}  # fmt: skip

# A literal list, so type checkers (mypy --strict) see every ``waza.X`` as exported; tests/test_api_edges.py
# checks it names exactly the lazily loaded names above.
__all__ = [
    "AcpAgent",
    "AgentError",
    "AgentSpec",
    "BenchmarkOptions",
    "BenchmarkResult",
    "Builtin",
    "CalibrateOptions",
    "CalibrationReport",
    "CalibrationRun",
    "CaptureOptions",
    "CaptureResult",
    "CaptureRun",
    "ConfigError",
    "ExecAgent",
    "Executable",
    "Grade",
    "GradeOptions",
    "GradeRun",
    "GraderBase",
    "GraderError",
    "GraderRequest",
    "GraderSpecT",
    "Graders",
    "HeadlessAgent",
    "HttpAgent",
    "Judge",
    "Limits",
    "MockAgent",
    "Output",
    "PromptCase",
    "PythonGrader",
    "ReplayAgent",
    "RunOneOptions",
    "Sandbox",
    "SandboxLimits",
    "SuiteOptions",
    "SuiteRun",
    "Timeouts",
    "TrialResult",
    "TrialsOptions",
    "TrialsRun",
    "TrialsSummary",
    "UsageError",
    "WazaError",
    "Worker",
    "Workspace",
    "__version__",
    "acalibrate",
    "acapture",
    "agrade",
    "arun_benchmark",
    "arun_one",
    "arun_suite",
    "atrials",
    "calibrate",
    "capture",
    "compare",
    "grade",
    "pass_at_k",
    "pass_hat_k",
    "run_benchmark",
    "run_one",
    "run_suite",
    "summarize_trials",
    "trials",
]

if TYPE_CHECKING:
    from waza.adapters.sandbox.bwrap import Sandbox
    from waza.adapters.sandbox.limits import SandboxLimits
    from waza.protocol.benchmark_records import BenchmarkResult
    from waza.protocol.errors import (
        AgentError,
        ConfigError,
        GraderError,
        UsageError,
        WazaError,
    )
    from waza.protocol.records import CaptureResult, Grade, GraderRequest, PromptCase
    from waza.protocol.trial_records import (
        CalibrationReport,
        TrialResult,
        TrialsSummary,
    )
    from waza.runner.analysis.passk import pass_at_k, pass_hat_k
    from waza.runner.benchmarks.api import BenchmarkOptions, arun_benchmark, run_benchmark
    from waza.runner.engine.calibration import CalibrateOptions, CalibrationRun, acalibrate, calibrate, compare
    from waza.runner.engine.capture import CaptureOptions, CaptureRun, RunOneOptions, acapture, arun_one, capture, run_one
    from waza.runner.engine.grade import GradeOptions, GradeRun, agrade, grade
    from waza.runner.engine.specs import (
        AcpAgent,
        AgentSpec,
        Builtin,
        ExecAgent,
        Executable,
        GraderBase,
        Graders,
        GraderSpecT,
        HeadlessAgent,
        HttpAgent,
        Judge,
        Limits,
        MockAgent,
        Output,
        PythonGrader,
        ReplayAgent,
        Timeouts,
        Worker,
        Workspace,
    )
    from waza.runner.engine.trials import TrialsOptions, TrialsRun, atrials, summarize_trials, trials
    from waza.runner.suites.run import SuiteOptions, SuiteRun, arun_suite, run_suite


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'waza' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))
