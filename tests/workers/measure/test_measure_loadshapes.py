"""Load shapes, warm-up, progress reports, cancellation within a second, wall-clock cap."""

from __future__ import annotations

import asyncio
import itertools
import statistics
import threading
import time

import pytest

from workers.measure import Api, RunSpec, Sweep, measure, run_measurement
from workers.measure.loadshapes import arrival_offsets
from workers.measure.scripted_engine import EngineConfig, run_in_thread


def test_poisson_arrivals_are_seeded_and_reproducible() -> None:
    a = arrival_offsets(count=500, rate=20.0, arrival="poisson", seed=7)
    assert a == arrival_offsets(count=500, rate=20.0, arrival="poisson", seed=7)
    assert a != arrival_offsets(count=500, rate=20.0, arrival="poisson", seed=8)
    gaps = [b - x for x, b in itertools.pairwise(a)]
    assert a[0] == 0.0 and all(g >= 0 for g in gaps)
    assert statistics.mean(gaps) == pytest.approx(1 / 20, rel=0.15)
    # Exponential gaps: the standard deviation equals the mean.
    assert statistics.pstdev(gaps) == pytest.approx(statistics.mean(gaps), rel=0.2)


def test_constant_arrivals_are_evenly_spaced() -> None:
    assert arrival_offsets(count=4, rate=4.0, arrival="constant", seed=1) == [0, 0.25, 0.5, 0.75]


def test_open_loop_sends_on_schedule_and_counts_queue_time_for_a_slot(make_target) -> None:
    config = EngineConfig(ttft_ms=5.0, gap_ms=10.0)
    with run_in_thread(config) as engine:
        target = make_target(engine.base_url, Api.OPENAI_COMPLETIONS)
        free = RunSpec(requests=10, rate=50.0, arrival="constant", max_tokens=4, server_metrics=False)
        uncapped = measure(target=target, spec=free)
        capped = measure(
            target=target,
            spec=RunSpec(
                requests=10,
                rate=50.0,
                arrival="constant",
                max_tokens=10,
                concurrency=1,
                server_metrics=False,
            ),
        )
    offsets = [r.scheduled_s - uncapped.measured[0].scheduled_s for r in uncapped.measured]
    assert offsets == pytest.approx([i * 0.02 for i in range(10)], abs=0.004)
    assert all(r.send_s - r.scheduled_s < 0.03 for r in uncapped.measured)
    assert uncapped.summary["queue_s"]["max"] < 0.03
    # One slot, 20 ms between arrivals, ~100 ms per request: later arrivals wait for the slot.
    assert capped.summary["peak_concurrency"] == 1
    queue = [r.queue_s for r in capped.measured]
    assert queue[0] < 0.03 and queue[-1] > 0.5
    assert queue == sorted(queue)


def test_same_seed_gives_same_open_loop_schedule(make_target) -> None:
    with run_in_thread(EngineConfig(ttft_ms=2.0, gap_ms=1.0)) as engine:
        target = make_target(engine.base_url, Api.OPENAI_CHAT)
        spec = RunSpec(requests=8, rate=100.0, seed=3, max_tokens=2, server_metrics=False)
        runs = [measure(target=target, spec=spec) for _ in range(2)]
    schedules = [[r.scheduled_s - run.measured[0].scheduled_s for r in run.measured] for run in runs]
    assert schedules[0] == pytest.approx(schedules[1], abs=1e-6)
    expected = arrival_offsets(count=8, rate=100.0, arrival="poisson", seed=3)
    assert schedules[0] == pytest.approx(expected, abs=1e-6)


def test_warmup_is_recorded_but_excluded_and_progress_reports_every_request(make_target) -> None:
    seen = []
    with run_in_thread(EngineConfig(ttft_ms=2.0, gap_ms=1.0)) as engine:
        target = make_target(engine.base_url, Api.OPENAI_CHAT)
        spec = RunSpec(requests=6, warmup=2, concurrency=2, max_tokens=4, server_metrics=False)
        result = measure(target=target, spec=spec, on_progress=seen.append)
    assert [r.warmup for r in result.requests] == [True, True] + [False] * 6
    assert result.summary["requests"]["total"] == 6
    assert result.summary["requests"]["warmup"] == 2
    assert len(seen) == 8
    assert {p.record.index for p in seen} == set(range(8))
    last = seen[-1]
    assert last.done == 6 and last.total == 6 and last.output_tokens == 24
    assert last.summary["ttft_s"]["n"] == 6
    assert last.summary["itl_s"] is None  # partial summaries skip the expensive part
    assert result.summary["itl_s"]["n"] == 18


