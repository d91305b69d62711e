"""A whole run: prepare prompts, warm up, measure, summarise; report progress; honour stops.

``run_measurement`` is the async entry point. ``measure`` is the synchronous one for callers
such as a Celery task: it runs the event loop on a thread of its own and calls ``on_progress``
and ``cancel`` on the caller's thread, so a slow callback (a database write) never delays the
loop that is taking timestamps, and database connections stay on the caller's thread.
"""

from __future__ import annotations

import asyncio
import gc
import inspect
import queue
import threading
import time
from collections.abc import Awaitable, Callable, Coroutine
from datetime import UTC, datetime
from typing import Any, TypeVar

from workers.measure.client import MeasureClient, RequestPlan, make_http_client
from workers.measure.errors import USAGE_MISSING
from workers.measure.loadshapes import StopSignal, closed_loop, open_loop
from workers.measure.metrics import (
    RequestRecord,
    describe,
    prefix_cache_from_server_metrics,
    summarize,
    with_template_allowance,
)
from workers.measure.result import RunResult
from workers.measure.server_metrics import ServerMetrics
from workers.measure.spec import RunSpec, TargetSpec
from workers.measure.workload import WARMUP, build_plans, make_factory

_now_ns = time.perf_counter_ns
T = TypeVar("T")

CANCEL_POLL_S = 0.2
_NOTHING = object()
METRICS_SAMPLE_S = 1.0


class Progress:
    """Sent after every finished request: the record, counts so far and a partial summary.

    The partial summary is computed only when read, and leaves out the ITL distribution (the
    one expensive part); the final result has it.
    """

    def __init__(
        self,
        *,
        record: RequestRecord,
        records: list[RequestRecord],
        total: int,
        elapsed_s: float,
        window_start_s: float | None,
        spec: RunSpec,
    ) -> None:
        self.record = record
        self.total = total
        self.elapsed_s = elapsed_s
        self._records = records
        self._window_start_s = window_start_s
        self._spec = spec
        self._summary: dict[str, Any] | None = None
        measured = [r for r in records if not r.warmup]
        self.done = len(measured)
        self.failed = sum(1 for r in measured if not r.ok)
        self.output_tokens = sum(r.output_tokens or 0 for r in measured if r.ok)

    @property
    def summary(self) -> dict[str, Any]:
        if self._summary is None:
            self._summary = summarize(
                self._records,
                window_start_s=self._window_start_s,
                slo=self._spec.slo,
                include_itl=False,
            )
        return self._summary


ProgressFn = Callable[[Progress], None] | Callable[[Progress], Awaitable[None]]
CancelSource = asyncio.Event | threading.Event | Callable[[], bool]


async def _watch_cancel(cancel: CancelSource, stop: StopSignal) -> None:
    if isinstance(cancel, asyncio.Event):
        await cancel.wait()
    else:
        while True:
            if isinstance(cancel, threading.Event):
                requested = cancel.is_set()
            else:
                # A caller's check may touch a database: keep it off the event loop.
                requested = await asyncio.to_thread(cancel)
            if requested:
                break
            await asyncio.sleep(CANCEL_POLL_S)
    stop.trigger("cancelled", cancelled=True)


async def _deadline(seconds: float, stop: StopSignal) -> None:
    await asyncio.sleep(seconds)
    stop.trigger(f"wall-clock cap of {seconds:g} s reached")


async def _unless_stopped(work: Coroutine[Any, Any, T], stop: StopSignal) -> T | None:
    """Run a preparation step, abandoning it if the run is stopped meanwhile."""
    task = asyncio.ensure_future(work)
    stopper = asyncio.ensure_future(stop.event.wait())
    try:
        await asyncio.wait({task, stopper}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        stopper.cancel()
    if task.done():
        return task.result()
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)
    return None


def _utc_now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")


