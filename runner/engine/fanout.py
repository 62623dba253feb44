"""A bounded fan-out: items through N workers to one sink, in the order they finish.

Both ``capture`` (a worker owns an agent adapter) and ``grade`` (a worker is just
the graders) need the same shape: a producer, N workers each set up once, and a
single consumer, joined by memory streams a few items deep so memory stays flat
whatever the input size, all in one task group so an error or an interrupt
cancels every part.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import TypeVar

import anyio
import anyio.abc

T = TypeVar("T")
R = TypeVar("R")

Worker = Callable[[], contextlib.AbstractAsyncContextManager[Callable[[T], Awaitable[R]]]]


async def fan_out(items: AsyncIterator[T], worker: Worker[T, R], concurrency: int, sink: Callable[[R], Awaitable[None]]) -> None:
    """Run each item through one of ``concurrency`` workers; each result goes to ``sink`` as it finishes.

    ``worker()`` is entered once per worker and yields the function that handles one item.
    """
    depth = max(1, concurrency)
    send, receive = anyio.create_memory_object_stream[T](depth)
    out_send, out_receive = anyio.create_memory_object_stream[R](depth)

    async def produce() -> None:
        async with send:
            async for item in items:
                await send.send(item)

    async def work(rx: anyio.abc.ObjectReceiveStream[T], tx: anyio.abc.ObjectSendStream[R]) -> None:
        async with rx, tx, worker() as handle:
            async for item in rx:
                await tx.send(await handle(item))

    async with anyio.create_task_group() as tg:
        tg.start_soon(produce)
        for _ in range(depth):
            tg.start_soon(work, receive.clone(), out_send.clone())
        receive.close()
        out_send.close()
        async with out_receive:
            async for result in out_receive:
                await sink(result)
