"""Lab runs: submit-to-first-request latency on an idle queue, and the results page of a
1,000-request run, cold and with its charts cached.

    python bench/lab_runs.py [--runs 20] [--page-requests 20] [--part both|latency|page]

It builds a throwaway site (fresh PREFILL_VAR_DIR: migrate, sync_content, collectstatic; a cache
key prefix of its own in Redis), starts the scripted engine (fast timings: TTFT 5 ms, then one
token per ms), registers it with `manage.py target add` and `target probe` as an operator
would, and starts one Celery worker on that target's queue with concurrency 1, as `make worker`
does. The target's name carries a random suffix, so its queue (``target-<slug>``) is this
benchmark's own on the shared Redis and no other worker can take its tasks.

Part "latency": N small runs (lab ttft-vs-output-length: one warm-up and one measured request of
16 prompt and 16 output tokens), submitted one at a time through the run form's validation and
``labs.services.submit_run``, each after the previous one has finished and the worker has sat
idle for half a second. The latency is measured from just before ``submit_run`` is called to
the engine's own arrival stamp of the run's first generation request. Both stamps are read from
the same monotonic clock (``time.perf_counter_ns``, CLOCK_MONOTONIC on Linux, shared by every
process on the machine), so no client-side clock in the worker is trusted. It includes the
database insert, the commit hook that sends the Celery message, the worker picking it up,
claiming the run, taking the target lock, and the measurement library's set-up (prompt
calibration through /tokenize, the first /metrics scrape, opening connections). The first run
on a fresh worker is reported apart from the percentiles.

Part "page": one real 1,000-request run (lab open-loop-slo: five arrival rates x 200 requests,
the largest run a learner can submit there) through the same worker, then the site under
gunicorn (2 workers x 4 threads, DEBUG=false) and GET /labs/runs/<id>/ as the run's owner
(a real session cookie), one request at a time: cold (the run's cached charts deleted before
each request, so all three are drawn again) and warm (cached). Target: warm p95 < 200 ms.
"""

from __future__ import annotations

import argparse
import os
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench._server import (
    PYTHON,
    BenchSite,
    Children,
    bench_site,
    free_port,
    percentile,
    process_tree_cpu_s,
    run_benchmark,
    stop_on_sigterm,
    wait_for_log_line,
)

TARGET_LATENCY_P95_MS = 300.0
TARGET_WARM_PAGE_P95_MS = 200.0
ENGINE_FLAGS = ["--model", "scripted", "--ttft-ms", "5", "--gap-ms", "1"]
SMALL_RUN = ("ttft-vs-output-length", {"max_tokens": "16", "prompt_tokens": "16", "repeats": "1"})
# Five rates x 200 repeats = 1,000 measured requests (plus the run's one warm-up request).
BIG_RUN = (
    "open-loop-slo",
    {"rate_rpm": "1200, 2400, 4800, 9600, 19200", "repeats": "200", "prompt_tokens": "16", "max_tokens": "16"},
)
BIG_RUN_REQUESTS = 1000
IDLE_BETWEEN_RUNS_S = 0.5


@dataclass
class Submitted:
    """One small run's timeline, in milliseconds after the submit started."""

    first_request_ms: float
    submit_returned_ms: float
    dispatched_ms: float
    claimed_ms: float


def validated_params(*, lab: Any, target: Any, overrides: dict[str, str]) -> dict[str, Any]:
    """The lab's defaults with ``overrides``, cleaned by the same form the run page uses, so the
    benchmark only submits what a learner could."""
    from labs.forms import RunForm

    data = {"target": str(target.pk), "prediction": "Benchmark run."}
    for param in lab.spec.get("params", []):
        default = param["default"]
        data[f"param_{param['name']}"] = ", ".join(map(str, default)) if isinstance(default, list) else str(default)
    data.update({f"param_{key}": value for key, value in overrides.items()})
    form = RunForm(data=data, lab=lab)
    if not form.is_valid():
        raise RuntimeError(f"the benchmark's parameters for {lab.slug} are invalid: {form.errors.as_text()}")
    return form.params


