"""Rubrics for the LLM graders: inline text, a text file, or a structured rubric YAML file.

``rubric`` is a file when it is one line ending in ``.md``, ``.txt``, ``.yaml``
or ``.yml`` (relative paths are relative to the current directory); anything
else is the rubric itself. A file that does not exist is a config error.

A YAML rubric (the format of the Azure-ML-derived rubric files the waza
reference ships) carries its own rating scale: ``rating_levels`` (a list of
``{value, label, description, normalized_score}`` or a mapping from value to
``{label, description}``) and ``score_normalization`` (``mapping`` /
``normalized_map`` from value to score, or ``raw_min``/``raw_max`` for a linear
scale). waza shows the judge the description, criteria, levels and steps, and
asks for ``{"reasoning": ..., "rating": <one level value>}``; the level's
normalised score is the grade's score. The file's own ``output_format`` is not
used: one reply shape for every rubric is what makes the reply checkable.

A one-word (or hyphenated) ``rubric`` is the name of a built-in rubric
(``groundedness``, ``helpfulness``, ``instruction-following``,
``refusal-correctness``, ``tool-use-appropriateness``: :mod:`._rubric_presets`);
any other such word is a config error.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import msgspec
import yaml

from waza.protocol.errors import ConfigError

from ._rubric_presets import PRESETS, looks_like_name

FILE_SUFFIXES = (".md", ".txt", ".yaml", ".yml")


class Level(msgspec.Struct, frozen=True):
    """One rating the judge may give, and the score in [0, 1] it stands for."""

    value: int | str
    label: str
    description: str
    score: float


class Rubric(msgspec.Struct, frozen=True):
    """What the judge is told to look for; ``levels`` when the rubric defines its own scale."""

    text: str
    source: str | None = None
    levels: tuple[Level, ...] = ()

    def rating_schema(self) -> dict[str, Any]:
        values = [level.value for level in self.levels]
        if all(isinstance(v, int) for v in values):
            return {"type": "integer", "enum": values}
        return {"type": "string", "enum": [str(v) for v in values]}

    def score_of(self, rating: Any) -> float:
        for level in self.levels:
            if str(level.value) == str(rating).lower():
                return level.score
        raise ValueError(f"rating {rating!r} is not one of the rubric's levels")


def is_file_reference(value: str) -> bool:
    return "\n" not in value and value.strip().lower().endswith(FILE_SUFFIXES)


def load(value: str) -> Rubric:
    """The rubric a config's ``rubric`` names (ConfigError for a missing or malformed file)."""
    if not is_file_reference(value):
        if looks_like_name(value):
            if value.strip() not in PRESETS:
                raise ConfigError(
                    f"unknown rubric {value.strip()!r}: the built-in rubrics are {', '.join(PRESETS)} "
                    "(or give the rubric's text, or a .md/.txt/.yaml file)",
                    field="rubric",
                )
            return Rubric(text=PRESETS[value.strip()], source=f"built-in rubric {value.strip()}")
        return Rubric(text=value.strip())
    path = Path(value.strip())
    try:
        raw = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"rubric file {value!r} cannot be read: {exc.strerror or exc}", field="rubric") from None
    if path.suffix.lower() not in (".yaml", ".yml"):
        return Rubric(text=raw.strip(), source=str(path))
    try:
        data = yaml.safe_load(raw)
    except yaml.YAMLError as exc:
        raise ConfigError(f"rubric file {value!r} is not valid YAML: {exc}", field="rubric") from None
    if not isinstance(data, dict):
        raise ConfigError(f"rubric file {value!r} must be a mapping", field="rubric")
    return _structured(data, str(path))


def _structured(data: dict[str, Any], source: str) -> Rubric:
    criteria = data.get("evaluation_criteria")
    if not isinstance(criteria, str) or not criteria.strip():
        raise ConfigError(f"rubric file {source!r} has no evaluation_criteria text", field="rubric")
    levels = _levels(data, source)
    parts = [str(data.get("description") or "").strip(), criteria.strip(), _levels_text(levels)]
    steps = data.get("chain_of_thought")
    if isinstance(steps, str) and steps.strip():
        parts.append(steps.strip())
    return Rubric(text="\n\n".join(p for p in parts if p), source=source, levels=tuple(levels))


def _raw_levels(data: dict[str, Any], source: str) -> list[tuple[Any, dict[str, Any]]]:
    raw = data.get("rating_levels")
    if isinstance(raw, dict):
        return [(value, spec if isinstance(spec, dict) else {}) for value, spec in raw.items()]
    if isinstance(raw, list) and all(isinstance(x, dict) and "value" in x for x in raw):
        return [(x["value"], x) for x in raw]
    raise ConfigError(f"rubric file {source!r} needs rating_levels (a list with values, or a mapping)", field="rubric")


def _levels(data: dict[str, Any], source: str) -> list[Level]:
    norm = data.get("score_normalization") or {}
    table = norm.get("mapping") or norm.get("normalized_map") or {}
    table = {str(k).lower(): v for k, v in table.items()}
    low, high = norm.get("raw_min"), norm.get("raw_max")
    levels = []
    for value, spec in _raw_levels(data, source):
        if isinstance(value, bool):
            value = str(value).lower()
        score = spec.get("normalized_score", table.get(str(value).lower()))
        if (
            score is None
            and isinstance(value, int)
            and isinstance(low, (int, float))
            and isinstance(high, (int, float))
            and high > low
        ):
            score = (value - low) / (high - low)
        if not isinstance(score, (int, float)) or not 0 <= score <= 1:
            raise ConfigError(f"rubric file {source!r}: rating {value!r} has no score in [0, 1]", field="rubric")
        label = str(spec.get("label") or value)
        description = " ".join(str(spec.get("description") or "").split())
        levels.append(Level(value=value, label=label, description=description, score=float(score)))
    return sorted(levels, key=lambda level: level.score)


def _levels_text(levels: list[Level]) -> str:
    lines = ["Rating levels (answer with one value):"]
    lines += [f"- {level.value} ({level.label}): {level.description}".rstrip(": ") for level in levels]
    return "\n".join(lines)
