"""Signed-in pages under load (lesson, question, lab), next to a static file of the lesson's size
from the same server, in the same run.

    python bench/lesson_page.py [--duration 20] [--clients 32] [--path /learn/lessons/SLUG/]
                                [--question-path /practice/q/SLUG/] [--lab-path /labs/SLUG/]

It builds a throwaway site (fresh PREFILL_VAR_DIR: migrate, sync_content, collectstatic; a cache
key prefix of its own in Redis), makes a learner and a logged-in session for them (every request
of the signed-in phases carries its cookie, as a learner's browser does, so each one loads the
session and the user and works out that learner's progress, attempts and runs), renders the
signed-in lesson page once to learn its size, writes a file of
exactly that many bytes into the collected static directory (so whitenoise indexes it at start),
serves the site the production way (gunicorn, 2 workers with 4 threads as `make run` does,
DEBUG=false so whitenoise serves static files from its index), and loads each URL with
``--clients`` concurrent keep-alive clients for ``--duration`` seconds after a short discarded
warm-up. Neither request asks for compression, so both bodies go out at the same size.

The load comes from wrk when it is installed (`apt-get install wrk`): it is written in C and
leaves the CPU to the server, which matters on a 2-core machine. Without it an httpx async loop
in this process does the same job, at a higher CPU cost that the output reports.

It prints requests/s, p50/p95/p99 latency, the server's CPU milliseconds per request (gunicorn
master and workers, from /proc: unlike the rates this does not move with other load on a shared
machine), and the ratio of each page's rate to the static rate. The anonymous lesson page is
measured too, for comparison. Target: each signed-in page at least 50% of the static rate with
p95 under 50 ms.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench._server import (
    GUNICORN_THREADS,
    GUNICORN_WORKERS,
    ROOT,
    BenchSite,
    bench_site,
    children_cpu_s,
    free_port,
    percentile,
    process_tree_cpu_s,
    run_benchmark,
    stop_on_sigterm,
)

DEFAULT_PATH = "/learn/lessons/roofline-speed-of-light/"
DEFAULT_QUESTION_PATH = "/practice/q/prefill-decode-ttft/"
DEFAULT_LAB_PATH = "/labs/ttft-vs-output-length/"
TARGET_RATIO = 0.5
TARGET_P95_MS = 50.0
# A worker doing more than this share of the work (two workers) means the connections landed unevenly.
UNEVEN_SHARE = 0.75

# wrk's --latency table has no p95; its Lua done() hook can read any percentile.
WRK_REPORT = """
done = function(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    "BENCH requests=%.0f duration_us=%.0f bytes=%.0f p50_us=%.0f p95_us=%.0f p99_us=%.0f max_us=%.0f "
      .. "connect=%.0f read=%.0f write=%.0f status=%.0f timeout=%.0f\\n",
    summary.requests, summary.duration, summary.bytes,
    latency:percentile(50), latency:percentile(95), latency:percentile(99), latency.max,
    e.connect, e.read, e.write, e.status, e.timeout))
end
"""


@dataclass
class LoadResult:
    requests: int
    seconds: float
    p50_ms: float
    p95_ms: float
    p99_ms: float
    max_ms: float
    errors: dict[str, int] = field(default_factory=dict)
    server_cpu_s: float = 0.0
    client_cpu_s: float = 0.0
    # The busiest gunicorn worker's share of the workers' CPU over the phase (1/workers: even).
    busiest_worker_share: float = 0.0

    @property
    def rate(self) -> float:
        return self.requests / self.seconds if self.seconds else 0.0

    @property
    def server_cpu_ms_per_request(self) -> float:
        return 1000 * self.server_cpu_s / self.requests if self.requests else 0.0


def parse_wrk(*, output: str) -> LoadResult:
    """The BENCH line printed by WRK_REPORT, cross-checked against wrk's own summary."""
    match = re.search(r"^BENCH (.+)$", output, re.MULTILINE)
    if match is None:
        raise RuntimeError(f"wrk printed no BENCH line (is the Lua report hook loaded?):\n{output}")
    values = {key: float(value) for key, value in (pair.split("=") for pair in match.group(1).split())}
    errors = {key: int(values[key]) for key in ("connect", "read", "write", "status", "timeout") if values[key]}
    result = LoadResult(
        requests=int(values["requests"]),
        seconds=values["duration_us"] / 1e6,
        p50_ms=values["p50_us"] / 1000,
        p95_ms=values["p95_us"] / 1000,
        p99_ms=values["p99_us"] / 1000,
        max_ms=values["max_us"] / 1000,
        errors=errors,
    )
    summary = re.search(r"Requests/sec:\s+([\d.]+)", output)
    if summary and abs(float(summary.group(1)) - result.rate) > 0.01 * result.rate + 1:
        raise RuntimeError(f"wrk's Requests/sec ({summary.group(1)}) disagrees with the hook ({result.rate:.1f})")
    return result


