"""Building a grader's runner from its spec: the one place that knows every kind of runner.

Kept apart from the runner classes so that the worker pool (a runner kind)
and the runners' base class do not import each other. :func:`resolve` checks a
spec and fills in what it left out; the resolved spec is what the runner holds
(``runner.spec``) and what a Ray job carries to a node.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import msgspec
from msgspec.structs import force_setattr

from waza.protocol.errors import ConfigError
from waza.runner.grading.grader_runners import GraderRunner, InProcessRunner, ProcessRunner
from waza.runner.grading.grader_specs import (
    Builtin,
    Executable,
    GraderSpecT,
    Judge,
    PythonGrader,
    Worker,
    check_python_target,
    resolve_argv,
)

__all__ = ["builtin_argv", "import_callable", "make_runner", "resolve"]


def resolve(spec: GraderSpecT, *, timeout: float | None = None) -> Builtin | Executable | Worker | PythonGrader:
    """``spec`` checked (ConfigError when it names nothing runnable) and completed: its name (default: from
    the grader), its program and file arguments absolute, a built-in's canonical name, a ``Judge`` as the
    built-in LLM grader with the judge's keys in its config, and ``timeout`` when it has none."""
    if isinstance(spec, Judge):
        from waza.runner.grading.judge_setup import merged_config

        config = merged_config(spec.config, spec.judge_config())
        builtin = Builtin(
            grader=spec.grader, isolate=spec.isolate, name=spec.name, config=config, weight=spec.weight, timeout=spec.timeout
        )
        return resolve(builtin, timeout=timeout)
    changes: dict[str, Any] = {} if spec.timeout is not None or timeout is None else {"timeout": timeout}
    if isinstance(spec, Builtin):
        from waza.graders import canonical, load

        load(spec.grader)
        name = canonical(spec.grader)
        changes.update(grader=name)
    elif isinstance(spec, (Executable, Worker)):
        argv = resolve_argv([str(a) for a in spec.argv])
        changes.update(argv=tuple(argv))
        name = Path(argv[0]).name
    elif isinstance(spec.fn, str):
        target, name = check_python_target(spec.fn)
        # Absolute: the same file wherever the grader is imported (a Ray node's working directory).
        where = str(Path(target).absolute()) if target.endswith(".py") else target
        changes.update(fn=f"{where}:{name}")
    elif callable(spec.fn):
        name = getattr(spec.fn, "__name__", "grader")
    else:
        raise ConfigError(f"PythonGrader needs a callable or 'file.py:fn', got {spec.fn!r}", field="fn")
    resolved = msgspec.structs.replace(spec, **changes)
    if resolved.name is None:  # the grader's own name (its file's, its function's): any, as a given one is not
        force_setattr(resolved, "name", name)
    return resolved


def import_callable(reference: str) -> Callable[[Any], Any]:
    """The function ``file.py:fn`` or ``package.module:fn`` names, imported; ConfigError when it cannot be."""
    target, _, func = reference.rpartition(":")
    try:
        if target.endswith(".py"):
            path = Path(target).resolve()
            module_name = f"waza_user_grader_{abs(hash(str(path)))}"
            module_spec = importlib.util.spec_from_file_location(module_name, path)
            if module_spec is None or module_spec.loader is None:
                raise ConfigError(f"cannot import grader file {target!r}")
            module: ModuleType = importlib.util.module_from_spec(module_spec)
            sys.modules[module_name] = module
            module_spec.loader.exec_module(module)
        else:
            module = importlib.import_module(target)
    except ConfigError:
        raise
    except KeyboardInterrupt:
        raise
    except BaseException as exc:  # report any import failure (sys.exit() at import too) as a config error
        raise ConfigError(f"cannot import grader {target!r}: {type(exc).__name__}: {exc}") from None
    fn: object = getattr(module, func, None)
    if not callable(fn):
        raise ConfigError(f"{target!r} has no callable {func!r}")
    return fn


def builtin_argv(name: str) -> list[str]:
    return [sys.executable, "-m", f"waza.graders.{name}"]


def make_runner(spec: GraderSpecT) -> GraderRunner:
    r"""Build the runner for a spec (:func:`resolve`\ d first), checking everything that can be checked before a run.

    The worker pool and the built-in graders' config checks are imported by the kinds
    that use them: a run with one executable grader (the common one-prompt check) loads
    neither."""
    spec = resolve(spec)
    if isinstance(spec, Builtin):
        from waza.graders import _config as builtin_config
        from waza.graders import load as load_builtin

        module = load_builtin(spec.grader)
        builtin_config.check(module, spec.grader, dict(spec.config))
        if spec.isolate:  # a process per slot, not per result: the built-ins all speak worker mode
            from waza.runner.grading.worker_pool import WorkerRunner

            return WorkerRunner(spec, [*builtin_argv(spec.grader), "--worker"])
        return InProcessRunner(spec, module.grade, wants_record=True)
    if isinstance(spec, PythonGrader):
        fn = spec.fn if callable(spec.fn) else import_callable(spec.fn)
        return InProcessRunner(spec, fn, wants_record=False)
    if isinstance(spec, Worker):
        from waza.runner.grading.worker_pool import WorkerRunner

        return WorkerRunner(spec, list(spec.argv))
    return ProcessRunner(spec, list(spec.argv))
