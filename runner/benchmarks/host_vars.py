"""``${VAR}`` and ``${VAR:-default}`` in a task's env tables, resolved from waza's own environment.

Harbor's tasks name what they need from the machine that runs them this way:
a judge-based verifier has ``OPENAI_API_KEY = "${OPENAI_API_KEY}"`` in
``[verifier.env]``. A value that is a whole template takes the variable's value
when the trial starts (the default when it is unset, ``:-`` given); a value
that is not a whole template is taken literally, as Harbor does (``"a${B}"``
stays as written). A variable that is unset and has no default makes the trial
``environment-unsatisfied``, naming it: the task cannot run as meant, and
running it with the template's text as the value would grade with a broken
verifier.

Where each value goes is the table's: ``[verifier.env]`` reaches the verifier
only, ``[solution.env]`` the oracle only, ``[environment.env]`` every command,
the agent's too (so a template there hands the host's variable to the agent:
put a judge's key in ``[verifier.env]``). Results record the names resolved,
never the values.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

import msgspec

from waza.runner.benchmarks.tasks import BenchTask

__all__ = ["Template", "resolve_task", "task_templates", "templates"]

#: A whole value ``${NAME}`` or ``${NAME:-default}`` (Harbor's pattern: a name is anything but ``}`` and ``:``).
_TEMPLATE = re.compile(r"\$\{([^}:]+)(?::-(.*))?\}")


class Template(msgspec.Struct, frozen=True):
    """One templated value: the table (``verifier.env``, ...) and key it sits at, the variable, its default."""

    table: str
    key: str
    variable: str
    default: str | None


def templates(env: Mapping[str, str], table: str) -> list[Template]:
    """The templated values of one env table, in its order (literal values are not templates)."""
    out: list[Template] = []
    for key, value in env.items():
        match = _TEMPLATE.fullmatch(value)
        if match:
            out.append(Template(table, key, match[1], match[2]))
    return out


def _resolve(
    env: Mapping[str, str], table: str, environ: Mapping[str, str], used: dict[str, None], missing: list[str]
) -> dict[str, str]:
    out = dict(env)
    for one in templates(env, table):
        if one.variable in environ:
            out[one.key] = environ[one.variable]
            used[one.variable] = None
        elif one.default is not None:
            out[one.key] = one.default
        else:
            missing.append(f"the variable {one.variable} in waza's environment ([{one.table}].{one.key} = ${{{one.variable}}})")
    return out


def _verifier_table(step: str | None) -> str:
    return "verifier.env" if step is None else f"verifier.env of step {step}"


def resolve_task(task: BenchTask, environ: Mapping[str, str]) -> tuple[BenchTask, list[str], list[str]]:
    """``task`` with every template of its env tables resolved from ``environ``; the variables taken from
    it (names only), and each one missing (unset, no default) described for an unsatisfied trial."""
    used: dict[str, None] = {}
    missing: list[str] = []
    environment = _resolve(task.environment_env, "environment.env", environ, used, missing)
    solution = _resolve(task.solution_env, "solution.env", environ, used, missing)
    steps = tuple(
        msgspec.structs.replace(
            step,
            verifier_env=_resolve(step.verifier_env, _verifier_table(step.name), environ, used, missing),
            verifier_environment=None
            if step.verifier_environment is None
            else msgspec.structs.replace(
                step.verifier_environment,
                env=_resolve(step.verifier_environment.env, "verifier.environment.env", environ, used, missing),
            ),
        )
        for step in task.steps
    )
    resolved = msgspec.structs.replace(task, environment_env=environment, solution_env=solution, steps=steps)
    return resolved, list(used), list(dict.fromkeys(missing))


def task_templates(task: BenchTask) -> list[Template]:
    """Every templated value of a task's env tables (``waza check`` lists them)."""
    found = templates(task.environment_env, "environment.env") + templates(task.solution_env, "solution.env")
    for step in task.steps:
        found += templates(step.verifier_env, _verifier_table(step.name))
        if step.verifier_environment is not None:
            found += templates(step.verifier_environment.env, "verifier.environment.env")
    return list(dict.fromkeys(found))
