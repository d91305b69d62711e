import csv
import io
import json
import time
from datetime import UTC, datetime
from pathlib import Path

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.core.cache import cache
from django.db.models import Count, Q

from core.versions import rendering_version
from courses.rendering import render_lesson_body
from labs.models import CohortResult, InferenceTarget, Lab, LabRun, RunRequest


def rendered_guide(*, lab: Lab) -> str:
    key = f"lab-guide:{rendering_version()}:{lab.content_hash}"
    html = cache.get(key)
    if html is None:
        html = render_lesson_body(body=lab.spec.get("guide", "")).html
        cache.set(key, html, timeout=None)
    return html


def enabled_target(*, target_id: int) -> InferenceTarget | None:
    return InferenceTarget.objects.filter(pk=target_id, enabled=True).first()


def labs_by_slug(*, slugs: list[str]) -> list[Lab]:
    """Live labs in the order given (a lesson's "try it" list); unknown slugs are skipped."""
    found = {lab.slug: lab for lab in Lab.objects.live().filter(slug__in=slugs).only("slug", "title", "objective")}
    return [found[slug] for slug in slugs if slug in found]


def lab_for_slug(*, slug: str) -> Lab | None:
    return Lab.objects.live().filter(slug=slug).first()


def runs_of(*, user: AbstractBaseUser, lab: Lab | None = None):
    runs = LabRun.objects.filter(user=user).select_related("lab", "target")
    if lab is not None:
        runs = runs.filter(lab=lab)
    return runs.order_by("-created_at")


def recent_runs(*, user: AbstractBaseUser, limit: int) -> list[LabRun]:
    """The learner's newest runs as the Me page lists them: lab title, engine name, status and
    summary; not the lab's spec, the parameters or the progress."""
    return list(
        runs_of(user=user).only("id", "status", "created_at", "summary", "lab__title", "target__name")[:limit]
    )


def own_run(*, user: AbstractBaseUser, run_id: int) -> LabRun | None:
    """A learner's own run, or None. Staff may open any run."""
    runs = LabRun.objects.select_related("lab", "target", "user")
    if not user.is_staff:
        runs = runs.filter(user=user)
    return runs.filter(pk=run_id).first()


def decode_bound(*, run: LabRun) -> dict | None:
    """Bandwidth bound for decode at batch 1: the model's weight bytes over memory bandwidth."""
    target = run.target
    weight_bytes = (target.model_bytes or {}).get(run.model_name)
    if not weight_bytes or not target.memory_bandwidth_bytes_s:
        return None
    seconds_per_token = float(weight_bytes) / target.memory_bandwidth_bytes_s
    return {
        "decode_tokens_per_s": 1 / seconds_per_token,
        "tpot_s": seconds_per_token,
        "label": (
            f"{weight_bytes / 1e6:,.0f} MB of weights ÷ {target.memory_bandwidth_bytes_s / 1e9:,.1f} GB/s "
            f"({target.hardware_name or 'this hardware'})"
        ),
    }


def request_counts(*, run: LabRun) -> dict[str, int] | None:
    """A finished run's counts, the same everywhere: measured requests (warm-up excluded, as the
    summary table's n excludes it), how many succeeded and failed, the plan, and the warm-ups
    sent apart. None while the run is active (the live progress counts then)."""
    if run.is_active or not run.summary:
        return None
    requests = (run.summary.get("overall") or {}).get("requests") or {}
    meta_steps = (run.result_meta or {}).get("steps") or []
    return {
        "measured": int(requests.get("total", 0)),
        "succeeded": int(requests.get("succeeded", 0)),
        "failed": int(requests.get("failed", 0)),
        "planned": sum(int((step.get("spec") or {}).get("requests") or 0) for step in meta_steps)
        if meta_steps
        else int((run.progress or {}).get("total") or 0),
        "warmup": run.requests.filter(warmup=True).count(),
    }


def prediction_rows(*, run: LabRun) -> list:
    from labs.analysis import prediction_rows as rows

    return rows(
        predicts=run.lab.spec.get("predict", []),
        predicted=(run.result_meta or {}).get("predicted") or {},
        summary=run.summary or {},
    )


def efficiencies(*, run: LabRun) -> list:
    from labs.analysis import efficiencies as rows
    from labs.analysis import weight_bits

    target = run.target
    return rows(
        summary=run.summary or {},
        model_bytes={name: float(size) for name, size in (target.model_bytes or {}).items()},
        default_model=run.model_name,
        bandwidth_bytes_s=target.memory_bandwidth_bytes_s,
        peak_flops=target.peak_flops,
        bits_of=weight_bits,
    )


