"""``--grader`` with ``--grader-config`` and ``--grader-weight``: each grader string parsed, then its config
and weight set from ``NAME=VALUE`` (or a bare value when there is exactly one grader)."""

from __future__ import annotations

import orjson

from waza.protocol.errors import ConfigError
from waza.runner.grading.grader_specs import GraderSpec, parse_grader


def _keyed(values: list[str], specs: list[GraderSpec], option: str) -> list[tuple[GraderSpec, str]]:
    by_name = {s.name: s for s in specs}
    out = []
    for value in values:
        head, sep, rest = value.partition("=")
        if sep and head in by_name:
            out.append((by_name[head], rest))
        elif len(specs) == 1:
            out.append((specs[0], value))
        else:
            names = ", ".join(by_name) or "none"
            raise ConfigError(f"{option} {value!r} must be NAME=VALUE naming a grader (graders: {names})")
    return out


def build_specs(
    graders: list[str],
    configs: list[str] | None = None,
    weights: list[str] | None = None,
    timeout: float | None = None,
) -> list[GraderSpec]:
    specs = [parse_grader(g) for g in graders]
    seen: set[str] = set()
    for s in specs:
        if s.name in seen:
            raise ConfigError(f"two graders are named {s.name!r}; name them with NAME=SPEC", field="--grader")
        seen.add(s.name)
        s.timeout = timeout
    for spec, raw in _keyed(configs or [], specs, "--grader-config"):
        try:
            value = orjson.loads(raw)
        except orjson.JSONDecodeError as exc:
            raise ConfigError(f"--grader-config for {spec.name!r} is not valid JSON: {exc}") from None
        if not isinstance(value, dict):
            raise ConfigError(f"--grader-config for {spec.name!r} must be a JSON object")
        spec.config = value
    for spec, raw in _keyed(weights or [], specs, "--grader-weight"):
        try:
            spec.weight = float(raw)
        except ValueError:
            raise ConfigError(f"--grader-weight for {spec.name!r} must be a number, got {raw!r}") from None
        if spec.weight < 0:
            raise ConfigError(f"--grader-weight for {spec.name!r} must not be negative")
    return specs


__all__ = ["build_specs"]
