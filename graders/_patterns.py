"""Regular expressions from configs.

Where a pattern only checks output (text, regex, file), an invalid one is a
*failed check* naming the pattern, as in the original waza, so a suite moved
over gets the same verdict (``lenient``); where a pattern selects what is
checked (tool_calls, tool_constraint), a bad one is a ConfigError naming its key.
"""

from __future__ import annotations

import functools
import re
from typing import Any

from waza.protocol.errors import ConfigError

#: Letters accepted in a ``flags`` string, as in Python's inline flags.
FLAG_LETTERS = {"i": re.IGNORECASE, "m": re.MULTILINE, "s": re.DOTALL, "x": re.VERBOSE, "a": re.ASCII}


def parse_flags(text: str, where: str) -> re.RegexFlag:
    flags = re.RegexFlag(0)
    for letter in text:
        if letter not in FLAG_LETTERS:
            raise ConfigError(f"{where}: unknown regex flag {letter!r} (use any of {''.join(FLAG_LETTERS)})")
        flags |= FLAG_LETTERS[letter]
    return flags


def compile_one(pattern: str, where: str, flags: int = 0) -> re.Pattern[str]:
    try:
        return re.compile(pattern, flags)
    except re.error as exc:
        raise ConfigError(f"{where}: invalid regex {pattern!r}: {exc}") from None


@functools.lru_cache(maxsize=256)
def lenient(pattern: str, flags: int = 0) -> re.Pattern[str] | str:
    """The compiled pattern, or the reason it is invalid (cached: one compile per config, not per result)."""
    try:
        return re.compile(pattern, flags)
    except re.error as exc:
        return f"invalid regex: {exc}"


def require_any(config: dict[str, Any], keys: tuple[str, ...], grader: str) -> None:
    """ConfigError when none of ``keys`` is given: a grader with nothing to check is a mistake."""
    if not any(config.get(k) not in (None, [], {}) for k in keys):
        raise ConfigError(f"grader {grader!r} config: give at least one of {', '.join(keys)}")