async def run_measurement(
    *,
    target: TargetSpec,
    spec: RunSpec,
    on_progress: ProgressFn | None = None,
    cancel: CancelSource | None = None,
    engine: dict[str, Any] | None = None,
) -> RunResult:
    """Measure ``target`` as ``spec`` says. Never raises for engine or network failures:
    those are counted on the requests. ``engine`` (a probe result) is copied into the result.

    ``on_progress`` runs on the event loop after each request (an async one is awaited in
    order by a separate task); keep it quick, or use :func:`measure`, which calls it on the
    caller's thread.
    """
    origin = _now_ns()
    started_at = _utc_now()
    stop = StopSignal()
    records: list[RequestRecord] = []
    notes: list[str] = []
    background: list[asyncio.Task[Any]] = []
    window_start_s: float | None = None
    failures = 0
    measured_total = spec.requests * (len(spec.sweep.values) if spec.sweep else 1)
    progress_queue: asyncio.Queue[Progress | None] | None = None

    if cancel is not None:
        background.append(asyncio.create_task(_watch_cancel(cancel, stop)))
    if spec.max_duration_s is not None:
        background.append(asyncio.create_task(_deadline(spec.max_duration_s, stop)))
    if on_progress is not None and inspect.iscoroutinefunction(on_progress):
        progress_queue = asyncio.Queue()

        async def pump() -> None:
            assert progress_queue is not None
            while (item := await progress_queue.get()) is not None:
                await _call_progress(on_progress, item, notes)

        pump_task = asyncio.create_task(pump())
    else:
        pump_task = None

    def on_record(record: RequestRecord) -> None:
        nonlocal failures
        records.append(record)
        if not record.warmup and not record.ok and record.error["kind"] != "cancelled":
            failures += 1
            if spec.max_errors is not None and failures >= spec.max_errors:
                stop.trigger(f"error budget reached: {failures} failed requests")
        if on_progress is None:
            return
        progress = Progress(
            record=record,
            records=list(records),
            total=measured_total,
            elapsed_s=(_now_ns() - origin) / 1e9,
            window_start_s=window_start_s,
            spec=spec,
        )
        if progress_queue is not None:
            progress_queue.put_nowait(progress)
        else:
            _call_sync_progress(on_progress, progress, notes)

    http = make_http_client(target=target, timeout_s=spec.read_timeout_s, connect_timeout_s=spec.connect_timeout_s)
    client = MeasureClient(target=target, spec=spec, origin_ns=origin)
    metrics: ServerMetrics | None = None
    if spec.server_metrics and target.capabilities.metrics:
        metrics = ServerMetrics(http=http, target=target, dialect=target.capabilities.metrics)
    sampler_stop = asyncio.Event()
    groups: list[dict[str, Any]] = []
    factory = make_factory(http=http, target=target, seed=spec.seed)
    plans: list[RequestPlan] = []
    # Every request's bytes are built before the clock starts.
    payloads: dict[int, bytes] = {}

    async def execute(plan: RequestPlan, scheduled_ns: int | None, slot_ns: int) -> RequestRecord:
        return await client.measure(plan, payload=payloads[plan.index], scheduled_ns=scheduled_ns, slot_ns=slot_ns)

    def collect_cancelled() -> None:
        while client.cancelled:
            on_record(client.cancelled.pop(0))

    try:
        await _unless_stopped(factory.calibrate(chat=target.api.is_chat), stop)
        plans = await _unless_stopped(build_plans(spec=spec, target=target, factory=factory), stop) or []
        payloads.update({plan.index: client.encode(plan) for plan in plans})
        if metrics is not None and not stop.is_set:
            metrics.before = await metrics.scrape()
            background.append(asyncio.create_task(metrics.sample_until(sampler_stop, interval_s=METRICS_SAMPLE_S)))
        warmup = [p for p in plans if p.warmup]
        measured = [p for p in plans if not p.warmup]
        pool_size = spec.effective_concurrency or min(len(measured), 64)
        await _unless_stopped(client.preconnect(min(pool_size, max(len(plans), 1))), stop)
        if warmup and not stop.is_set:
            await closed_loop(
                plans=warmup,
                concurrency=spec.effective_concurrency or 1,
                execute=execute,
                on_record=on_record,
                stop=stop,
            )
            collect_cancelled()
        # A full garbage collection scans every object in the process and can stall the loop
        # for tens of milliseconds mid-stream; everything alive now is frozen out of those
        # scans for the measured phase (young collections stay cheap).
        gc.collect()
        gc.freeze()
        window_start_s = (_now_ns() - origin) / 1e9
        sweep = spec.sweep
        for value in sweep.values if sweep else (None,):
            if stop.is_set:
                break
            group = [p for p in measured if sweep is None or p.params.get(sweep.param) == value]
            group_start_s = (_now_ns() - origin) / 1e9
            await _run_shape(spec=spec, plans=group, execute=execute, on_record=on_record, stop=stop)
            collect_cancelled()
            if sweep is not None:
                done = [r for r in records if not r.warmup and r.params.get(sweep.param) == value]
                group_summary = summarize(done, window_start_s=group_start_s, slo=spec.slo)
                groups.append({"param": sweep.param, "value": value, "summary": group_summary})
    finally:
        gc.unfreeze()
        sampler_stop.set()
        for task in background:
            task.cancel()
        await asyncio.gather(*background, return_exceptions=True)
        client.close()
        if metrics is not None and metrics.before is not None:
            metrics.after = await metrics.scrape()
        await http.aclose()
        if pump_task is not None and progress_queue is not None:
            progress_queue.put_nowait(None)
            await pump_task

    records.sort(key=lambda r: r.index)
    summary = summarize(records, window_start_s=window_start_s, slo=spec.slo)
    server_report = metrics.report() if metrics is not None else None
    if summary["prefix_cache"] is None:
        # /metrics counts every request in its window: the warm-up's too.
        summary["prefix_cache"] = with_template_allowance(
            prefix_cache_from_server_metrics(server_report), template_tokens=factory.template_overhead * len(records)
        )
    else:
        summary["prefix_cache"] = with_template_allowance(
            summary["prefix_cache"], template_tokens=factory.template_overhead * summary["prefix_cache"]["requests"]
        )
    notes += _notes(target=target, spec=spec, records=records, method=factory.method)
    if stop.cancelled:
        status = "cancelled"
    elif (stop.reason or "").startswith("error budget") or (
        summary["requests"]["total"] and not summary["requests"]["succeeded"]
    ):
        status = "failed"
    else:
        status = "succeeded"
    if not plans and not stop.is_set:
        status = "failed"
        notes.append("no requests could be prepared")
    return RunResult(
        status=status,
        stop_reason=stop.reason,
        started_at=started_at,
        finished_at=_utc_now(),
        target=target.public_dict(),
        engine=engine,
        spec=spec.to_dict(),
        workload={
            "prompt_length_method": factory.method,
            "tokens_per_word": round(factory.tokens_per_word, 4),
            "template_overhead_tokens": factory.template_overhead,
            "calibration_requests": factory.calibration_requests,
            "unique_opening_per_request": True,
            "shared_prefix_tokens": spec.shared_prefix_tokens,
            "seed": spec.seed,
            "nonce": factory.nonce(),
            "warmup_nonce": factory.nonce(WARMUP),
            "prompt_cache": spec.prompt_cache,
        },
        requests_planned=measured_total,
        requests=records,
        summary=summary,
        groups=groups,
        server_metrics=server_report,
        connections={
            "opened": client.pool.opened,
            "reused": client.pool.reused,
            "fresh_connection_per_stream": target.capabilities.fresh_connection_per_stream,
            "connect_s": describe(client.pool.connect_times_s),
        },
        notes=notes,
    )


