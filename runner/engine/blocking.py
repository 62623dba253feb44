"""The blocking forms of the Python API: one event loop per call, and one error when one thing went wrong.

``waza.capture(...)`` and the other blocking forms start an event loop of their own, which a thread
that already runs one (a Jupyter notebook, an ``async def``) cannot do: there they stop with a
message naming the async form to ``await`` instead, rather than asyncio's bare "already running".
An error raised inside the run's task groups reaches the caller as itself, not wrapped in
exception groups, when it is the only one.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable, Iterator
from typing import TypeVar

import anyio

T = TypeVar("T")

#: The blocking form -> how to use its async form instead.
ASYNC_FORMS: dict[str, str] = {
    "capture": "async for result in waza.acapture(...)",
    "trials": "async for result in waza.atrials(...)",
    "grade": "async for result in waza.agrade(...)",
    "run_one": "result = await waza.arun_one(...)",
    "run_suite": "async for result in waza.arun_suite(...)",
    "calibrate": "report = await waza.acalibrate(...)",
}


def refuse_in_event_loop(name: str) -> None:
    """A clear RuntimeError when this thread already runs an event loop, which a blocking form cannot join."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return
    raise RuntimeError(
        f"waza.{name}() blocks until the run is over, and this thread is already running an event loop "
        f"(a Jupyter notebook, an async function): use the async form there, `{ASYNC_FORMS[name]}`"
    )


def run_blocking(main: Callable[[], Awaitable[T]], name: str) -> T:
    """Run ``main`` in an event loop of its own (see :func:`refuse_in_event_loop`)."""
    refuse_in_event_loop(name)
    with single_error():
        return anyio.run(main)


@contextlib.contextmanager
def single_error() -> Iterator[None]:
    """Raise the one exception inside nested exception groups as itself (several stay grouped)."""
    try:
        yield
    except BaseExceptionGroup as group:
        leaves = _leaves(group)
        if len(leaves) != 1:
            raise
        raise leaves[0] from None


def _leaves(group: BaseExceptionGroup[BaseException]) -> list[BaseException]:
    found: list[BaseException] = []
    for inner in group.exceptions:
        found += _leaves(inner) if isinstance(inner, BaseExceptionGroup) else [inner]
    return found


__all__ = ["ASYNC_FORMS", "refuse_in_event_loop", "run_blocking", "single_error"]