def run_wrk(*, wrk: str, url: str, clients: int, duration_s: float, script: Path, cookie: str = "") -> LoadResult:
    threads = min(2, clients)
    argv = [
        wrk,
        *(["-H", f"Cookie: {cookie}"] if cookie else []),
        f"-t{threads}",
        f"-c{clients}",
        f"-d{max(1, round(duration_s))}s",
        "--timeout",
        "10s",
        "--latency",
        "-s",
        str(script),
        url,
    ]
    # subprocess.run kills wrk itself if Ctrl-C interrupts the wait.
    done = subprocess.run(argv, capture_output=True, text=True, check=False, timeout=duration_s + 60)
    if done.returncode != 0:
        raise RuntimeError(f"wrk failed ({done.returncode}): {done.stderr or done.stdout}")
    return parse_wrk(output=done.stdout)


def run_httpx(*, url: str, clients: int, duration_s: float, cookie: str = "") -> LoadResult:
    """A closed loop of ``clients`` keep-alive connections, each sending the next request when
    the last one has been read in full."""
    latencies: list[float] = []
    errors: dict[str, int] = {}

    async def client_loop(http: httpx.AsyncClient, deadline: float) -> None:
        while time.perf_counter() < deadline:
            started = time.perf_counter()
            try:
                response = await http.get(url, headers={"Cookie": cookie} if cookie else None)
            except httpx.HTTPError as error:
                errors[type(error).__name__] = errors.get(type(error).__name__, 0) + 1
                continue
            latencies.append(time.perf_counter() - started)
            if response.status_code >= 400:
                errors["status"] = errors.get("status", 0) + 1

    async def main() -> float:
        limits = httpx.Limits(max_connections=clients, max_keepalive_connections=clients)
        async with httpx.AsyncClient(limits=limits, timeout=10.0) as http:
            started = time.perf_counter()
            await asyncio.gather(*(client_loop(http, started + duration_s) for _ in range(clients)))
            return time.perf_counter() - started

    elapsed = asyncio.run(main())
    if not latencies:
        raise RuntimeError(f"no request completed: {errors}")
    return LoadResult(
        requests=len(latencies),
        seconds=elapsed,
        p50_ms=1000 * percentile(values=latencies, fraction=0.50),
        p95_ms=1000 * percentile(values=latencies, fraction=0.95),
        p99_ms=1000 * percentile(values=latencies, fraction=0.99),
        max_ms=1000 * max(latencies),
        errors=errors,
    )


def measure_load(
    *, tool: str, url: str, clients: int, duration_s: float, server_pid: int, script: Path, cookie: str = ""
) -> LoadResult:
    """One load phase, with the server's and the load generator's CPU time over it."""
    server_before = process_tree_cpu_s(pid=server_pid)
    workers_before = children_cpu_s(pid=server_pid)
    children_before = resource.getrusage(resource.RUSAGE_CHILDREN)
    self_before = resource.getrusage(resource.RUSAGE_SELF)
    if tool == "httpx":
        result = run_httpx(url=url, clients=clients, duration_s=duration_s, cookie=cookie)
    else:
        result = run_wrk(wrk=tool, url=url, clients=clients, duration_s=duration_s, script=script, cookie=cookie)
    result.server_cpu_s = process_tree_cpu_s(pid=server_pid) - server_before
    worker_cpu = [used - workers_before.get(pid, 0.0) for pid, used in children_cpu_s(pid=server_pid).items()]
    result.busiest_worker_share = max(worker_cpu) / sum(worker_cpu) if sum(worker_cpu) > 0 else 0.0
    children_after = resource.getrusage(resource.RUSAGE_CHILDREN)
    self_after = resource.getrusage(resource.RUSAGE_SELF)
    result.client_cpu_s = (
        children_after.ru_utime + children_after.ru_stime - children_before.ru_utime - children_before.ru_stime
    )
    if tool == "httpx":
        result.client_cpu_s += self_after.ru_utime + self_after.ru_stime - self_before.ru_utime - self_before.ru_stime
    return result