def cost_per_million_output_tokens(*, run: LabRun) -> float | None:
    price = run.target.price_per_gpu_hour
    overall = (run.summary or {}).get("overall") or {}
    throughput = overall.get("output_tokens_per_s")
    if price is None or not throughput:
        return None
    return float(price) / 3600 / throughput * 1_000_000


def charts_cache_key(*, run: LabRun) -> str:
    """Charts change with the run (its finish time) and with the code that draws them (core.versions)."""
    return f"run-charts:{rendering_version()}:{run.pk}:{run.finished_at.timestamp() if run.finished_at else 'live'}"


def charts_for(*, run: LabRun) -> dict[str, str]:
    """SVG charts of a finished run, cached: a finished run never changes."""
    from labs import charts

    key = charts_cache_key(run=run)
    cached = cache.get(key) if run.finished_at else None
    if cached is not None:
        return cached
    records = [request.record for request in run.requests.only("record").order_by("index")]
    summary = run.summary or {}
    result = {
        "main": charts.main_chart_svg(lab_slug=run.lab.slug, summary=summary, bound=decode_bound(run=run)),
        "cdf": charts.ttft_cdf_svg(records=records),
        "timeline": charts.timeline_svg(records=records, server_slots=run.target.server_slots),
    }
    if run.finished_at:
        cache.set(key, result, timeout=60 * 60 * 24 * 30)
    return result


def findings_for(*, run: LabRun) -> list:
    from labs.checks import evaluate

    if not run.summary:
        return []
    return evaluate(
        lab_slug=run.lab.slug,
        summary=run.summary,
        bound=decode_bound(run=run),
        measures_prefix_cache=bool(run.lab.spec.get("plan", {}).get("prompt_cache")),
    )


CSV_COLUMNS = [
    "index",
    "step",
    "warmup",
    "send_s",
    "queue_s",
    "ttft_s",
    "tpot_s",
    "e2e_s",
    "output_tokens",
    "prompt_tokens",
    "error",
]


def run_csv(*, run: LabRun) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow(CSV_COLUMNS)
    for request in run.requests.order_by("index"):
        record = request.record
        error = record.get("error") or {}
        writer.writerow(
            [
                request.index,
                request.step.get("key", ""),
                request.warmup,
                record.get("send_s"),
                record.get("queue_s"),
                request.ttft_s,
                request.tpot_s,
                request.e2e_s,
                request.output_tokens,
                request.prompt_tokens,
                f"{error.get('kind', '')}: {error.get('message', '')}" if error else "",
            ]
        )
    return buffer.getvalue()


def run_json(*, run: LabRun) -> str:
    """The full result: the measurement library's schema plus the lab context (no URLs, no keys)."""
    payload = {
        **{k: v for k, v in (run.result_meta or {}).items()},
        "run": run.pk,
        "lab": run.lab.slug,
        "target": {
            "name": run.target.name,
            "kind": run.target.kind,
            "hardware": run.target.hardware_name,
            "synthetic_text": run.synthetic_text,
        },
        "model_kind": run.model_kind,
        "model": run.model_name,
        "params": run.params,
        "prediction": run.prediction,
        "status": run.status,
        "error": run.error,
        "summary": (run.summary or {}).get("overall"),
        "steps": (run.summary or {}).get("steps", []),
        "requests": [request.record for request in run.requests.order_by("index")],
    }
    return json.dumps(payload, indent=2, default=str)


def queue_dashboard() -> dict:
    active = (
        LabRun.objects.filter(status__in=LabRun.ACTIVE)
        .select_related("user", "lab", "target")
        .order_by("target__name", "created_at")
    )
    failures = (
        LabRun.objects.filter(status=LabRun.Status.FAILED)
        .select_related("user", "lab", "target")
        .order_by("-finished_at")[:20]
    )
    targets = InferenceTarget.objects.annotate(
        queued=Count("runs", filter=Q(runs__status=LabRun.Status.QUEUED)),
        running=Count("runs", filter=Q(runs__status=LabRun.Status.RUNNING)),
    ).order_by("name")
    return {"active": active, "failures": failures, "targets": targets}


COHORT_SIZE = 50


def cohort_runs(*, lab: Lab):
    return (
        LabRun.objects.filter(lab=lab, status=LabRun.Status.SUCCEEDED)
        .select_related("user", "target")
        .order_by("-finished_at")[:COHORT_SIZE]
    )


def cohort_entries(*, lab: Lab) -> list[LabRun | CohortResult]:
    """The cohort view's rows, newest first: current learners' succeeded runs, and the anonymised
    aggregates learners left when they deleted their accounts (CohortResult, dated by day)."""

    def when(entry: LabRun | CohortResult) -> datetime:
        if isinstance(entry, CohortResult):
            return datetime.combine(entry.finished_on, datetime.min.time(), tzinfo=UTC)
        return entry.finished_at or entry.created_at

    former = CohortResult.objects.filter(lab=lab).select_related("target")[:COHORT_SIZE]
    entries: list[LabRun | CohortResult] = [*cohort_runs(lab=lab), *former]
    return sorted(entries, key=when, reverse=True)[:COHORT_SIZE]


