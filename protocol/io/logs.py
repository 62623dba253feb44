"""Logs to stderr through structlog, loaded on the first log line rather than at start-up.

Most runs never log (warnings only, and nothing goes wrong), and importing
structlog with its console renderer costs more than the rest of a one-prompt
run's start-up; so modules hold a :class:`Logger` proxy, ``configure`` only
records the wanted level, and structlog is imported and configured when a
line is actually logged.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable
from typing import Any

__all__ = ["Logger", "configure", "get_logger", "verbosity"]

_level = logging.WARNING
_redact: Callable[[str], str] = str
_configured = False
_LEVELS = {"debug": logging.DEBUG, "info": logging.INFO}


def configure(verbose: int, redact: Callable[[str], str]) -> None:
    """Warnings by default, -v info, -vv debug; every rendered line passes through ``redact``."""
    global _level, _redact, _configured
    _level = logging.WARNING - 10 * min(verbose, 2)
    _redact = redact
    _configured = False


def verbosity() -> int:
    """What ``configure`` was given: 0 by default, 1 for -v, 2 for -vv (for settings that follow it)."""
    return (logging.WARNING - _level) // 10


def _structlog() -> Any:
    global _configured
    import structlog

    if not _configured:
        structlog.configure(
            processors=[
                structlog.processors.add_log_level,
                structlog.processors.TimeStamper(fmt="iso"),
                structlog.dev.ConsoleRenderer(colors=sys.stderr.isatty(), exception_formatter=structlog.dev.plain_traceback),
                _redacted,  # no secret reaches a log line
            ],
            wrapper_class=structlog.make_filtering_bound_logger(_level),
            logger_factory=structlog.PrintLoggerFactory(file=sys.stderr),
            cache_logger_on_first_use=False,
        )
        _configured = True
    return structlog


def _redacted(_logger: Any, _method: str, rendered: Any) -> Any:
    """The last processor: the console renderer's line, with secret values masked."""
    return _redact(rendered)


class Logger:
    """A named structlog logger, created on its first call (``log.info("event", key=value)``)."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __getattr__(self, method: str) -> Any:
        if _LEVELS.get(method, logging.CRITICAL) < _level:
            return _ignore  # below the level: dropped without loading structlog
        return getattr(_structlog().get_logger(self.name), method)


def _ignore(*_args: object, **_kw: object) -> None:
    return None


def get_logger(name: str) -> Logger:
    return Logger(name)
