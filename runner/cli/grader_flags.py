"""``--grader`` with ``--grader-config`` and ``--grader-weight``: each grader string parsed, then its config
and weight set from ``NAME=VALUE`` (or a bare value when there is exactly one grader)."""

from __future__ import annotations

import msgspec
import orjson

from waza.protocol.errors import ConfigError
from waza.runner.grading.grader_specs import Builtin, Executable, PythonGrader, Worker, parse_grader

Parsed = Builtin | Executable | Worker | PythonGrader


def _keyed(values: list[str], specs: list[Parsed], option: str) -> list[tuple[int, str]]:
    """(the index of the grader each value is for, the value)."""
    by_name = {s.name: i for i, s in enumerate(specs)}
    out = []
    for value in values:
        head, sep, rest = value.partition("=")
        if sep and head in by_name:
            out.append((by_name[head], rest))
        elif len(specs) == 1:
            out.append((0, value))
        else:
            names = ", ".join(str(n) for n in by_name) or "none"
            raise ConfigError(f"{option} {value!r} must be NAME=VALUE naming a grader (graders: {names})")
    return out


def build_specs(graders: list[str], configs: list[str] | None = None, weights: list[str] | None = None) -> list[Parsed]:
    specs = [parse_grader(g) for g in graders]
    seen: set[str | None] = set()
    for s in specs:
        if s.name in seen:
            raise ConfigError(f"two graders are named {s.name!r}; name them with NAME=SPEC", field="--grader")
        seen.add(s.name)
    for i, raw in _keyed(configs or [], specs, "--grader-config"):
        try:
            value = orjson.loads(raw)
        except orjson.JSONDecodeError as exc:
            raise ConfigError(f"--grader-config for {specs[i].name!r} is not valid JSON: {exc}") from None
        if not isinstance(value, dict):
            raise ConfigError(f"--grader-config for {specs[i].name!r} must be a JSON object")
        specs[i] = msgspec.structs.replace(specs[i], config=value)
    for i, raw in _keyed(weights or [], specs, "--grader-weight"):
        try:
            weight = float(raw)
        except ValueError:
            raise ConfigError(f"--grader-weight for {specs[i].name!r} must be a number, got {raw!r}") from None
        if weight < 0:
            raise ConfigError(f"--grader-weight for {specs[i].name!r} must not be negative")
        specs[i] = msgspec.structs.replace(specs[i], weight=weight)
    return specs


__all__ = ["build_specs"]