def request_rows(*, run: LabRun, limit: int = 50) -> list[RunRequest]:
    return list(run.requests.order_by("-index")[:limit])


def _iso(value) -> str | None:
    return value.isoformat() if value else None


def _learner_runs(user: AbstractBaseUser):
    return LabRun.objects.filter(user=user).select_related("lab", "target").order_by("created_at")


def runs_export(*, user: AbstractBaseUser) -> list[dict]:
    """The learner's runs with every request, for their data export (docs/data-export.md).

    Targets appear by name only: their addresses and keys are the instructor's (stored records
    already have the address replaced by the target's name).
    """
    return [
        {
            "id": run.pk,
            "lab": run.lab.slug,
            "lab_title": run.lab.title,
            "target": run.target.name,
            "model": run.model_name,
            "params": run.params,
            "prediction": run.prediction,
            "status": run.status,
            "created_at": _iso(run.created_at),
            "started_at": _iso(run.started_at),
            "finished_at": _iso(run.finished_at),
            "requeue_count": run.requeue_count,
            "error": run.error,
            "summary": run.summary,
            "requests": [
                {
                    "index": request.index,
                    "warmup": request.warmup,
                    "step": request.step,
                    "ttft_s": request.ttft_s,
                    "tpot_s": request.tpot_s,
                    "e2e_s": request.e2e_s,
                    "output_tokens": request.output_tokens,
                    "prompt_tokens": request.prompt_tokens,
                    "error_kind": request.error_kind,
                    "record": request.record,
                }
                for request in run.requests.order_by("index")
            ],
        }
        for run in _learner_runs(user)
    ]


RUNS_CSV_COLUMNS = [
    "run_id",
    "lab",
    "lab_title",
    "target",
    "model",
    "status",
    "created_at",
    "finished_at",
    "params",
    "prediction",
    "measured_requests",
    "succeeded_requests",
    "ttft_p50_ms",
    "tpot_p50_ms",
    "output_tokens_per_s",
    "error",
]


def _p50_ms(overall: dict, metric: str) -> str:
    value = (overall.get(metric) or {}).get("p50")
    return "" if value is None else f"{value * 1000:.2f}"


def runs_csv(*, user: AbstractBaseUser) -> str:
    """One row per lab run of this learner, oldest first (a spreadsheet's view of the export)."""
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow(RUNS_CSV_COLUMNS)
    for run in _learner_runs(user):
        overall = (run.summary or {}).get("overall") or {}
        throughput = overall.get("output_tokens_per_s")
        writer.writerow(
            [
                run.pk,
                run.lab.slug,
                run.lab.title,
                run.target.name,
                run.model_name,
                run.status,
                _iso(run.created_at),
                _iso(run.finished_at) or "",
                json.dumps(run.params, sort_keys=True),
                run.prediction,
                run.requests.filter(warmup=False).count(),
                (overall.get("requests") or {}).get("succeeded", ""),
                _p50_ms(overall, "ttft_s"),
                _p50_ms(overall, "tpot_s"),
                "" if throughput is None else f"{throughput:.2f}",
                run.error,
            ]
        )
    return buffer.getvalue()


def run_counts(*, user: AbstractBaseUser) -> dict[str, int]:
    runs = LabRun.objects.filter(user=user)
    return {"runs": runs.count(), "active": runs.filter(status__in=LabRun.ACTIVE).count()}


# `make run` (scripts.services) writes this every second while the local engines build and
# start, and removes it when it stops; an older file belongs to a supervisor that is gone.
LOCAL_ENGINE_STATE_STALE_S = 10.0


def local_engine_state(*, now: float | None = None) -> dict | None:
    """How the local engines are getting on while `make run` builds and starts them: a dict with
    ``state`` ("building", "starting", "failed"), ``detail`` (phase, compiled units, elapsed, the
    expected total) and ``percent`` (or None); None when they are ready or not being started."""
    path = Path(settings.VAR_DIR) / "run" / "local-engines.json"
    try:
        record = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(record, dict) or record.get("state") not in {"building", "starting", "failed"}:
        return None
    if (now or time.time()) - float(record.get("updated_at", 0)) > LOCAL_ENGINE_STATE_STALE_S:
        return None
    percent = record.get("percent")
    return {
        "state": record["state"],
        "detail": str(record.get("detail", "")),
        "percent": percent if isinstance(percent, int) and 0 <= percent <= 100 else None,
    }