async def _run_shape(
    *,
    spec: RunSpec,
    plans: list[RequestPlan],
    execute: Callable[[RequestPlan, int | None, int], Awaitable[RequestRecord]],
    on_record: Callable[[RequestRecord], None],
    stop: StopSignal,
) -> None:
    if spec.rate is not None:
        await open_loop(
            plans=plans,
            rate=spec.rate,
            arrival=spec.arrival,
            seed=spec.seed,
            max_concurrency=spec.effective_concurrency,
            execute=execute,
            on_record=on_record,
            stop=stop,
        )
    else:
        await closed_loop(
            plans=plans,
            concurrency=spec.effective_concurrency or 1,
            execute=execute,
            on_record=on_record,
            stop=stop,
        )


def _call_sync_progress(fn: Any, progress: Progress, notes: list[str]) -> None:
    try:
        fn(progress)
    except Exception as exc:  # a reporting failure must not lose the run's measurements
        _note_callback_failure(exc, notes)


async def _call_progress(fn: Any, progress: Progress, notes: list[str]) -> None:
    try:
        await fn(progress)
    except Exception as exc:
        _note_callback_failure(exc, notes)


def _note_callback_failure(exc: Exception, notes: list[str]) -> None:
    message = f"progress callback failed: {type(exc).__name__}: {exc}"
    if message not in notes:
        notes.append(message)


