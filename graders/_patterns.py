"""Regular expressions from configs: compiled once, a bad one is a ConfigError naming its key."""

from __future__ import annotations

import re

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


def compile_all(patterns: list[str], where: str, flags: int = 0) -> list[re.Pattern[str]]:
    return [compile_one(p, f"{where}[{i}]", flags) for i, p in enumerate(patterns)]


def require_any(config: dict, keys: tuple[str, ...], grader: str) -> None:
    """ConfigError when none of ``keys`` is given: a grader with nothing to check is a mistake."""
    if not any(config.get(k) not in (None, [], {}) for k in keys):
        raise ConfigError(f"grader {grader!r} config: give at least one of {', '.join(keys)}")
