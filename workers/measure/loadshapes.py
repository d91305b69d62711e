"""Load shapes: when each request is sent.

- Closed loop: ``concurrency`` workers, each sending its next request as soon as its previous
  one finished. The engine's speed sets the pace; used for sequential sweeps (concurrency 1)
  and fixed-concurrency runs.
- Open loop: requests arrive on a schedule (evenly spaced, or Poisson with a seed) whatever the
  engine does, as real users do. An optional cap on requests in flight makes later arrivals
  wait for a slot; that wait is the request's queue time.

Both stop early on a :class:`StopSignal` (cancellation, wall-clock cap, error budget): nothing
new is sent and requests in flight are cancelled, so a stop takes effect within a second.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Awaitable, Callable, Sequence

from workers.measure.client import RequestPlan
from workers.measure.metrics import RequestRecord

_now_ns = time.perf_counter_ns

Execute = Callable[[RequestPlan, int | None, int], Awaitable[RequestRecord]]
OnRecord = Callable[[RequestRecord], None]


class StopSignal:
    """Set once, with the first reason given; later reasons are ignored."""

    def __init__(self) -> None:
        self.event = asyncio.Event()
        self.reason: str | None = None
        self.cancelled = False

    def trigger(self, reason: str, *, cancelled: bool = False) -> None:
        if self.reason is None:
            self.reason = reason
            self.cancelled = cancelled
        self.event.set()

    @property
    def is_set(self) -> bool:
        return self.event.is_set()


def arrival_offsets(*, count: int, rate: float, arrival: str, seed: int) -> list[float]:
    """Seconds from the start of the phase at which each request arrives.

    The first request arrives at 0. Poisson arrivals draw exponential gaps from a generator
    seeded with ``seed`` alone, so the same seed gives the same schedule on any machine.
    """
    if arrival == "constant":
        return [i / rate for i in range(count)]
    rng = random.Random(seed)
    offsets = [0.0]
    for _ in range(count - 1):
        offsets.append(offsets[-1] + rng.expovariate(rate))
    return offsets


async def _supervise(tasks: set[asyncio.Task[None]], stop: StopSignal) -> None:
    """Wait for the tasks, or for a stop, whichever comes first; on a stop, cancel them."""
    stopper = asyncio.ensure_future(stop.event.wait())
    try:
        pending = set(tasks)
        while pending:
            done, _ = await asyncio.wait(pending | {stopper}, return_when=asyncio.FIRST_COMPLETED)
            pending -= done
            if stopper in done:
                break
        for task in tasks:
            task.cancel()
        # Cancelled requests finish by recording themselves as cancelled; wait for that.
        await asyncio.gather(*tasks, return_exceptions=True)
    finally:
        stopper.cancel()
        for task in tasks:
            task.cancel()


async def closed_loop(
    *,
    plans: Sequence[RequestPlan],
    concurrency: int,
    execute: Execute,
    on_record: OnRecord,
    stop: StopSignal,
) -> None:
    queue = list(reversed(plans))

    async def worker() -> None:
        while queue and not stop.is_set:
            plan = queue.pop()
            started = _now_ns()
            # The request is due the moment a worker is free, so it has no queue time.
            on_record(await execute(plan, started, started))

    workers = {asyncio.create_task(worker()) for _ in range(min(concurrency, len(plans)))}
    await _supervise(workers, stop)


async def open_loop(
    *,
    plans: Sequence[RequestPlan],
    rate: float,
    arrival: str,
    seed: int,
    max_concurrency: int | None,
    execute: Execute,
    on_record: OnRecord,
    stop: StopSignal,
) -> None:
    offsets = arrival_offsets(count=len(plans), rate=rate, arrival=arrival, seed=seed)
    slots = asyncio.Semaphore(max_concurrency) if max_concurrency else None
    loop = asyncio.get_running_loop()
    in_flight: set[asyncio.Task[None]] = set()

    async def one(plan: RequestPlan, due_ns: int) -> None:
        if slots is None:
            on_record(await execute(plan, due_ns, _now_ns()))
            return
        async with slots:
            on_record(await execute(plan, due_ns, _now_ns()))

    async def dispatch() -> None:
        start_ns = _now_ns()
        start = loop.time()
        for plan, offset in zip(plans, offsets, strict=True):
            delay = start + offset - loop.time()
            if delay > 0:
                await asyncio.sleep(delay)
            if stop.is_set:
                return
            # Queue time counts from the scheduled arrival, so a late loop shows up as wait.
            task = asyncio.create_task(one(plan, start_ns + int(offset * 1e9)))
            in_flight.add(task)

    dispatcher = asyncio.create_task(dispatch())
    await _supervise({dispatcher}, stop)
    await _supervise(in_flight, stop)