def signed_in_session(*, site: BenchSite) -> str:
    """A learner and a logged-in session of theirs, made through Django itself; returns the
    session key. ``force_login`` gives the same session a login would, without password hashing."""
    code = (
        "from django.conf import settings\n"
        "from django.contrib.auth import get_user_model\n"
        "from django.test import Client\n"
        "user = get_user_model().objects.create_user(username='bench-learner', password=None)\n"
        "browser = Client()\n"
        "browser.force_login(user, backend='django.contrib.auth.backends.ModelBackend')\n"
        "print('BENCH', browser.cookies[settings.SESSION_COOKIE_NAME].value)\n"
    )
    done = subprocess.run(
        [sys.executable, "manage.py", "shell", "-c", code], cwd=ROOT, env=site.env, capture_output=True, text=True
    )
    match = re.search(r"^BENCH (\S+)$", done.stdout, re.MULTILINE)
    if done.returncode != 0 or match is None:
        raise RuntimeError(f"could not make a signed-in session:\n{done.stdout}{done.stderr}")
    return match.group(1)


def rendered_size(*, site: BenchSite, path: str, session_key: str = "") -> int:
    """Render the page once in a child process of the site (this also fills the shared cache)."""
    code = (
        "import os\n"
        "from django.conf import settings\n"
        "from django.test import Client\n"
        "browser = Client()\n"
        "if os.environ['BENCH_SESSION']:\n"
        "    browser.cookies[settings.SESSION_COOKIE_NAME] = os.environ['BENCH_SESSION']\n"
        "r = browser.get(os.environ['BENCH_PATH'], HTTP_HOST='127.0.0.1')\n"
        "print('BENCH', r.status_code, len(r.content))\n"
    )
    done = subprocess.run(
        [sys.executable, "manage.py", "shell", "-c", code],
        cwd=ROOT,
        env={**site.env, "BENCH_PATH": path, "BENCH_SESSION": session_key},
        capture_output=True,
        text=True,
        check=False,
    )
    match = re.search(r"^BENCH (\d+) (\d+)$", done.stdout, re.MULTILINE)
    if done.returncode != 0 or match is None:
        raise RuntimeError(f"could not render {path}:\n{done.stdout}{done.stderr}")
    if match.group(1) != "200":
        raise RuntimeError(f"{path} answered {match.group(1)}, not 200: check --path")
    return int(match.group(2))