def wait_for_run(*, run_id: int, children: Children, timeout_s: float) -> Any:
    from labs.models import LabRun

    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        run = LabRun.objects.select_related("lab").get(pk=run_id)
        if not run.is_active:
            if run.status != LabRun.Status.SUCCEEDED:
                raise RuntimeError(f"run {run.pk} ended {run.status}: {run.error}")
            return run
        children.check_alive()
        time.sleep(0.05)
    raise RuntimeError(f"run {run_id} did not finish within {timeout_s:.0f} s")


def engine_arrivals_ns(*, engine_url: str) -> list[int]:
    """Arrival stamps of the generation requests since the last call (reading clears the log)."""
    response = httpx.get(f"{engine_url}/scripted/log", timeout=10.0)
    response.raise_for_status()
    return [int(entry["received_ns"]) for entry in response.json()["requests"]]


def submit_and_time(
    *, user: Any, lab: Any, target: Any, params: dict, engine_url: str, children: Children
) -> Submitted:
    from labs.services import submit_run

    engine_arrivals_ns(engine_url=engine_url)
    wall_start = time.time()
    start_ns = time.perf_counter_ns()
    run = submit_run(user=user, lab=lab, target=target, params=params, prediction="Benchmark run.")
    returned_ns = time.perf_counter_ns()
    run = wait_for_run(run_id=run.pk, children=children, timeout_s=60)
    arrivals = engine_arrivals_ns(engine_url=engine_url)
    if not arrivals:
        raise RuntimeError(f"run {run.pk} succeeded but the engine logged no generation request")
    first_ms = (min(arrivals) - start_ns) / 1e6
    if not 0 < first_ms < 60_000:
        raise RuntimeError(f"first request {first_ms:.1f} ms after submit: the clocks do not agree")
    return Submitted(
        first_request_ms=first_ms,
        submit_returned_ms=(returned_ns - start_ns) / 1e6,
        dispatched_ms=(run.dispatched_at.timestamp() - wall_start) * 1000,
        claimed_ms=(run.started_at.timestamp() - wall_start) * 1000,
    )


def chart_keys(*, site: BenchSite, run_id: int) -> list[bytes]:
    import redis

    client = redis.Redis.from_url(site.redis_url)
    try:
        return list(client.scan_iter(match=f"{site.cache_prefix}:*run-charts:*:{run_id}:*", count=500))
    finally:
        client.close()


def delete_chart_keys(*, site: BenchSite, run_id: int) -> None:
    import redis

    keys = chart_keys(site=site, run_id=run_id)
    if keys:
        client = redis.Redis.from_url(site.redis_url)
        try:
            client.delete(*keys)
        finally:
            client.close()


def timed_get(*, http: httpx.Client, path: str) -> tuple[float, int]:
    started = time.perf_counter()
    response = http.get(path)
    elapsed_ms = (time.perf_counter() - started) * 1000
    if response.status_code != 200 or "<svg" not in response.text:
        raise RuntimeError(f"GET {path} answered {response.status_code} without charts")
    return elapsed_ms, len(response.content)


