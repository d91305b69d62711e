"""Running a LabRun on its target: one measurement per step, every request stored as it lands.

Called by the Celery task. The database is the source of truth: the run's status, heartbeat,
progress and each measured request are written as they happen, so a crash loses nothing that
was measured and the reaper can tell a dead worker from a slow engine.

The database may go away for a moment mid-run (a PostgreSQL restart, a failover). Measuring goes
on: a progress write that fails is skipped (every request is written again when its step ends),
and the writes that matter (a step's requests, the summary, the final status) wait for the
database for up to LAB_DATABASE_PATIENCE_S, on a fresh connection.
"""

import contextlib
import dataclasses
import logging
import threading
import time
from collections.abc import Callable
from datetime import datetime
from typing import TypeVar
from urllib.parse import urlsplit

import redis
from django.conf import settings
from django.db import DatabaseError, InterfaceError, OperationalError, close_old_connections, connection, transaction
from django.utils import timezone

from core.learner_state import renew_learner_state
from labs.models import InferenceTarget, LabRun, RunRequest
from labs.plans import PlanError, Step, build_steps, planned_requests, planned_warmups
from labs.selectors import charts_for
from labs.targets import target_limits
from workers.measure import Capabilities, RequestRecord, TargetSpec, fresh_seed, measure
from workers.measure.metrics import combine_prefix_cache, prefix_cache_from_server_metrics, summarize

logger = logging.getLogger(__name__)

T = TypeVar("T")
# What a lost or restarting database raises; anything else is a real error.
DATABASE_GONE = (OperationalError, InterfaceError)


def _drop_connection() -> None:
    """Forget this thread's broken connection, so the next query opens a fresh one (Django does
    not reconnect on its own in the middle of a task)."""
    with contextlib.suppress(DatabaseError):
        connection.close()


def _patiently(write: Callable[[], T], *, what: str) -> T:
    """Run a database write, retrying on a fresh connection while the database is away."""
    deadline = time.monotonic() + settings.LAB_DATABASE_PATIENCE_S
    delay = 0.2
    while True:
        try:
            return write()
        except DATABASE_GONE as error:
            _drop_connection()
            if time.monotonic() + delay > deadline:
                raise
            logger.warning("database unavailable while %s (%s); retrying in %.1f s", what, error, delay)
            time.sleep(delay)
            delay = min(2 * delay, 2.0)


def _if_database_answers(write: Callable[[], T], *, default: T) -> T:
    """One try, for writes the run can do without (progress, heartbeats): never stall measuring."""
    try:
        return write()
    except DATABASE_GONE:
        _drop_connection()
        return default


# A lab whose plan says `chat = true` talks to the target's chat endpoint: a real model answers a
# chat turn and ends it with its end-of-sequence token, while as a plain completion it continues
# the prompt's words and rarely stops.
CHAT_API_FOR = {
    InferenceTarget.Api.OPENAI_COMPLETIONS: InferenceTarget.Api.OPENAI_CHAT,
    InferenceTarget.Api.OLLAMA_GENERATE: InferenceTarget.Api.OLLAMA_CHAT,
}


def target_spec(*, target: InferenceTarget, model: str, chat: bool = False) -> TargetSpec:
    capabilities = (
        Capabilities(**{k: v for k, v in target.capabilities.items() if k in Capabilities.__dataclass_fields__})
        if target.capabilities
        else Capabilities.for_engine(target.kind)
    )
    api = CHAT_API_FOR.get(target.api, target.api) if chat else target.api
    return TargetSpec(
        base_url=target.base_url, api=api, model=model, api_key=target.api_key or None, capabilities=capabilities
    )


