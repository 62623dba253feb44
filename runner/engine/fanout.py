"""A bounded fan-out: items through N workers to one sink, in the order they finish.

Both ``capture`` (a worker owns an agent adapter) and ``grade`` (a worker is just
the graders) need the same shape: N workers each set up once, each taking the
next item when it is free and handing its result to the sink itself, all in one
task group so an error or an interrupt cancels every part. No item is read
before a worker is free for it, so memory stays flat whatever the input size.
Two locks, not memory streams between a producer, the workers and a consumer:
uncontended, a lock is taken without a switch of tasks, where each item and
each result handed over a stream cost one (see README, Performance).
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import TypeVar

import anyio

T = TypeVar("T")
R = TypeVar("R")

Worker = Callable[[], contextlib.AbstractAsyncContextManager[Callable[[T], Awaitable[R]]]]


async def fan_out(items: AsyncIterator[T], worker: Worker[T, R], concurrency: int, sink: Callable[[R], Awaitable[None]]) -> None:
    """Run each item through one of ``concurrency`` workers; each result goes to ``sink`` as it finishes.

    ``worker()`` is entered once per worker and yields the function that handles one item.
    One worker reads ``items`` at a time, and calls of ``sink`` never overlap.
    """
    reading = anyio.Lock(fast_acquire=True)
    sinking = anyio.Lock(fast_acquire=True)
    ended = False

    async def work() -> None:
        nonlocal ended
        async with worker() as handle:
            while True:
                async with reading:
                    if ended:
                        return
                    try:
                        item = await anext(items)
                    except StopAsyncIteration:
                        ended = True
                        return
                result = await handle(item)
                async with sinking:
                    await sink(result)

    async with anyio.create_task_group() as tg:
        for _ in range(max(1, concurrency)):
            tg.start_soon(work)
