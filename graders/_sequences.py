"""Matching an actual sequence of names against an expected one (action_sequence, skill_invocation).

True positives are the multiset intersection: each expected name counts as
many times as it occurs in both (expected ``[bash, bash]`` against actual
``[bash]`` is one true positive). Then precision = TP / len(actual),
recall = TP / len(expected), F1 = their harmonic mean (0 when both are 0).
The verdict depends on the mode alone; the score is F1.
"""

from __future__ import annotations

from collections import Counter
from typing import Any, Literal

import msgspec

from waza.protocol.errors import ConfigError

Mode = Literal["exact", "in_order", "any_order"]

#: The original's mode names, per grader (its action_sequence and skill_invocation
#: spell in-order and any-order differently); each maps to the mode it means.
ACTION_MODES: dict[str, Mode] = {"exact_match": "exact", "in_order_match": "in_order", "any_order_match": "any_order"}
SKILL_MODES: dict[str, Mode] = {"exact_match": "exact", "in_order": "in_order", "any_order": "any_order"}


class Match(msgspec.Struct):
    """How an actual sequence compares with the expected one: the verdict and the counts behind the score."""

    matched: bool
    true_positives: int
    precision: float
    recall: float
    f1: float
    extra: int
    missing: list[str]


def is_subsequence(expected: list[str], actual: list[str]) -> bool:
    rest = iter(actual)
    return all(any(a == e for a in rest) for e in expected)


def match(expected: list[str], actual: list[str], mode: Mode) -> Match:
    want, got = Counter(expected), Counter(actual)
    tp = sum((want & got).values())
    precision = tp / len(actual) if actual else 0.0
    recall = tp / len(expected) if expected else 1.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    if mode == "exact":
        matched = actual == expected
    elif mode == "in_order":
        matched = is_subsequence(expected, actual)
    else:
        matched = not (want - got)
    missing = list((want - got).elements())
    return Match(matched, tp, precision, recall, f1, len(actual) - tp, missing)


def mode_of(config: dict[str, Any], key: str, names: dict[str, Mode]) -> Mode:
    """The mode named by ``config[key]``; required, as in the original, so a suite never gets a guessed mode."""
    name = config.get(key)
    if name not in names:
        raise ConfigError(f"{key} must be one of {', '.join(names)} (got {name!r})")
    return names[name]


def metrics(m: Match) -> dict[str, float | int]:
    return {
        "precision": round(m.precision, 6),
        "recall": round(m.recall, 6),
        "f1": round(m.f1, 6),
        "true_positives": m.true_positives,
    }