class _Heartbeat(threading.Thread):
    """Touches heartbeat_at while a long request streams, so 'slow' is never mistaken for 'dead'."""

    def __init__(self, run_id: int, lock: "redis.lock.Lock | None") -> None:
        super().__init__(daemon=True, name=f"heartbeat-{run_id}")
        self.run_id = run_id
        self.lock = lock
        self.stopped = threading.Event()

    def run(self) -> None:
        try:
            while not self.stopped.wait(settings.LAB_HEARTBEAT_S):
                _if_database_answers(
                    lambda: LabRun.objects.filter(pk=self.run_id, status=LabRun.Status.RUNNING).update(
                        heartbeat_at=timezone.now()
                    ),
                    default=0,
                )
                if self.lock is not None:
                    # The lock lives only as long as heartbeats keep it: a killed worker frees
                    # its target within LAB_HEARTBEAT_STALE_S instead of blocking it for a run's length.
                    try:
                        self.lock.reacquire()
                    except (redis.RedisError, redis.exceptions.LockError):
                        logger.warning("could not extend the target lock of run %s", self.run_id)
        finally:
            close_old_connections()


def _claim(run_id: int) -> LabRun | None:
    """queued -> running, exactly once: a duplicate or late message finds nothing to do."""
    with transaction.atomic():
        run = LabRun.objects.select_for_update().select_related("target", "lab").filter(pk=run_id).first()
        if run is None or run.status != LabRun.Status.QUEUED:
            return None
        if run.cancel_requested:
            run.status = LabRun.Status.CANCELLED
            run.finished_at = timezone.now()
            run.save(update_fields=["status", "finished_at"])
            return None
        now = timezone.now()
        run.status = LabRun.Status.RUNNING
        run.started_at = now
        run.heartbeat_at = now
        run.error = ""
        run.save(update_fields=["status", "started_at", "heartbeat_at", "error"])
        return run


def target_lock_name(target: InferenceTarget) -> str:
    # One lock per piece of hardware: targets in the same hardware group (two servers on one
    # machine) must not measure at the same time either. Namespaced like the cache, so two sites
    # or a test run sharing one Redis never share a lock.
    scope = f"group-{target.hardware_group}" if target.hardware_group else f"target-{target.pk}"
    return f"{settings.CACHES['default']['KEY_PREFIX']}:hardware-lock:{scope}"


def _target_lock(target: InferenceTarget) -> redis.lock.Lock:
    client = redis.Redis.from_url(settings.REDIS_URL)
    return client.lock(
        target_lock_name(target),
        timeout=settings.LAB_HEARTBEAT_STALE_S,
        blocking_timeout=target.max_run_seconds + settings.LAB_HEARTBEAT_STALE_S,
        thread_local=False,
    )


def lock_token(run_id: int) -> str:
    return f"run-{run_id}"


def release_dead_lock(*, target: InferenceTarget, run_id: int) -> None:
    """Called by the reaper once it has decided a run's worker is dead: frees the hardware lock
    only if that run holds it, never a lock another (live) run has taken since."""
    client = redis.Redis.from_url(settings.REDIS_URL, socket_timeout=2, socket_connect_timeout=2)
    name = target_lock_name(target)
    try:
        with contextlib.suppress(redis.RedisError):
            if client.get(name) == lock_token(run_id).encode():
                client.delete(name)
    finally:
        client.close()


def execute_run(*, run_id: int) -> str:
    run = _claim(run_id)
    if run is None:
        return "skipped"
    # The heartbeat starts before the lock is taken: a run waiting for its hardware (another
    # target of the same group is measuring) is alive, and the reaper must not take it for dead.
    heartbeat = _Heartbeat(run.pk, None)
    heartbeat.start()
    lock: redis.lock.Lock | None = _target_lock(run.target)
    try:
        try:
            if not lock.acquire(token=lock_token(run.pk)):
                _finish(run, status=LabRun.Status.FAILED, error="Another run held this engine for too long; try again.")
                return "failed"
            heartbeat.lock = lock
        except redis.RedisError as error:
            logger.warning("target lock unavailable for run %s: %s", run.pk, error)
            lock = None
        return _measure_steps(run)
    except Exception as error:
        logger.exception("run %s failed", run.pk)
        _finish(
            run,
            status=LabRun.Status.FAILED,
            error=f"The run stopped on an internal error: {type(error).__name__}: {error}",
        )
        return "failed"
    finally:
        heartbeat.stopped.set()
        heartbeat.join(timeout=2)
        if lock is not None:
            with contextlib.suppress(redis.RedisError, redis.exceptions.LockError):
                lock.release()