def warm_every_worker(*, base_url: str, cookies: dict[str, str], path: str, parallel: int) -> None:
    """Several simultaneous requests on separate connections, so each gunicorn worker imports
    matplotlib and compiles the templates before anything is timed."""

    def one() -> None:
        with httpx.Client(base_url=base_url, cookies=cookies, timeout=120.0) as http:
            http.get(path)

    threads = [threading.Thread(target=one) for _ in range(parallel)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()


def describe(values: list[float]) -> str:
    return (
        f"p50 {percentile(values=values, fraction=0.5):7.1f} ms  p95 {percentile(values=values, fraction=0.95):7.1f} ms"
        f"  max {max(values):7.1f} ms  (n={len(values)})"
    )


def measure_latency(*, runs: int, user: Any, target: Any, engine_url: str, children: Children) -> list[str]:
    from labs.models import Lab

    lab = Lab.objects.get(slug=SMALL_RUN[0])
    params = validated_params(lab=lab, target=target, overrides=SMALL_RUN[1])
    print(f"submitting {runs + 1} small runs one at a time…", flush=True)
    first = submit_and_time(user=user, lab=lab, target=target, params=params, engine_url=engine_url, children=children)
    samples: list[Submitted] = []
    for _ in range(runs):
        time.sleep(IDLE_BETWEEN_RUNS_S)
        samples.append(
            submit_and_time(user=user, lab=lab, target=target, params=params, engine_url=engine_url, children=children)
        )
    latencies = [s.first_request_ms for s in samples]
    p95 = percentile(values=latencies, fraction=0.95)

    def p50(attribute: str) -> float:
        return percentile(values=[getattr(s, attribute) for s in samples], fraction=0.5)

    return [
        f"Submit-to-first-request on an idle queue ({SMALL_RUN[0]}, 1 warm-up + 1 measured request per run)",
        "  from just before submit_run to the engine's arrival stamp of the run's first request",
        f"  first run on a fresh worker: {first.first_request_ms:.1f} ms",
        f"  next {runs} runs: {describe(latencies)}",
        f"  target p95 < {TARGET_LATENCY_P95_MS:.0f} ms: {'met' if p95 < TARGET_LATENCY_P95_MS else 'MISSED'}",
        f"  where the time goes (p50, ms after submit): submit_run returned {p50('submit_returned_ms'):.1f}, "
        f"message sent {p50('dispatched_ms'):.1f}, worker claimed the run {p50('claimed_ms'):.1f}, "
        f"first request at the engine {p50('first_request_ms'):.1f}",
    ]


def measure_page(
    *, site: BenchSite, user: Any, target: Any, engine_url: str, page_requests: int, workers: int
) -> list[str]:
    from django.conf import settings
    from django.test import Client

    from labs.models import Lab
    from labs.services import submit_run

    lab = Lab.objects.get(slug=BIG_RUN[0])
    params = validated_params(lab=lab, target=target, overrides=BIG_RUN[1])
    print(f"producing a {BIG_RUN_REQUESTS:,}-request run ({BIG_RUN[0]})…", flush=True)
    started = time.perf_counter()
    run = submit_run(user=user, lab=lab, target=target, params=params, prediction="Benchmark run.")
    run = wait_for_run(run_id=run.pk, children=site.children, timeout_s=600)
    produced_s = time.perf_counter() - started
    stored = run.requests.count()
    measured = run.requests.filter(warmup=False).count()
    succeeded = run.summary["overall"]["requests"]["succeeded"]
    if measured != BIG_RUN_REQUESTS:
        raise RuntimeError(f"run {run.pk} stored {measured} measured requests, not {BIG_RUN_REQUESTS}")
    engine_arrivals_ns(engine_url=engine_url)

    port = free_port()
    server = site.start_gunicorn(port=port, workers=workers)
    base_url = f"http://127.0.0.1:{port}"
    browser = Client()
    browser.force_login(user)
    cookies = {settings.SESSION_COOKIE_NAME: browser.cookies[settings.SESSION_COOKIE_NAME].value}
    path = run.get_absolute_url()
    print(f"timing GET {path}, {page_requests} cold and {page_requests} warm…", flush=True)
    with httpx.Client(base_url=base_url, cookies=cookies, timeout=120.0) as http:
        first_ms, size = timed_get(http=http, path=path)
        warm_every_worker(base_url=base_url, cookies=cookies, path=path, parallel=2 * workers)
        cold: list[float] = []
        cpu_before = process_tree_cpu_s(pid=server.process.pid)
        for _ in range(page_requests):
            delete_chart_keys(site=site, run_id=run.pk)
            cold.append(timed_get(http=http, path=path)[0])
        cold_cpu_ms = 1000 * (process_tree_cpu_s(pid=server.process.pid) - cpu_before) / page_requests
        if not chart_keys(site=site, run_id=run.pk):
            raise RuntimeError("the page did not cache its charts: the warm timings would be cold ones")
        warm: list[float] = []
        cpu_before = process_tree_cpu_s(pid=server.process.pid)
        for _ in range(page_requests):
            warm.append(timed_get(http=http, path=path)[0])
        warm_cpu_ms = 1000 * (process_tree_cpu_s(pid=server.process.pid) - cpu_before) / page_requests
    p95 = percentile(values=warm, fraction=0.95)
    return [
        f"Results page of a {BIG_RUN_REQUESTS:,}-request run ({BIG_RUN[0]}: {params['rate_rpm']} requests/min "
        f"x {params['repeats']}; {stored:,} stored requests incl. warm-up, {succeeded:,} succeeded; "
        f"produced in {produced_s:.1f} s)",
        f"  GET {path} as its owner: {size:,} bytes; first request after server start {first_ms:.0f} ms",
        f"  cold (charts drawn):  {describe(cold)}  server CPU {cold_cpu_ms:.0f} ms/page",
        f"  warm (charts cached): {describe(warm)}  server CPU {warm_cpu_ms:.0f} ms/page",
        f"  target warm p95 < {TARGET_WARM_PAGE_P95_MS:.0f} ms: {'met' if p95 < TARGET_WARM_PAGE_P95_MS else 'MISSED'}",
    ]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20, help="timed small runs after the first (default 20)")
    parser.add_argument("--page-requests", type=int, default=20, help="timed GETs, cold and warm each (default 20)")
    parser.add_argument("--part", choices=("both", "latency", "page"), default="both")
    parser.add_argument("--workers", type=int, default=2, help="gunicorn workers for the page part (default 2)")
    parser.add_argument("--keep", action="store_true", help="keep the state directory and the children's logs")
    args = parser.parse_args()
    if args.runs < 1 or args.page_requests < 1:
        parser.error("--runs and --page-requests must be at least 1")
    stop_on_sigterm()
    suffix = os.urandom(3).hex()
    target_name = f"Bench {suffix}"
    queue = f"target-bench-{suffix}"
    report: list[str] = []
    # The queue's list empties itself; kombu's two binding sets for its exchange are this
    # benchmark's to remove.
    own_keys = [queue, f"_kombu.binding.{queue}", f"_kombu.binding_permanent.{queue}"]
    with bench_site(name="labs", keep=args.keep, extra_redis_patterns=own_keys) as site:
        print("preparing a throwaway site (migrate, sync_content, collectstatic)…", flush=True)
        site.prepare(collectstatic=args.part != "latency")
        engine_url = site.start_scripted_target(name=target_name, engine_flags=ENGINE_FLAGS)
        site.manage("target", "probe", target_name)

        os.environ.update(site.env)
        import django

        django.setup()
        from django.contrib.auth import get_user_model

        from labs.models import InferenceTarget

        target = InferenceTarget.objects.get(name=target_name)
        if target.queue_name != queue:
            raise RuntimeError(f"target queue is {target.queue_name}, expected {queue}")
        # Staff limits, as an operator would set them in the admin: room for the 1,000-request
        # run and for every timed run inside one day's quota.
        InferenceTarget.objects.filter(pk=target.pk).update(
            max_requests_per_run=2 * BIG_RUN_REQUESTS, runs_per_learner_per_day=args.runs + 10
        )
        target.refresh_from_db()
        user = get_user_model().objects.create_user(username=f"bench-{suffix}", password=os.urandom(16).hex())

        celery = [PYTHON, "-m", "celery", "-A", "config", "worker"]
        worker = site.children.start(
            name="worker",
            # INFO, for the "ready." line this waits for; as `make worker` runs it.
            argv=[*celery, "-Q", queue, "-c", "1", "-n", f"{queue}@%h", "--loglevel", "INFO"],
            env=site.env,
        )
        wait_for_log_line(child=worker, needle=" ready.", timeout_s=60)

        if args.part in ("both", "latency"):
            report += measure_latency(
                runs=args.runs, user=user, target=target, engine_url=engine_url, children=site.children
            )
        if args.part in ("both", "page"):
            report += measure_page(
                site=site,
                user=user,
                target=target,
                engine_url=engine_url,
                page_requests=args.page_requests,
                workers=args.workers,
            )
        load = os.getloadavg()[0]
    print()
    print("\n".join(report))
    print(f"machine load average (1 min) {load:.2f} at the end, on {os.cpu_count()} CPUs")
    return 0


if __name__ == "__main__":
    run_benchmark(main)
