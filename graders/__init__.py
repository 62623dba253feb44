"""Built-in graders: plain functions in a registry, each also a standalone executable.

Every module named in ``CATALOGUE`` provides ``SUMMARY`` (one line),
``grade(request: GraderRequest) -> GraderResult`` and ``main()``; it may provide
``check_config(config)`` for checks a JSON Schema cannot express (a regex that
does not compile). Its config schema is ``schemas/grader-NAME.json``. The runner
calls ``grade`` in-process; ``python -m waza.graders.NAME`` and
``waza-grader NAME`` run the very same function over the stdin/stdout protocol.
"""

from __future__ import annotations

import importlib
from types import ModuleType

from waza.protocol.errors import ConfigError

#: name -> module; names are what --grader builtin:NAME and eval.yaml `type:` use.
CATALOGUE: dict[str, str] = {
    "hint": "waza.graders.hint",
    "code": "waza.graders.code",
    "regex": "waza.graders.regex",
    "text": "waza.graders.text",
    "json_schema": "waza.graders.json_schema",
    "file": "waza.graders.file",
    "diff": "waza.graders.diff",
    "tool_calls": "waza.graders.tool_calls",
    "trigger": "waza.graders.trigger",
    "behavior": "waza.graders.behavior",
    "action_sequence": "waza.graders.action_sequence",
    "skill_invocation": "waza.graders.skill_invocation",
    "tool_constraint": "waza.graders.tool_constraint",
    "script": "waza.graders.script",
    "program": "waza.graders.program",
    "git": "waza.graders.git",
    "llm": "waza.graders.llm",
    "llm_comparison": "waza.graders.llm_comparison",
    "prompt": "waza.graders.prompt",
    "human": "waza.graders.human",
    "human_calibration": "waza.graders.human_calibration",
}

#: Other spellings accepted for a name (from the reference systems).
ALIASES: dict[str, str] = {
    "inline_script": "code",  # the waza reference's other name for the assertion grader
}


def canonical(name: str) -> str:
    return ALIASES.get(name, name)


def load(name: str) -> ModuleType:
    key = canonical(name)
    if key not in CATALOGUE:
        known = ", ".join(sorted(CATALOGUE))
        raise ConfigError(f"unknown built-in grader {name!r} (known: {known})")
    return importlib.import_module(CATALOGUE[key])