def _measure_steps(run: LabRun) -> str:
    # A fresh seed on every attempt (a re-queued run too): the prompts open with a nonce no
    # earlier run sent, so an engine's prefix cache cannot serve this run's prefill.
    run.workload_seed = fresh_seed()
    _patiently(
        lambda: LabRun.objects.filter(pk=run.pk).update(workload_seed=run.workload_seed),
        what=f"recording the workload seed of run {run.pk}",
    )
    try:
        steps = build_steps(
            plan=run.lab.spec.get("plan", {}),
            params=run.params,
            models=run.target.model_names,
            limits=target_limits(run.target),
            seed=run.workload_seed,
        )
    except PlanError as error:
        _finish(run, status=LabRun.Status.FAILED, error=f"The parameters no longer fit this engine: {error}")
        return "failed"
    started = time.monotonic()
    # The target's wall-clock limit is the run's, not each step's: steps share what is left.
    deadline = started + run.target.max_run_seconds
    stopped_early = ""  # why the run ended before its plan, for the learner
    # Measured requests only: warm-ups are sent but not counted, as the results count them.
    total = planned_requests(steps)
    warmups = planned_warmups(steps)
    state = {"done": 0, "tokens": 0, "last_write": 0.0, "cancel_checked": 0.0, "cancelled": False}
    offset = run.requests.count()
    step_summaries: list[dict] = []
    notes: list[str] = []

    def cancelled() -> bool:
        now = time.monotonic()
        if now - state["cancel_checked"] >= 0.3:
            state["cancel_checked"] = now
            state["cancelled"] = _if_database_answers(
                lambda: LabRun.objects.filter(pk=run.pk, cancel_requested=True).exists(), default=state["cancelled"]
            )
        return state["cancelled"]

    for step in steps:
        if cancelled():
            break
        remaining_s = deadline - time.monotonic()
        if remaining_s <= 1:
            stopped_early = _over_time_reason(run=run, step=step)
            break
        base_index = offset

        def on_progress(progress, step: Step = step, base_index: int = base_index) -> None:
            record: RequestRecord = progress.record
            # Skipped while the database is away: the step's end writes every request again.
            _if_database_answers(
                lambda: _store_request(run=run, record=record, index=base_index + record.index, step=step),
                default=None,
            )
            if not record.warmup:
                state["done"] += 1
                state["tokens"] += record.output_tokens or 0
            now = time.monotonic()
            if now - state["last_write"] >= 0.25:
                state["last_write"] = now
                _if_database_answers(
                    lambda: LabRun.objects.filter(pk=run.pk).update(
                        heartbeat_at=timezone.now(),
                        progress={
                            "done": state["done"],
                            "total": total,
                            "warmup": warmups,
                            "tokens": state["tokens"],
                            "elapsed_s": round(now - started, 2),
                            "step": step.key,
                        },
                    ),
                    default=0,
                )

        spec = dataclasses.replace(step.spec, max_duration_s=min(step.spec.max_duration_s or remaining_s, remaining_s))
        result = measure(
            target=target_spec(
                target=run.target,
                model=step.model,
                # A generated model has no chat template and never ends an answer: plain completions.
                chat=bool(run.lab.spec.get("plan", {}).get("chat"))
                and not run.target.serves_synthetic_text(step.model),
            ),
            spec=spec,
            on_progress=on_progress,
            cancel=cancelled,
        )
        offset = base_index + len(result.requests)

        # Every request again: those the progress callback did not see (cancelled before
        # sending) and those it could not write (the database was away).
        def store_step(result=result, step: Step = step, base_index: int = base_index) -> None:
            for record in result.requests:
                _store_request(run=run, record=record, index=base_index + record.index, step=step)

        _patiently(store_step, what=f"storing step {step.key} of run {run.pk}")
        step_summaries.append(
            {
                "key": step.key,
                "params": step.params,
                "model": step.model,
                "summary": result.summary,
                "stop_reason": result.stop_reason,
            }
        )
        notes.extend(result.notes)
        if "schema_version" not in run.result_meta:
            # Merged, not replaced: the submit may have recorded how the parameters were fitted.
            run.result_meta = {
                **run.result_meta,
                "schema_version": result.schema_version,
                "target": {k: v for k, v in result.target.items() if k != "base_url"},
                "engine": result.engine,
                "steps": [{"key": s.key, "spec": s.spec.to_dict(), "model": s.model} for s in steps],
                "workload": {
                    "seed": run.workload_seed,
                    "nonce": result.workload.get("nonce"),
                    "prompt_cache": step.spec.prompt_cache,
                },
            }
        if result.server_metrics:
            run.result_meta.setdefault("server_metrics", {})[step.key] = result.server_metrics
        if result.status == "failed" and not state["cancelled"]:
            # The engine broke (went down, refused, errored past the step's budget): the later
            # steps would only fail the same way, so the run stops and says why.
            stopped_early = _engine_failure_reason(
                target=run.target, step=step, summary=result.summary, records=result.requests
            )
            break
        if (result.stop_reason or "").startswith("wall-clock cap"):
            stopped_early = _over_time_reason(run=run, step=step)
            break

    run.result_meta["notes"] = sorted(set(notes))
    _patiently(lambda: run.save(update_fields=["result_meta"]), what=f"saving run {run.pk}")
    summary = _patiently(
        lambda: finalise_summary(run=run, step_summaries=step_summaries), what=f"summarising run {run.pk}"
    )
    succeeded = summary["overall"]["requests"]["succeeded"]
    if state["cancelled"]:
        _finish(
            run, status=LabRun.Status.CANCELLED, error=f"Cancelled by request; {succeeded} measured requests are kept."
        )
        return "cancelled"
    if succeeded == 0:
        _finish(run, status=LabRun.Status.FAILED, error=_patiently(lambda: _first_error(run), what="reading errors"))
        return "failed"
    if stopped_early:
        kept = f"{succeeded} measured request{'s are' if succeeded != 1 else ' is'} kept below."
        _finish(run, status=LabRun.Status.FAILED, error=f"{stopped_early} {kept}")
        return "failed"
    # The charts are drawn before the run is marked finished: the page polling for the end then
    # shows the results at once, instead of drawing them (about a second) in the web process.
    finished_at = timezone.now()
    _predraw_charts(run=run, finished_at=finished_at)
    _finish(run, status=LabRun.Status.SUCCEEDED, error="", finished_at=finished_at)
    return "succeeded"


