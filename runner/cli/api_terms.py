"""The engine's words in the command line's: the one place the CLI turns API names into its options.

The engine, the adapters and the graders name what is wrong in the Python API's terms (a spec's
field such as ``Timeouts.prompt``, a parameter such as ``graders=``), which is what a Python caller
wrote. A ``waza`` command's user wrote options instead, so every error the CLI prints passes through
:func:`in_cli_terms` (from ``runtime.fail``), and this table says which option sets what.
"""

from __future__ import annotations

import re

import msgspec

from waza.adapters.specs import AGENTS
from waza.protocol.errors import ConfigError
from waza.runner.cli.options import agent_flags

_AGENT_COMMAND = "the agent command (after the prompts, or after --)"
_GRADER_NAME = "the grader's NAME (--grader NAME=SPEC)"

#: API name -> the option (or words) a command-line user knows it by.
FLAGS: dict[str, str] = {
    # run settings
    "Timeouts.prompt_unit": "--prompt-timeout-unit",
    "Timeouts.prompt": "--timeout",
    "Timeouts.grader": "--grader-timeout",
    "Output.path": "-o",
    "Output.resume": "--resume",
    "Output.retry_errors": "--retry-errors",
    "Workspace.template": "--cwd",
    "Workspace.cwd": "--cwd",
    "Workspace.root": "--workspace-dir",
    "TableOptions.columns": "--map",
    "TableOptions.format": "--prompts-format",
    "Limits.line_mb": "--max-line-mb",
    "Limits.steps": "--max-steps",
    "Limits.trajectory_mb": "--max-trajectory-mb",
    "Sandbox.read_only": "--sandbox-ro",
    "Sandbox.read_write": "--sandbox-rw",
    "Sandbox.network": "--sandbox-net",
    "Sandbox.ports": "--sandbox-port",
    "Sandbox.keep_env": "--sandbox-env",
    "Sandbox.limits.memory_mb": "--sandbox-memory",
    "Sandbox.limits.pids": "--sandbox-pids",
    "Sandbox.limits.cpu_seconds": "--sandbox-cpu-time",
    "Sandbox.limits.disk_mb": "--sandbox-disk",
    "Sandbox": "--sandbox bwrap",
    # agents: a spec is an adapter, its fields are that adapter's options
    **{f"{spec.__name__}.command": _AGENT_COMMAND for spec in AGENTS.values()},
    **{spec.__name__: f"--adapter {name}" for name, spec in AGENTS.items()},
    # each agent spec field -> the flag that sets it, read from the CLI's declarations (``AgentOptions``)
    **{f"{spec.__name__}.{f.name}": agent_flags()[f.name]
       for spec in AGENTS.values() for f in msgspec.structs.fields(spec) if f.name in agent_flags()},
    # an LLM grader's judge (``Judge(...)``; on the command line, the --judge options)
    "Judge.local": "--judge local",
    "Judge.base_url": "--judge-base-url",
    "Judge.model_path": "--judge-model-path",
    "Judge.model": "--judge-model",
    "Judge.api_key_env": "--judge-api-key-env",
    "Judge.command": "--judge-command",
    "Judge.cache": "--no-cache",
    # graders
    **{f"{spec}.name": _GRADER_NAME for spec in ("GraderBase", "Builtin", "Executable", "Worker", "PythonGrader", "Judge")},
    **{f"{spec}.weight": "--grader-weight" for spec in ("GraderBase", "Builtin", "Executable", "Worker", "PythonGrader", "Judge")},
    # the Ray executor (``executor=RayOptions(...)``)
    "RayOptions (the Ray executor)": "--executor ray",
    "RayOptions.address": "--ray-address",
    "RayOptions.cpus": "-j",
    "RayOptions.task_cpus": "--ray-num-cpus",
    "RayOptions.resources": "--ray-resources",
    "RayOptions.in_flight": "--ray-in-flight",
    "RayOptions.max_retries": "--ray-max-retries",
    "RayOptions.node_error_limit": "--ray-node-error-limit",
    "RayOptions.env": "--ray-env",
    "RayOptions.capacity_timeout": "--ray-capacity-timeout",
    "RayOptions.warm_agents": "--ray-warm-agents",
    # parameters of the runs, written ``name=`` in messages
    "graders=": "--grader",
    "labels=": "--labels",
    "sample=": "--sample",
    "k=": "-k",
    "k_values=": "--k-values",
    "errors=": "--errors",
    "summary=": "--summary",
    "tasks=": "--task",
    "tags=": "--tags",
}  # fmt: skip

# Longest first, so ``Timeouts.prompt_unit`` wins over ``Timeouts.prompt``; a name is never part of a longer one.
_NAMES = re.compile(
    r"(?<![\w.])(?:"
    + "|".join(re.escape(name) + ("" if name.endswith("=") else r"(?![\w])") for name in sorted(FLAGS, key=len, reverse=True))
    + ")"
)


def cli_message(error: BaseException | str) -> str:
    """An error as the command line says it: the ``field`` it carries looked up in :data:`FLAGS` (``graders=``
    is ``--grader``), then the message's own API names replaced (:func:`in_cli_terms`)."""
    if not isinstance(error, ConfigError) or not error.field or type(error).__str__ is not ConfigError.__str__:
        return in_cli_terms(str(error))
    where = ""
    if error.source:
        where = f"{error.source}:{error.line}: " if error.line else f"{error.source}: "
    field = FLAGS.get(error.field) or in_cli_terms(error.field)
    return f"{where}field {field!r}: {in_cli_terms(error.message)}"


def in_cli_terms(text: str) -> str:
    """``text`` with each API name replaced by its option (``errors=fail`` becomes ``--errors fail``)."""

    def option(match: re.Match[str]) -> str:
        name = match.group(0)
        flag = FLAGS[name]
        rest = text[match.end() : match.end() + 1]
        return flag + " " if name.endswith("=") and (rest.isalnum() or rest in "'\"-_./") else flag

    return _NAMES.sub(option, text)


__all__ = ["FLAGS", "cli_message", "in_cli_terms"]
