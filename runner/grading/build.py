"""Building a grader's runner from its spec: the one place that knows every kind of runner.

Kept apart from the runner classes so that the worker pool (a runner kind)
and the runners' base class do not import each other.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

from waza.protocol.errors import ConfigError
from waza.runner.grading.grader_runners import GraderRunner, InProcessRunner, ProcessRunner
from waza.runner.grading.grader_specs import GraderSpec

__all__ = ["builtin_argv", "import_callable", "make_runner"]


def import_callable(spec: GraderSpec) -> Callable[[Any], Any]:
    assert spec.func is not None
    try:
        if spec.target.endswith(".py"):
            path = Path(spec.target).resolve()
            module_name = f"waza_user_grader_{abs(hash(str(path)))}"
            module_spec = importlib.util.spec_from_file_location(module_name, path)
            if module_spec is None or module_spec.loader is None:
                raise ConfigError(f"cannot import grader file {spec.target!r}")
            module: ModuleType = importlib.util.module_from_spec(module_spec)
            sys.modules[module_name] = module
            module_spec.loader.exec_module(module)
        else:
            module = importlib.import_module(spec.target)
    except ConfigError:
        raise
    except KeyboardInterrupt:
        raise
    except BaseException as exc:  # report any import failure (sys.exit() at import too) as a config error
        raise ConfigError(f"cannot import grader {spec.target!r}: {type(exc).__name__}: {exc}") from None
    fn: object = getattr(module, spec.func, None)
    if not callable(fn):
        raise ConfigError(f"{spec.target!r} has no callable {spec.func!r}")
    return fn


def builtin_argv(name: str) -> list[str]:
    return [sys.executable, "-m", f"waza.graders.{name}"]


def make_runner(spec: GraderSpec, *, isolate: bool = False) -> GraderRunner:
    """Build the runner for a spec, checking everything that can be checked before a run.

    The worker pool and the built-in graders' config checks are imported by the kinds
    that use them: a run with one executable grader (the common one-prompt check) loads
    neither."""
    if spec.kind == "builtin":
        from waza.graders import _config as builtin_config
        from waza.graders import load as load_builtin

        module = load_builtin(spec.target)
        builtin_config.check(module, spec.target, spec.config)
        if isolate:  # a process per slot, not per result: the built-ins all speak worker mode
            from waza.runner.grading.worker_pool import WorkerRunner

            return WorkerRunner(spec, [*builtin_argv(spec.target), "--worker"])
        return InProcessRunner(spec, module.grade, wants_record=True)
    if spec.kind == "python":
        return InProcessRunner(spec, spec.fn or import_callable(spec), wants_record=False)
    if spec.kind == "worker":
        from waza.runner.grading.worker_pool import WorkerRunner

        return WorkerRunner(spec, spec.argv)
    return ProcessRunner(spec, spec.argv)