def _predraw_charts(*, run: LabRun, finished_at: datetime) -> None:
    """Draw and cache the results charts under the key the finished run will have."""
    run.finished_at = finished_at
    try:
        charts_for(run=run)
    except Exception:
        logger.exception("could not pre-draw the charts of run %s", run.pk)


def without_address(*, text: str, target: InferenceTarget) -> str:
    """An engine's error names where it was reached ("cannot connect to 10.0.0.7:8000"); learners
    see the target's name instead, because its address is for staff only."""
    parsed = urlsplit(target.base_url)
    hostname = parsed.hostname or ""
    addresses = [target.base_url.rstrip("/"), parsed.netloc]
    # A bare host only when it cannot be an ordinary word ("vllm" would mangle the engine's text).
    if "." in hostname or ":" in hostname:
        addresses.append(hostname)
    for address in addresses:
        if address:
            text = text.replace(address, target.name)
    return text


def _store_request(*, run: LabRun, record: RequestRecord, index: int, step: Step) -> None:
    data = record.to_dict()
    data["params"] = {**(data.get("params") or {}), **step.params}
    if data.get("error") and data["error"].get("message"):
        data["error"] = {**data["error"], "message": without_address(text=data["error"]["message"], target=run.target)}
    RunRequest.objects.update_or_create(
        run=run,
        index=index,
        defaults={
            "warmup": record.warmup,
            "step": {"key": step.key, **step.params},
            "ttft_s": record.ttft_s,
            "tpot_s": record.tpot_s,
            "e2e_s": record.e2e_s,
            "output_tokens": record.output_tokens,
            "prompt_tokens": record.prompt_tokens,
            "error_kind": (record.error or {}).get("kind", "")[:40],
            "record": data,
        },
    )


