"""The result context that assertion and script graders see, in the waza reference's names.

``transcript`` is the trajectory (``trajectory`` names it too), ``tool_calls``
its tool_call steps, ``duration_ms`` the result's ``timing.total`` (None when
the result has no timing), ``outcome`` whatever outcome the request carries
(``{}`` otherwise); the rest are the request's own fields.
"""

from __future__ import annotations

from typing import Any

from waza.protocol.records import GraderRequest


def context(request: GraderRequest) -> dict[str, Any]:
    steps = list(request.trajectory)
    return {
        "id": request.id,
        "input": request.input,
        "output": request.output,
        "hint": request.hint if request.hint is not None else request.expected,
        "reference": request.reference,
        "outcome": request.unknown.get("outcome") or {},
        "transcript": steps,
        "trajectory": steps,
        "tool_calls": [s for s in steps if isinstance(s, dict) and s.get("type") == "tool_call"],
        "errors": list(request.errors),
        "tool_errors": request.tool_errors,
        "duration_ms": (request.timing or {}).get("total"),
        "usage": request.usage or {},
        "metadata": request.metadata,
    }
