"""Checking a built-in grader's config: its JSON Schema, then the grader's own checks."""

from __future__ import annotations

from types import ModuleType
from typing import Any

from waza.protocol.errors import ConfigError
from waza.protocol.schema_errors import first_problem


def schema_name(grader: str) -> str:
    return f"grader-{grader}"


def check(module: ModuleType, name: str, config: Any) -> None:
    """Raise ConfigError naming the first bad key; an unknown key is an error, never ignored."""
    if not isinstance(config, dict):
        raise ConfigError(f"config of grader {name!r} must be an object")
    problem = first_problem(schema_name(name), config)
    if problem is not None:
        raise ConfigError(f"grader {name!r} config: {problem}")
    extra = getattr(module, "check_config", None)
    if extra is not None:
        extra(config)