def _notes(*, target: TargetSpec, spec: RunSpec, records: list[RequestRecord], method: str) -> list[str]:
    notes: list[str] = []
    measured = [r for r in records if not r.warmup and r.ok]
    counted = sum(1 for r in measured if r.output_tokens_source == "chunks")
    if counted:
        notes.append(
            f"output tokens of {counted} request(s) were counted from streamed chunks because "
            "the engine reported no usage; a chunk may hold more than one token"
        )
    if any(w["kind"] == USAGE_MISSING for r in measured for w in r.warnings):
        notes.append("the engine was asked for usage but did not send it on some requests")
    if method == "estimate":
        notes.append(
            "prompt lengths are estimates: the target has no tokenize endpoint and reported no prompt token usage"
        )
    if spec.ignore_eos and (target.api.is_ollama or not target.capabilities.ignore_eos):
        notes.append("this target cannot be told to ignore end-of-sequence; outputs may be short")
    if target.capabilities.fresh_connection_per_stream:
        notes.append("each stream used a new connection; connect time is kept out of TTFT")
    return notes


def measure(
    *,
    target: TargetSpec,
    spec: RunSpec,
    on_progress: Callable[[Progress], None] | None = None,
    cancel: threading.Event | Callable[[], bool] | None = None,
    engine: dict[str, Any] | None = None,
) -> RunResult:
    """Synchronous :func:`run_measurement` for threaded callers (Celery tasks, scripts).

    The event loop runs on a thread of its own; ``on_progress`` and ``cancel`` are called on
    the caller's thread (cancel at least every 0.2 s), so they may use the database.
    """
    items: queue.Queue[Progress | object | None] = queue.Queue()
    stop_flag = threading.Event()
    outcome: dict[str, Any] = {}

    def run() -> None:
        try:
            outcome["result"] = asyncio.run(
                run_measurement(
                    target=target,
                    spec=spec,
                    on_progress=items.put if on_progress is not None else None,
                    cancel=stop_flag,
                    engine=engine,
                )
            )
        except BaseException as exc:  # handed to the caller's thread below
            outcome["error"] = exc
        finally:
            items.put(None)

    thread = threading.Thread(target=run, name="measure-loop", daemon=True)
    thread.start()
    callback_error: BaseException | None = None
    try:
        while True:
            try:
                item = items.get(timeout=CANCEL_POLL_S)
            except queue.Empty:
                item = _NOTHING
            if item is None:
                break
            if isinstance(item, Progress) and on_progress is not None and callback_error is None:
                try:
                    on_progress(item)
                except Exception as exc:  # stop the run, then raise it on this thread
                    callback_error = exc
                    stop_flag.set()
            if cancel is not None and not stop_flag.is_set():
                requested = cancel.is_set() if isinstance(cancel, threading.Event) else cancel()
                if requested:
                    stop_flag.set()
    except BaseException:
        # Interrupted here (a task time limit, Ctrl-C): stop the requests in flight rather
        # than leave the loop thread streaming behind the caller's back.
        stop_flag.set()
        thread.join(timeout=5)
        raise
    thread.join()
    if callback_error is not None:
        raise callback_error
    if "error" in outcome:
        raise outcome["error"]
    return outcome["result"]
