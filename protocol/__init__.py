"""Records, JSONL I/O, schema validation and the grader protocol.

This package depends on nothing else of waza's: adapters, graders and the
runner all build on it, never the other way round.
"""

from .codec import Record, RecordError
from .errors import ConfigError
from .grader_protocol import GraderProtocolError, aggregate, normalize_result, parse_result_bytes
from .records import (
    PROTOCOL_VERSION,
    CaptureResult,
    Exit,
    Grade,
    GraderRequest,
    GraderResult,
    PromptCase,
    Timing,
    TrajectoryStep,
    Usage,
    Verdict,
)

__all__ = [
    "PROTOCOL_VERSION",
    "CaptureResult",
    "ConfigError",
    "Exit",
    "Grade",
    "GraderProtocolError",
    "GraderRequest",
    "GraderResult",
    "PromptCase",
    "Record",
    "RecordError",
    "Timing",
    "TrajectoryStep",
    "Usage",
    "Verdict",
    "aggregate",
    "normalize_result",
    "parse_result_bytes",
]