def test_sweep_runs_each_value_in_order_with_its_own_summary(make_target) -> None:
    config = EngineConfig(ttft_ms=5.0, ttft_per_prompt_token_ms=0.2, gap_ms=1.0)
    with run_in_thread(config) as engine:
        target = make_target(engine.base_url, Api.OPENAI_COMPLETIONS, tokenize="vllm")
        spec = RunSpec(requests=2, max_tokens=3, sweep=Sweep("prompt_tokens", (16, 256)), server_metrics=False)
        result = measure(target=target, spec=spec)
    assert [g["value"] for g in result.groups] == [16, 256]
    ttft = [g["summary"]["ttft_s"]["p50"] for g in result.groups]
    assert ttft[1] - ttft[0] == pytest.approx((256 - 16) * 0.0002, abs=0.015)
    assert [r.params for r in result.measured] == [{"prompt_tokens": 16}] * 2 + [{"prompt_tokens": 256}] * 2


@pytest.mark.parametrize("how", ["asyncio_event", "callable", "threading_event"])
def test_cancellation_is_honoured_within_a_second(make_target, how) -> None:
    config = EngineConfig(ttft_ms=5.0, gap_ms=20.0)
    with run_in_thread(config) as engine:
        target = make_target(engine.base_url, Api.OPENAI_CHAT)
        spec = RunSpec(requests=50, concurrency=4, max_tokens=500, server_metrics=False)
        stop_at = time.monotonic() + 0.6
        if how == "asyncio_event":

            async def run():
                event = asyncio.Event()
                asyncio.get_running_loop().call_later(0.6, event.set)
                return await run_measurement(target=target, spec=spec, cancel=event)

            result = asyncio.run(run())
        elif how == "callable":
            result = measure(target=target, spec=spec, cancel=lambda: time.monotonic() > stop_at)
        else:
            flag = threading.Event()
            threading.Timer(0.6, flag.set).start()
            result = measure(target=target, spec=spec, cancel=flag)
        finished = time.monotonic()
    assert finished - stop_at < 1.0
    assert result.status == "cancelled" and result.stop_reason == "cancelled"
    cancelled = [r for r in result.measured if r.error and r.error["kind"] == "cancelled"]
    assert len(cancelled) == 4  # the four in flight are kept, marked, and not errors
    assert result.summary["requests"]["cancelled"] == 4
    assert result.summary["errors_by_kind"] == {}


def test_wall_clock_cap_stops_the_run_and_keeps_what_finished(make_target) -> None:
    with run_in_thread(EngineConfig(ttft_ms=5.0, gap_ms=5.0)) as engine:
        target = make_target(engine.base_url, Api.OPENAI_COMPLETIONS)
        spec = RunSpec(requests=1000, concurrency=2, max_tokens=10, max_duration_s=0.8, server_metrics=False)
        started = time.monotonic()
        result = measure(target=target, spec=spec)
    assert time.monotonic() - started < 2.5
    assert result.status == "succeeded"
    assert result.stop_reason == "wall-clock cap of 0.8 s reached"
    assert 4 <= result.summary["requests"]["succeeded"] < 1000


def test_progress_callback_failure_stops_the_sync_run_and_is_raised(make_target) -> None:
    def explode(progress):
        raise RuntimeError("database is down")

    with run_in_thread(EngineConfig(ttft_ms=2.0, gap_ms=1.0)) as engine:
        target = make_target(engine.base_url, Api.OPENAI_CHAT)
        with pytest.raises(RuntimeError, match="database is down"):
            measure(
                target=target,
                spec=RunSpec(requests=50, max_tokens=2, server_metrics=False),
                on_progress=explode,
            )
