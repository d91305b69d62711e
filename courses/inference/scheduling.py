"""Toy batch schedulers, in decode iterations, for comparing static and continuous batching.

Every request is queued at time 0 and needs `length` decode iterations; a batch has `slots`
places. Static batching admits the next `slots` requests only when the whole batch has finished,
so short requests leave their slot idle while the longest one runs. Continuous (iteration-level)
batching, as in Orca (Yu et al., OSDI 2022) and vLLM, fills a freed slot at the next iteration.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Placement:
    request: int
    slot: int
    start: int
    end: int


def _check(*, lengths: list[int], slots: int) -> None:
    if slots < 1:
        raise ValueError(f"slots must be at least 1, got {slots}")
    if not lengths or any(length < 1 for length in lengths):
        raise ValueError("every request needs at least one iteration")


def static_batching(*, lengths: list[int], slots: int) -> list[Placement]:
    _check(lengths=lengths, slots=slots)
    placements: list[Placement] = []
    start = 0
    for first in range(0, len(lengths), slots):
        batch = lengths[first : first + slots]
        for offset, length in enumerate(batch):
            placements.append(
                Placement(request=first + offset, slot=offset, start=start, end=start + length)
            )
        start += max(batch)
    return placements


def continuous_batching(*, lengths: list[int], slots: int) -> list[Placement]:
    _check(lengths=lengths, slots=slots)
    free: list[tuple[int, int]] = [(0, slot) for slot in range(slots)]  # (free from, slot)
    heapq.heapify(free)
    placements: list[Placement] = []
    for request, length in enumerate(lengths):
        start, slot = heapq.heappop(free)
        placements.append(Placement(request=request, slot=slot, start=start, end=start + length))
        heapq.heappush(free, (start + length, slot))
    return placements


def makespan(*, placements: list[Placement]) -> int:
    return max(placement.end for placement in placements)


def slot_utilisation(*, placements: list[Placement], slots: int) -> float:
    """Busy slot-iterations over all slot-iterations until the last request finishes."""
    busy = sum(placement.end - placement.start for placement in placements)
    return busy / (slots * makespan(placements=placements))
