"""Checking a built-in grader's config: its JSON Schema, then the grader's own checks."""

from __future__ import annotations

from types import ModuleType
from typing import Any

from waza.protocol import schemas
from waza.protocol.errors import ConfigError


def schema_name(grader: str) -> str:
    return f"grader-{grader}"


def check(module: ModuleType, name: str, config: Any) -> None:
    """Raise ConfigError naming the first bad key; an unknown key is an error, never ignored."""
    if not isinstance(config, dict):
        raise ConfigError(f"config of grader {name!r} must be an object")
    problems = schemas.errors(schema_name(name), config)
    if problems:
        raise ConfigError(f"grader {name!r} config: {problems[0]}")
    extra = getattr(module, "check_config", None)
    if extra is not None:
        extra(config)
