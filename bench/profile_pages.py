"""Where a signed-in page's CPU goes, request by request, inside one Django process.

    python bench/profile_pages.py [--requests 200] [--top 0] [--sort tottime|cumulative] [--miss] [--page TEXT]
                                  [--postgres URL]

It builds a throwaway site (fresh PREFILL_VAR_DIR: migrate, sync_content, collectstatic; a cache
key prefix of its own in Redis; SQLite, or with ``--postgres`` a database of its own on that
server), signs a learner in, and in one child process (DEBUG off, the
production middleware, sessions from Redis) sends each page ``--requests`` times through Django's
handler (the test client) with the learner's session cookie, after a warm-up. For each page it
prints the process CPU milliseconds per request and, from cProfile, the split: the whole handler,
session load, auth user load (which includes the session), templates, ORM queries, the view
(which includes those four when it runs: the session and user load lazily), and the rest of the
handler (middleware, URL resolving, request and response objects, a kept page's lookup).
The anonymous lesson page goes through the same handler for comparison, and so does the htmx POST
of a free-text answer (queued for grading on a queue of the run's own that nothing consumes), a
write that renders the answer panel every time.
cProfile's own overhead inflates the split; the "CPU ms/req" column is taken in a second pass
without it. ``--top N`` also prints the N functions with the most own time per page. A reload
of a signed-in page is served from the learner's kept copy (core.page_cache) where there is one;
``--miss`` renews the learner's token before every request (as a write of theirs would), so every
request renders the page: what a learner's first visit, or the first after a write, costs.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench._server import PYTHON, ROOT, bench_site, run_benchmark, stop_on_sigterm

PAGES = {
    "home, signed in": ("/", True),
    "lesson, signed in": ("/learn/lessons/roofline-speed-of-light/", True),
    "question, signed in": ("/practice/q/prefill-decode-ttft/", True),
    "lab, signed in": ("/labs/ttft-vs-output-length/", True),
    "review queue": ("/practice/review/", True),
    "Me page": ("/accounts/me/", True),
    # The htmx answer POST (a free-text answer, queued for the grading worker): every one is a write
    # and renders the answer panel; the queue is this run's own, never consumed, removed at the end.
    "answer submit (htmx)": ("/practice/q/prefill-decode-ttft/", "answer"),
    "lesson, anonymous": ("/learn/lessons/roofline-speed-of-light/", False),
}

# (label, file suffix, function name): cumulative time of these is each category's share.
CATEGORIES = (
    ("session load", "sessions/backends/cached_db.py", "load"),
    ("auth user", "contrib/auth/__init__.py", "get_user"),
    ("templates", "template/base.py", "render"),
    ("ORM queries", "models/sql/compiler.py", "execute_sql"),
)

CHILD = r"""
import cProfile, os, pstats, sys, time, io
import django
django.setup()
from django.conf import settings
from django.contrib.auth import get_user_model
from django.test import Client

pages = eval(os.environ["PROFILE_PAGES"])
categories = eval(os.environ["PROFILE_CATEGORIES"])
count = int(os.environ["PROFILE_REQUESTS"])
top = int(os.environ["PROFILE_TOP"])
sort = os.environ.get("PROFILE_SORT", "tottime")
miss = os.environ["PROFILE_MISS"] == "1"
try:
    from core.learner_state import renew_learner_state
except ImportError:  # a checkout from before core.page_cache renders every request anyway
    renew_learner_state = lambda **kwargs: None
user = get_user_model().objects.create_user(username="profile-learner", password=None)
signed_in = Client(HTTP_HOST="127.0.0.1")
signed_in.force_login(user, backend="django.contrib.auth.backends.ModelBackend")
# A learner with some history: a viewed lesson, an answer, so per-learner parts are not empty.
signed_in.get("/learn/lessons/roofline-speed-of-light/")
anonymous = Client(HTTP_HOST="127.0.0.1")
views = {"home", "lesson_detail", "question_detail", "lab_detail", "review", "me", "serve"}
ANSWER = {"answer": "Prefill reads the whole prompt in one compute-bound pass, which sets TTFT; decode then "
          "writes one token per step and is bound by reading the weights and KV cache from memory."}

def send(browser, path, kind):
    if kind == "answer":
        return browser.post(path, ANSWER, HTTP_HX_REQUEST="true")
    return browser.get(path)

def cpu():
    t = os.times()
    return t.user + t.system