def finalise_summary(*, run: LabRun, step_summaries: list[dict] | None = None) -> dict:
    """Overall and per-step summaries from the stored requests (also after a crash)."""
    rows = list(run.requests.order_by("index").only("record", "step"))
    records = [RequestRecord.from_dict(_record_fields(row.record)) for row in rows]
    step_keys = [row.step.get("key", "run") for row in rows]
    if step_summaries is None:
        step_summaries = []
        for key in dict.fromkeys(step_keys):
            step_records = [record for record, k in zip(records, step_keys, strict=True) if k == key]
            params = dict(step_records[0].params or {}) if step_records else {}
            step_summaries.append(
                {
                    "key": key,
                    "params": params,
                    "model": run.model_name,
                    "summary": summarize(step_records, window_start_s=None),
                }
            )
    server_metrics = (run.result_meta or {}).get("server_metrics") or {}
    for step in step_summaries:
        # After a crash the steps are summarised from stored requests, which carry only what the
        # engine said per request; the /metrics counters of each finished step fill the gap.
        if step["summary"].get("prefix_cache") is None:
            step["summary"]["prefix_cache"] = prefix_cache_from_server_metrics(server_metrics.get(step["key"]))
    plan = run.lab.spec.get("plan", {})
    overall = summarize(_on_one_clock(records, step_keys=step_keys), window_start_s=None)
    overall["prefix_cache"] = combine_prefix_cache(step["summary"].get("prefix_cache") for step in step_summaries)
    summary = {
        "overall": overall,
        "sweep_param": plan.get("sweep"),
        "steps": step_summaries,
    }
    run.summary = summary
    run.save(update_fields=["summary"])
    return summary


def _on_one_clock(records: list[RequestRecord], *, step_keys: list[str]) -> list[RequestRecord]:
    """Each step is its own measurement whose clock starts at zero; lay the steps end to end so
    the overall duration, throughput and peak concurrency are computed over one timeline."""
    shifted: list[RequestRecord] = []
    offset, step_end, current = 0.0, 0.0, None
    for record, key in zip(records, step_keys, strict=True):
        if key != current:
            offset += step_end
            current, step_end = key, 0.0
        step_end = max(step_end, record.end_s or 0.0, record.send_s or 0.0)
        copy = RequestRecord.from_dict(record.to_dict())
        for field in ("scheduled_s", "send_s", "end_s"):
            value = getattr(copy, field)
            if value is not None:
                setattr(copy, field, value + offset)
        shifted.append(copy)
    return shifted


def _record_fields(data: dict) -> dict:
    allowed = RequestRecord.__dataclass_fields__
    return {k: v for k, v in data.items() if k in allowed}


def _engine_failure_reason(*, target: InferenceTarget, step: Step, summary: dict, records: list[RequestRecord]) -> str:
    counts = summary.get("errors_by_kind") or {}
    kinds = ", ".join(f"{count} {kind.replace('_', ' ')}" for kind, count in sorted(counts.items()))
    last = next((r.error for r in reversed(records) if r.error and r.error.get("kind") != "cancelled"), None) or {}
    said = f" The engine's last error: {last.get('message') or last.get('kind')}." if last else ""
    said = without_address(text=said, target=target)
    return f"The engine failed requests in step {step.key} ({kinds}), so the run stopped there.{said}"


def _over_time_reason(*, run: LabRun, step: Step) -> str:
    return (
        f"The run reached {run.target.name}'s limit of {run.target.max_run_seconds} s per run at step {step.key}; "
        "use fewer requests or shorter outputs."
    )


def _first_error(run: LabRun) -> str:
    failed = run.requests.exclude(error_kind="").first()
    if failed is None:
        return "No request completed."
    error = failed.record.get("error") or {}
    message = error.get("message") or error.get("kind")
    return f"No request succeeded. The engine said: {message}"


def _finish(run: LabRun, *, status: str, error: str, finished_at: datetime | None = None) -> None:
    finished_at = finished_at or timezone.now()
    _patiently(
        lambda: LabRun.objects.filter(pk=run.pk).update(
            status=status, error=error, finished_at=finished_at, heartbeat_at=timezone.now()
        ),
        what=f"finishing run {run.pk}",
    )
    renew_learner_state(user_ids=[run.user_id])
    run.status, run.error, run.finished_at = status, error, finished_at
