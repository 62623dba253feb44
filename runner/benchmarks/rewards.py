"""Reading a verifier's verdict: Harbor's reward files, or Terminal-Bench 1.x's pytest summary.

Harbor's verifier writes ``/logs/verifier/reward.json`` (named numbers) or
``/logs/verifier/reward.txt`` (one number). When both exist ``reward.json``
wins, as in Harbor; when ``reward.txt`` then says something else than
``reward.json``'s score, the result carries a warning. The score is
``reward.json``'s ``reward`` key when it has one, else its only value, else the
mean of its values; every key is a sub-score. A missing, empty, oversized or
unparsable file, or a value that is not a finite number, raises
:class:`RewardError`: the trial is an error, never a 0.
"""

from __future__ import annotations

import math
import os
import re
from pathlib import Path

import msgspec
import orjson

from waza.protocol.io.confined import open_regular

__all__ = ["REWARD_JSON", "REWARD_TXT", "Reward", "RewardError", "pytest_reward", "read_reward"]

REWARD_JSON = "reward.json"
REWARD_TXT = "reward.txt"
#: The largest reward file read.
REWARD_LIMIT = 64 * 1024


class RewardError(Exception):
    """The verifier left no reward waza can read; the message says which file and why."""


class Reward(msgspec.Struct, frozen=True):
    score: float
    subscores: dict[str, float]
    source: str
    warnings: tuple[str, ...] = ()


def _read(folder: Path, name: str) -> str | None:
    try:
        fd = open_regular(folder, [name])
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise RewardError(f"{name} cannot be read: {exc.strerror or exc}") from None
    with os.fdopen(fd, "rb") as f:
        data = f.read(REWARD_LIMIT + 1)
    if len(data) > REWARD_LIMIT:
        raise RewardError(f"{name} is larger than {REWARD_LIMIT} bytes")
    if not data.strip():
        raise RewardError(f"{name} is empty")
    return data.decode("utf-8", "replace")


def _finite(value: object, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise RewardError(f"{where} is not a finite number: {value!r}")
    return float(value)


def read_reward(folder: Path) -> Reward:
    """The reward the verifier left in ``folder`` (the host's view of /logs/verifier)."""
    text = _read(folder, REWARD_TXT)
    raw = _read(folder, REWARD_JSON)
    if raw is None:
        if text is None:
            raise RewardError(f"the verifier wrote neither /logs/verifier/{REWARD_TXT} nor {REWARD_JSON}")
        try:
            value = float(text.strip())
        except ValueError:
            raise RewardError(f"{REWARD_TXT} is not a number: {text.strip()[:80]!r}") from None
        score = _finite(value, REWARD_TXT)
        return Reward(score=score, subscores={"reward": score}, source=REWARD_TXT)
    try:
        doc = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise RewardError(f"{REWARD_JSON} is not JSON: {exc}") from None
    if not isinstance(doc, dict):
        doc = {"reward": doc}
    if not doc:
        raise RewardError(f"{REWARD_JSON} holds no reward")
    subscores = {str(k): _finite(v, f"{REWARD_JSON} key {k!r}") for k, v in doc.items()}
    score = subscores["reward"] if "reward" in subscores else sum(subscores.values()) / len(subscores)
    warnings: list[str] = []
    if text is not None:
        try:
            other = float(text.strip())
        except ValueError:
            other = math.nan
        if other != score:
            warnings.append(f"{REWARD_TXT} says {text.strip()[:40]!r} but {REWARD_JSON} (which wins) gives {score:g}")
    return Reward(score=score, subscores=subscores, source=REWARD_JSON, warnings=tuple(warnings))


_SUMMARY = re.compile(r"^=+ (?P<body>.*?) in [\d.]+s(?: \([^)]*\))? =+\s*$", re.MULTILINE)
_COUNT = re.compile(r"(\d+) (passed|failed|errors?|skipped|xfailed|xpassed|deselected|warnings?)")
_TEST = re.compile(r"^(PASSED|FAILED|ERROR) (\S+)", re.MULTILINE)


def pytest_reward(output: str) -> Reward:
    """Terminal-Bench 1.x's verdict from pytest's output: 1 when its last summary line counts passed tests and
    no failed or errored one, else 0 (no summary at all is a failure, as Terminal-Bench scores it).
    Each test pytest reports by name (``-rA``) is a sub-score."""
    summaries = list(_SUMMARY.finditer(output))
    subscores = {name: 1.0 if verdict == "PASSED" else 0.0 for verdict, name in _TEST.findall(output)}
    if not summaries:
        return Reward(score=0.0, subscores=subscores, source="pytest", warnings=("pytest printed no summary line",))
    counts = {kind.rstrip("s") if kind.startswith("error") else kind: int(n) for n, kind in _COUNT.findall(summaries[-1]["body"])}
    passed = counts.get("passed", 0) > 0 and not counts.get("failed") and not counts.get("error")
    return Reward(score=1.0 if passed else 0.0, subscores=subscores, source="pytest")