for label, (path, kind) in pages.items():
    browser = signed_in if kind else anonymous
    for _ in range(20):
        response = send(browser, path, kind)
        assert response.status_code == 200, (path, response.status_code)
    started = cpu()
    for _ in range(count):
        if miss:
            renew_learner_state(user_ids=[user.pk])
        send(browser, path, kind)
    cpu_ms = 1000 * (cpu() - started) / count
    profile = cProfile.Profile()
    profile.enable()
    for _ in range(count):
        if miss:
            renew_learner_state(user_ids=[user.pk])
        send(browser, path, kind)
    profile.disable()
    stats = pstats.Stats(profile)
    total = handler = 0.0
    shares = {}
    view_ms = 0.0
    for (filename, _line, name), (_cc, _nc, _tt, ct, _callers) in stats.stats.items():
        if filename.endswith("core/handlers/base.py") and name == "get_response":
            handler = max(handler, ct)
        if filename.endswith("django/test/client.py") and name == "request":
            total = max(total, ct)
        for category, suffix, function in categories:
            if filename.endswith(suffix) and name == function:
                shares[category] = max(shares.get(category, 0.0), ct)
        if name in views and "/django/" not in filename:
            view_ms = max(view_ms, ct)
    per = lambda seconds: 1000 * seconds / count
    rest = handler - view_ms
    print("PROFILE", label, "|", f"{cpu_ms:.2f}", "|", f"{per(handler):.2f}", "|",
          " | ".join(f"{per(shares.get(category, 0.0)):.2f}" for category, _s, _f in categories), "|",
          f"{per(view_ms):.2f}", "|", f"{per(max(rest, 0.0)):.2f}", "|", f"{stats.total_calls / count:.0f}", flush=True)
    if top:
        out = io.StringIO()
        pstats.Stats(profile, stream=out).sort_stats(sort).print_stats(top)
        print(out.getvalue())
"""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=200, help="requests per page and pass (default 200)")
    parser.add_argument("--top", type=int, default=0, help="also print the N functions with most own time")
    parser.add_argument("--sort", default="tottime", choices=("tottime", "cumulative"),
                        help="order of the --top functions: own time (default) or with what they call")
    parser.add_argument("--miss", action="store_true", help="render every signed-in request (no kept page)")
    parser.add_argument("--page", default="", help="only the pages whose label contains this text (e.g. 'answer')")
    parser.add_argument(
        "--postgres", metavar="URL", help="a database of the run's own on this PostgreSQL server (default: SQLite)"
    )
    args = parser.parse_args()
    stop_on_sigterm()
    grading_queue = f"grading-profile-{os.getpid()}"
    own_keys = [grading_queue, f"_kombu.binding.{grading_queue}", f"_kombu.binding_permanent.{grading_queue}"]
    with bench_site(name="profile", extra_redis_patterns=own_keys, postgres=args.postgres) as site:
        print("preparing a throwaway site (migrate, sync_content, collectstatic)…", flush=True)
        site.prepare(collectstatic=True)
        env = {
            **site.env,
            "GRADING_QUEUE": grading_queue,
            "GRADING_RATE_LIMIT_PER_MINUTE": "100000",
            "PROFILE_PAGES": repr({label: page for label, page in PAGES.items() if args.page in label}),
            "PROFILE_CATEGORIES": repr(CATEGORIES),
            "PROFILE_REQUESTS": str(args.requests),
            "PROFILE_TOP": str(args.top),
            "PROFILE_MISS": "1" if args.miss else "0",
            "PROFILE_SORT": args.sort,
        }
        done = subprocess.run([PYTHON, "-c", CHILD], cwd=ROOT, env=env, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            raise RuntimeError(f"the profiling child failed:\n{done.stdout}{done.stderr}")
    print(
        f"\n{args.requests} requests per page through Django's handler, one process"
        f"{', every signed-in one rendered (--miss)' if args.miss else ''}; ms per request "
        f"(split from cProfile, which inflates it; 'CPU' is measured without it); 'calls': Python function "
        f"calls per request, which unlike CPU time does not move with other load on the machine"
    )
    header = ["page", "CPU", "handler", *(label for label, _s, _f in CATEGORIES), "view", "rest", "calls"]
    print(" | ".join(header))
    for line in done.stdout.splitlines():
        if line.startswith("PROFILE "):
            print(line.removeprefix("PROFILE "))
        elif args.top:
            print(line)
    print(f"machine load average (1 min) {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs")
    return 0


if __name__ == "__main__":
    run_benchmark(main)