def write_static_file(*, static_root: Path, size: int) -> str:
    """A plain-text file of exactly ``size`` bytes; returns its name under STATIC_URL."""
    name = f"bench-{size}-bytes.html"
    line = b"<p>Prefill benchmark filler: the same number of bytes as the lesson page.</p>\n"
    body = (line * (size // len(line) + 1))[:size]
    (static_root / name).write_bytes(body)
    return name


def check_body(*, url: str, cookie: str = "", signed_in: bool = False) -> int:
    """The page answers 200 (signed in when it should be); returns its size."""
    response = httpx.get(url, timeout=60.0, headers={"Cookie": cookie} if cookie else None)
    if response.status_code != 200:
        raise RuntimeError(f"{url} answered {response.status_code}")
    if signed_in and "Log out bench-learner" not in response.text:
        raise RuntimeError(f"{url} was not served to the signed-in learner: is the session cookie accepted?")
    return len(response.content)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--duration", type=float, default=20.0, help="seconds of load per URL (default 20)")
    parser.add_argument("--clients", type=int, default=32, help="concurrent clients (default 32)")
    parser.add_argument("--path", default=DEFAULT_PATH, help=f"the lesson page (default {DEFAULT_PATH})")
    parser.add_argument(
        "--question-path", default=DEFAULT_QUESTION_PATH, help=f"the question page (default {DEFAULT_QUESTION_PATH})"
    )
    parser.add_argument("--lab-path", default=DEFAULT_LAB_PATH, help=f"the lab page (default {DEFAULT_LAB_PATH})")
    parser.add_argument("--warmup", type=float, default=2.0, help="seconds of discarded load per URL (default 2)")
    parser.add_argument("--workers", type=int, default=GUNICORN_WORKERS, help="gunicorn workers (default 2)")
    parser.add_argument("--threads", type=int, default=GUNICORN_THREADS, help="threads per worker (default 4)")
    parser.add_argument(
        "--tool", choices=("auto", "wrk", "httpx"), default="auto", help="load generator (default: wrk if installed)"
    )
    parser.add_argument("--keep", action="store_true", help="keep the state directory and server log")
    args = parser.parse_args()
    if args.clients < 1 or args.duration <= 0:
        parser.error("--clients must be at least 1 and --duration positive")
    tool = shutil.which("wrk") if args.tool in ("auto", "wrk") else None
    if args.tool == "wrk" and tool is None:
        parser.error("wrk is not installed: apt-get install wrk")
    tool = tool or "httpx"
    stop_on_sigterm()

    with bench_site(name="lesson", keep=args.keep) as site, tempfile.TemporaryDirectory() as scratch:
        script = Path(scratch) / "report.lua"
        script.write_text(WRK_REPORT)
        print("preparing a throwaway site (migrate, sync_content, collectstatic)…", flush=True)
        started = time.perf_counter()
        site.prepare(collectstatic=True)
        session_key = signed_in_session(site=site)
        cookie = f"sessionid={session_key}"
        size = rendered_size(site=site, path=args.path, session_key=session_key)
        static_name = write_static_file(static_root=site.static_root, size=size)
        port = free_port()
        server = site.start_gunicorn(port=port, workers=args.workers, threads=args.threads)
        base = f"http://127.0.0.1:{port}"
        ready_s = time.perf_counter() - started
        print(f"site ready in {ready_s:.1f} s; the signed-in lesson page is {size:,} bytes", flush=True)

        # (label, URL, cookie): the static file sits in the middle, so drift in the machine's
        # load over the run shows in the pages before and after it alike.
        load = [
            ("lesson, signed in", f"{base}{args.path}", cookie),
            ("question, signed in", f"{base}{args.question_path}", cookie),
            ("static file", f"{base}/static/{static_name}", ""),
            ("lab, signed in", f"{base}{args.lab_path}", cookie),
            ("lesson, anonymous", f"{base}{args.path}", ""),
        ]
        results: dict[str, LoadResult] = {}
        sizes: dict[str, int] = {}
        load_before = os.getloadavg()
        for label, url, page_cookie in load:
            sizes[label] = check_body(url=url, cookie=page_cookie, signed_in="signed in" in label)
            if args.warmup > 0:
                measure_load(
                    tool=tool,
                    url=url,
                    clients=args.clients,
                    duration_s=args.warmup,
                    server_pid=server.process.pid,
                    script=script,
                    cookie=page_cookie,
                )
            print(f"loading the {label} page for {args.duration:.0f} s…", flush=True)
            results[label] = measure_load(
                tool=tool,
                url=url,
                clients=args.clients,
                duration_s=args.duration,
                server_pid=server.process.pid,
                script=script,
                cookie=page_cookie,
            )
            site.children.check_alive()
        load_after = os.getloadavg()

    static = results["static file"]
    generator = "wrk" if tool != "httpx" else "httpx async loop"
    print()
    print(
        f"gunicorn {args.workers} workers x {args.threads} threads; {args.clients} clients x {args.duration:.0f} s "
        f"each, load from {generator}; static file {static_name}"
    )
    print(
        f"{'':21}{'bytes':>8}{'req/s':>9}{'p50 ms':>9}{'p95 ms':>9}{'p99 ms':>9}{'max ms':>9}{'requests':>10}"
        f"{'server CPU ms/req':>19}{'x static':>10}{'busiest worker':>16}"
    )
    for label, result in results.items():
        ratio = result.rate / static.rate if static.rate else 0.0
        print(
            f"{label:21}{sizes[label]:8d}{result.rate:9.1f}{result.p50_ms:9.1f}{result.p95_ms:9.1f}{result.p99_ms:9.1f}"
            f"{result.max_ms:9.1f}{result.requests:10d}{result.server_cpu_ms_per_request:19.2f}{ratio:10.2f}"
            f"{100 * result.busiest_worker_share:15.0f}%"
        )
    if tool == "httpx":
        print(
            "note: the httpx loop shares this machine's CPUs with the server and needs more of them than wrk, "
            "so the static rate (and the ratio) understate what the server can do; install wrk for the real figure"
        )
    uneven = [label for label, result in results.items() if result.busiest_worker_share > UNEVEN_SHARE]
    if uneven and args.workers > 1:
        # wrk opens its connections at once and keeps them; each gunicorn worker serves the ones
        # it accepted, and one worker can win most of them. Its rate is then one core's.
        print(
            f"note: one gunicorn worker did over {100 * UNEVEN_SHARE:.0f}% of the work on: {', '.join(uneven)} "
            "(wrk's kept-alive connections landed unevenly on the workers, so that page was served by about "
            "one core: run again before reading its ratio)"
        )
    for label, result in results.items():
        if result.errors:
            print(f"errors on the {label} page: {result.errors}")
    for label, result in results.items():
        if "signed in" not in label:
            continue
        ratio = result.rate / static.rate if static.rate else 0.0
        verdict = "met" if ratio >= TARGET_RATIO and result.p95_ms < TARGET_P95_MS else "MISSED"
        print(
            f"{label}: {100 * ratio:.0f}% of the static rate (target >= {100 * TARGET_RATIO:.0f}%), "
            f"p95 {result.p95_ms:.1f} ms (target < {TARGET_P95_MS:.0f} ms): {verdict}"
        )
    print(
        f"machine load average (1 min) {load_before[0]:.2f} before, {load_after[0]:.2f} after, on {os.cpu_count()} CPUs"
    )
    return 0


if __name__ == "__main__":
    run_benchmark(main)
