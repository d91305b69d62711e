"""Load: page latency per page type, errors and lab runs completed while many learners use the
site at once and lab runs queue on one target, against a small baseline so the growth shows.

    python bench/load.py [--learners 100] [--baseline 10] [--seconds 60] [--runs 20] [--seed 1]
                         [--drain-seconds 60] [--json] [--postgres URL]

It builds a throwaway site (fresh PREFILL_VAR_DIR: migrate, sync_content, collectstatic; a cache
key prefix of its own in Redis; its database a SQLite file, as `make run` has, or with
``--postgres`` a database of its own on that PostgreSQL server, created and dropped by the run, as
a cohort's compose deployment has), serves it with gunicorn the way `make run` does (gthread, 2
workers x 4 threads, DEBUG=false), starts the scripted engine (TTFT 30 ms, then one token every
10 ms), registers it with `manage.py target add` and `target probe` as an operator would, and
starts one real Celery worker on that target's queue with concurrency 1, and one on the grading
queue (concurrency 1, GRADING_WORKER_NICENESS), as `make worker` does. The target's name and the
grading queue (GRADING_QUEUE) carry a random suffix, so both queues are this benchmark's own on
the shared Redis and no other worker can take its tasks.

Two phases on the same site, the baseline first, each with accounts of its own: N simulated
learners (an httpx.AsyncClient each, so a session cookie, a CSRF cookie and keep-alive
connections of its own) for ``--seconds``. Each learner loops: think 0.5-2 s (seeded random),
then one action picked with fixed weights: a lesson page, a question page, an answer to a
question (GET the question, think, POST the answer the way htmx does; a free-text answer comes
back "Marking your answer…" and the learner polls its mark sheet after the delay the pending
sheet's ``hx-trigger="load delay:<n>ms"`` names, 0.3-2 s, as htmx does, until the grading
worker's mark is in), the
review queue, an index page, a lab page, or marking a lesson done. ``--runs`` runs of the lab
ttft-vs-output-length (8 and 16 output tokens, 2 repeats each, 1 warm-up: 5 requests, 0.66 s of
engine time) are owned by learners picked at random (round-robin when there are fewer learners
than runs, each submitting its next run when the previous one ends): an owner opens the lab
page, POSTs the real run form, follows the redirect to the run page and polls
GET /labs/runs/<id>/status/ with the HX-Request header every second, as the page's
``hx-trigger="every 1s"`` does, until the server answers 204 + HX-Refresh; then it loads the
run page once more (the results) and goes back to browsing. At the end of the window learners
stop; owners of unfinished runs keep polling for at most ``--drain-seconds``.

Latency is client-side, from sending the request to the last byte of the body, for requests
started inside the window (polls during the drain are counted for errors only). An answer has
three rows: the submit (the POST alone), each mark-sheet poll, and the time to mark (from
sending the POST to the end of the poll that brought the graded sheet; the POST alone for a
numeric or multiple-choice answer, graded in the request), for answers submitted inside the
window, however long into the drain their mark took. An error is
any status outside 2xx/3xx, any transport error (by exception name), an answer that the htmx
path returns with 200 but carries the rate-limit message (counted as a 429: htmx swaps only 2xx
bodies, so the view answers 200 there) or a form error. Runs completed are read from the
database at the end. The machine's load average is printed before and after: these figures are
taken on a shared 2-core box, where the load generator, gunicorn, the worker and the engine all
compete for the same cores; the load generator's own event-loop lag is printed so its share of
the tail is visible.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import random
import re
import sys
import time
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench._server import (
    PYTHON,
    BenchSite,
    Child,
    bench_site,
    free_port,
    percentile,
    process_tree_cpu_s,
    run_benchmark,
    stop_on_sigterm,
    wait_for_log_line,
)

ENGINE_TTFT_MS = 30.0
ENGINE_GAP_MS = 10.0
ENGINE_FLAGS = ["--model", "scripted", "--ttft-ms", str(ENGINE_TTFT_MS), "--gap-ms", str(ENGINE_GAP_MS)]
RUN_LAB = "ttft-vs-output-length"
# Inside the lab's bounds (max_tokens 1-4096, prompt_tokens 16-4096, repeats 1-20) and small
# enough that 20 runs one after another fit in a 60 s window with room for the worker's own
# per-run work (calibration, summary, pre-drawn charts).
RUN_FORM_VALUES = {"max_tokens": "8, 16", "prompt_tokens": "16", "repeats": "2"}
THINK_S = (0.5, 2.0)
# The run page polls with hx-trigger="every 1s".
POLL_INTERVAL_S = 1.0
# A pending mark sheet polls with hx-trigger="load delay:<n>ms", n set by the server (0.3-2 s).
PENDING_SHEET = re.compile(r'data-testid="mark-sheet-pending" hx-get="([^"]+)" hx-trigger="load delay:(\d+)ms"')
REQUEST_TIMEOUT_S = 30.0
# gunicorn closes idle keep-alive connections after 2 s (its default); a client reusing one at
# that moment gets "server disconnected", which a browser retries silently. Expiring them sooner
# on our side measures the pages, not that race.
KEEPALIVE_EXPIRY_S = 1.0
EXAMPLES_KEPT = 5
RATE_LIMIT_TEXT = "You have sent a lot of answers"
RUN_LOCATION = re.compile(r"^/labs/runs/(\d+)/$")

# Page types, in the order the tables print them.
HOME = "home (first page)"
INDEX = "index pages"
LESSON = "lesson page"
LESSON_DONE = "lesson done (POST)"
QUESTION = "question page (GET)"
ANSWER = "answer submit (POST)"
MARK_POLL = "mark sheet poll"
TIME_TO_MARK = "answer: time to mark"
REVIEW = "review queue"
LAB = "lab page"
RUN_SUBMIT = "run submit (POST)"
RUN_PAGE = "run page (live)"
RUN_POLL = "run status poll"
RUN_RESULTS = "run page (results)"
PAGE_TYPES = [
    HOME,
    INDEX,
    LESSON,
    LESSON_DONE,
    QUESTION,
    ANSWER,
    MARK_POLL,
    TIME_TO_MARK,
    REVIEW,
    LAB,
    RUN_SUBMIT,
    RUN_PAGE,
    RUN_POLL,
    RUN_RESULTS,
]

# What a learner does next, by weight: mostly reading and practising, now and then a lab page.
ACTION_WEIGHTS = {LESSON: 35, QUESTION: 20, ANSWER: 20, INDEX: 8, REVIEW: 5, LAB: 7, LESSON_DONE: 5}


@dataclass(frozen=True)
class QuestionTarget:
    url: str
    answer: str


@dataclass(frozen=True)
class Content:
    """URLs and answers the learners pick from, read from the synced content."""

    lessons: list[str]
    questions: list[QuestionTarget]
    labs: list[str]
    indexes: list[str]
    run_lab_url: str
    run_form: dict[str, str]


@dataclass
class Sample:
    page: str
    started_s: float
    elapsed_ms: float
    in_window: bool


@dataclass
class PhaseRecord:
    """Everything one phase measured; filled by the learners, read by the report."""

    name: str
    learners: int
    started: float
    window_end: float
    drain_end: float
    samples: list[Sample] = field(default_factory=list)
    errors: Counter = field(default_factory=Counter)
    examples: list[str] = field(default_factory=list)
    submitted_run_ids: list[int] = field(default_factory=list)
    submit_failures: int = 0
    loop_lag_ms: list[float] = field(default_factory=list)

    def error(self, *, page: str, method: str, path: str, kind: str, detail: str = "") -> None:
        self.errors[kind] += 1
        if len(self.examples) < EXAMPLES_KEPT:
            self.examples.append(f"{page}: {method} {path} -> {kind}{f' ({detail})' if detail else ''}")


@dataclass
class Learner:
    http: httpx.AsyncClient
    rng: random.Random
    record: PhaseRecord
    content: Content
    runs_to_submit: int
    csrf_token: str = ""

    def in_window(self) -> bool:
        return time.monotonic() < self.record.window_end

    async def think(self) -> None:
        await asyncio.sleep(self.rng.uniform(*THINK_S))

    async def request(
        self,
        *,
        page: str,
        method: str,
        path: str,
        data: dict[str, str] | None = None,
        htmx: bool = False,
        check: Callable[[httpx.Response], str] | None = None,
    ) -> httpx.Response | None:
        """One timed request; returns None after a transport error. ``check`` names what is
        wrong with a 2xx body ("" when nothing is)."""
        headers = {"HX-Request": "true"} if htmx else {}
        if method == "POST":
            # As htmx sends it (base.html's hx-headers) and as Django's CSRF check accepts it.
            headers["X-CSRFToken"] = self.csrf_token
        started = time.monotonic()
        try:
            response = await self.http.request(method, path, data=data, headers=headers)
        except httpx.HTTPError as error:
            self.record.error(page=page, method=method, path=path, kind=type(error).__name__, detail=str(error)[:120])
            return None
        elapsed_ms = (time.monotonic() - started) * 1000
        self.record.samples.append(
            Sample(
                page=page,
                started_s=started - self.record.started,
                elapsed_ms=elapsed_ms,
                in_window=started < self.record.window_end,
            )
        )
        if not 200 <= response.status_code < 400:
            self.record.error(page=page, method=method, path=path, kind=f"HTTP {response.status_code}")
        elif check is not None and (problem := check(response)):
            self.record.error(page=page, method=method, path=path, kind=problem)
        return response

    async def start(self) -> None:
        """The first page sets the CSRF cookie (base.html uses the token for logged-in users)."""
        await self.request(page=HOME, method="GET", path="/")
        self.csrf_token = self.http.cookies.get("csrftoken", "")
        if not self.csrf_token:
            self.record.error(page=HOME, method="GET", path="/", kind="no CSRF cookie")

    async def browse_once(self, *, action: str) -> None:
        content, rng = self.content, self.rng
        if action == LESSON:
            await self.request(page=LESSON, method="GET", path=rng.choice(content.lessons))
        elif action == LESSON_DONE:
            lesson = rng.choice(content.lessons)
            await self.request(page=LESSON, method="GET", path=lesson)
            await self.think()
            await self.request(page=LESSON_DONE, method="POST", path=f"{lesson}done/", data={"done": "1"}, htmx=True)
        elif action == QUESTION:
            await self.request(page=QUESTION, method="GET", path=rng.choice(content.questions).url)
        elif action == ANSWER:
            question = rng.choice(content.questions)
            await self.request(page=QUESTION, method="GET", path=question.url)
            await self.think()
            started = time.monotonic()
            response = await self.request(
                page=ANSWER,
                method="POST",
                path=question.url,
                data={"answer": question.answer, "follow_up": ""},
                htmx=True,
                check=answer_problem,
            )
            if response is not None and response.status_code == 200 and not answer_problem(response):
                await self.wait_for_mark(response=response, started=started)
        elif action == INDEX:
            await self.request(page=INDEX, method="GET", path=rng.choice(content.indexes))
        elif action == REVIEW:
            await self.request(page=REVIEW, method="GET", path="/practice/review/")
        elif action == LAB:
            await self.request(page=LAB, method="GET", path=rng.choice(content.labs))

    async def wait_for_mark(self, *, response: httpx.Response, started: float) -> None:
        """Poll the pending mark sheet as htmx does until the graded one comes; record the time
        from the submit to the mark (the submit alone when it came back graded)."""
        record = self.record
        pending = PENDING_SHEET.search(response.text)
        while pending is not None:
            delay_s = int(pending.group(2)) / 1000
            if time.monotonic() + delay_s > record.drain_end:
                record.error(
                    page=TIME_TO_MARK, method="GET", path=pending.group(1), kind="no mark before the drain ended"
                )
                return
            await asyncio.sleep(delay_s)
            poll = await self.request(page=MARK_POLL, method="GET", path=pending.group(1), htmx=True)
            if poll is None or poll.status_code != 200:
                return
            pending = PENDING_SHEET.search(poll.text)
        record.samples.append(
            Sample(
                page=TIME_TO_MARK,
                started_s=started - record.started,
                elapsed_ms=(time.monotonic() - started) * 1000,
                in_window=started < record.window_end,
            )
        )

    async def submit_and_watch_run(self) -> None:
        """Open the lab, submit the run form, then poll the live panel as the run page does."""
        record, lab_url = self.record, self.content.run_lab_url
        await self.request(page=LAB, method="GET", path=lab_url)
        await self.think()
        response = await self.request(
            page=RUN_SUBMIT,
            method="POST",
            path=lab_url,
            data={**self.content.run_form, "csrfmiddlewaretoken": self.csrf_token},
            check=lambda response: "" if response.status_code == 302 else "run form not accepted",
        )
        match = RUN_LOCATION.match(response.headers.get("location", "")) if response is not None else None
        if match is None:
            record.submit_failures += 1
            return
        run_id = int(match.group(1))
        record.submitted_run_ids.append(run_id)
        run_url = f"/labs/runs/{run_id}/"
        await self.request(page=RUN_PAGE, method="GET", path=run_url)
        # htmx fires "every 1s" on a timer, whatever the previous poll took.
        next_poll = time.monotonic() + POLL_INTERVAL_S
        while next_poll < record.drain_end:
            await asyncio.sleep(max(0.0, next_poll - time.monotonic()))
            next_poll += POLL_INTERVAL_S
            poll = await self.request(page=RUN_POLL, method="GET", path=f"{run_url}status/", htmx=True)
            if poll is not None and poll.status_code == 204 and poll.headers.get("hx-refresh") == "true":
                await self.request(page=RUN_RESULTS, method="GET", path=run_url)
                return

    async def live(self) -> None:
        await asyncio.sleep(self.rng.uniform(0, THINK_S[1]))  # learners do not all arrive at once
        await self.start()
        actions, weights = list(ACTION_WEIGHTS), list(ACTION_WEIGHTS.values())
        while self.in_window():
            if self.runs_to_submit and self.csrf_token:
                self.runs_to_submit -= 1
                await self.submit_and_watch_run()
                continue
            await self.think()
            if self.in_window():
                await self.browse_once(action=self.rng.choices(actions, weights)[0])


def answer_problem(response: httpx.Response) -> str:
    """htmx swaps only 2xx bodies, so the view answers 200 with form errors; read them."""
    if response.status_code != 200:
        return ""
    if RATE_LIMIT_TEXT in response.text:
        return "HTTP 429 (rate limited, in htmx's 200)"
    if 'class="errorlist"' in response.text:
        return "answer rejected (form error in htmx's 200)"
    if 'id="feedback"' not in response.text:
        return "answer not stored (no mark sheet, pending or graded)"
    return ""


def load_content(*, target_pk: int) -> Content:
    from courses.models import Lesson
    from labs.forms import RunForm
    from labs.models import Lab
    from questions.models import Question

    questions = []
    for question in Question.objects.live():
        numeric = question.spec.get("numeric") or {}
        if question.kind == Question.Kind.MULTIPLE_CHOICE:
            answer = "0"
        elif question.kind == Question.Kind.NUMERIC and "value" in numeric:
            answer = f"{numeric['value']:g} {numeric.get('unit', '')}".strip()
        else:
            # The model answer: the length and vocabulary of a good answer, so grading does the
            # work a real one costs.
            answer = str(question.spec.get("model_answer") or "The KV cache grows with batch and context.")[:4000]
        questions.append(QuestionTarget(url=question.get_absolute_url(), answer=answer))
    lab = Lab.objects.get(slug=RUN_LAB)
    form_data = {"target": str(target_pk), "prediction": "Load benchmark run."}
    for param in lab.spec.get("params", []):
        default = param["default"]
        form_data[f"param_{param['name']}"] = (
            ", ".join(map(str, default)) if isinstance(default, list) else str(default)
        )
    form_data.update({f"param_{name}": value for name, value in RUN_FORM_VALUES.items()})
    # The same form the lab page validates with, so a bad choice fails here, not 20 times later.
    form = RunForm(data=form_data, lab=lab)
    if not form.is_valid():
        raise RuntimeError(f"the run parameters for {RUN_LAB} are invalid: {form.errors.as_text()}")
    return Content(
        lessons=[lesson.get_absolute_url() for lesson in Lesson.objects.live()],
        questions=questions,
        labs=[lab.get_absolute_url() for lab in Lab.objects.live()],
        indexes=["/learn/", "/practice/", "/labs/"],
        run_lab_url=lab.get_absolute_url(),
        run_form=form_data,
    )


def expected_engine_s(*, target: Any, content: Content) -> tuple[float, int]:
    """Engine time of one run (its requests run one after another) and its request count."""
    from labs.forms import RunForm
    from labs.models import Lab
    from labs.plans import build_steps
    from labs.targets import target_limits

    lab = Lab.objects.get(slug=RUN_LAB)
    form = RunForm(data=content.run_form, lab=lab)
    form.is_valid()
    steps = build_steps(
        plan=lab.spec.get("plan", {}), params=form.params, models=target.model_names, limits=target_limits(target)
    )
    seconds, requests = 0.0, 0
    for step in steps:
        count = step.spec.requests + step.spec.warmup
        requests += count
        seconds += count * (ENGINE_TTFT_MS + (step.spec.max_tokens - 1) * ENGINE_GAP_MS) / 1000
    return seconds, requests


def session_key_for(*, user: Any) -> str:
    from django.conf import settings
    from django.test import Client

    browser = Client()
    # Named, because the first configured backend may be one (django-axes) that only guards
    # logins and cannot load a user back from a session.
    browser.force_login(user, backend="django.contrib.auth.backends.ModelBackend")
    return browser.cookies[settings.SESSION_COOKIE_NAME].value


def sessions_for(*, prefix: str, count: int) -> list[str]:
    """Accounts and logged-in sessions made through Django itself.

    Logging 100 learners in through the form would spend tens of CPU-seconds on password
    hashing (PBKDF2) on this 2-core box before anything is measured; an unusable password and
    ``force_login`` give the same session a login would.
    """
    from django.contrib.auth import get_user_model

    return [
        session_key_for(user=get_user_model().objects.create_user(username=f"{prefix}-{index:03d}", password=None))
        for index in range(count)
    ]


async def watch_loop_lag(*, record: PhaseRecord, stop: asyncio.Event) -> None:
    """How late the load generator's own event loop wakes up: its share of every latency."""
    while not stop.is_set():
        asked = time.monotonic()
        await asyncio.sleep(0.05)
        record.loop_lag_ms.append((time.monotonic() - asked - 0.05) * 1000)


def owner_plan(*, learners: int, runs: int, rng: random.Random) -> list[int]:
    """Runs per learner: one each for ``runs`` learners picked at random, or round-robin (so
    some own several, one after another) when there are fewer learners than runs."""
    plan = [0] * learners
    order = rng.sample(range(learners), learners)
    for index in range(runs):
        plan[order[index % learners]] += 1
    return plan


async def run_phase(
    *,
    name: str,
    session_keys: list[str],
    seconds: float,
    drain_s: float,
    runs: int,
    seed: int,
    base_url: str,
    content: Content,
) -> PhaseRecord:
    from django.conf import settings

    learners = len(session_keys)
    rng = random.Random(f"{seed}-{name}")
    plan = owner_plan(learners=learners, runs=runs, rng=rng)
    now = time.monotonic()
    record = PhaseRecord(
        name=name, learners=learners, started=now, window_end=now + seconds, drain_end=now + seconds + drain_s
    )
    stop = asyncio.Event()
    lag = asyncio.create_task(watch_loop_lag(record=record, stop=stop))
    limits = httpx.Limits(max_connections=4, max_keepalive_connections=2, keepalive_expiry=KEEPALIVE_EXPIRY_S)
    async with contextlib.AsyncExitStack() as stack:
        clients = [
            await stack.enter_async_context(
                httpx.AsyncClient(
                    base_url=base_url,
                    cookies={settings.SESSION_COOKIE_NAME: key},
                    timeout=REQUEST_TIMEOUT_S,
                    limits=limits,
                    follow_redirects=False,
                )
            )
            for key in session_keys
        ]
        people = [
            Learner(
                http=client,
                rng=random.Random(f"{seed}-{name}-{index}"),
                record=record,
                content=content,
                runs_to_submit=plan[index],
            )
            for index, client in enumerate(clients)
        ]
        tasks: list[Awaitable[None]] = [person.live() for person in people]
        # Every learner stops by itself at the window's or the drain's end; this bound only
        # catches a bug, never cuts a normal phase short.
        hard_limit_s = seconds + drain_s + 2 * REQUEST_TIMEOUT_S + 10
        try:
            await asyncio.wait_for(asyncio.gather(*tasks), timeout=hard_limit_s)
        except TimeoutError:
            record.error(page="phase", method="-", path="-", kind="phase overran its hard limit")
    stop.set()
    await lag
    return record


def run_outcomes(*, run_ids: list[int]) -> dict[str, Any]:
    from labs.models import LabRun

    runs = list(LabRun.objects.filter(pk__in=run_ids))
    statuses = Counter(run.status for run in runs)
    durations = [
        (run.finished_at - run.started_at).total_seconds() for run in runs if run.finished_at and run.started_at
    ]
    waits = [(run.started_at - run.created_at).total_seconds() for run in runs if run.started_at]
    first_created = min((run.created_at for run in runs), default=None)
    last_finished = max((run.finished_at for run in runs if run.finished_at), default=None)
    failures = [f"run {run.pk}: {run.status}: {run.error[:120]}" for run in runs if run.status == LabRun.Status.FAILED]
    return {
        "submitted": len(runs),
        "succeeded": statuses.get(LabRun.Status.SUCCEEDED, 0),
        "failed": statuses.get(LabRun.Status.FAILED, 0),
        "cancelled": statuses.get(LabRun.Status.CANCELLED, 0),
        "queued": statuses.get(LabRun.Status.QUEUED, 0),
        "running": statuses.get(LabRun.Status.RUNNING, 0),
        "run_duration_p50_s": percentile(values=durations, fraction=0.5) if durations else None,
        "run_duration_max_s": max(durations) if durations else None,
        "queue_wait_max_s": max(waits) if waits else None,
        "first_submit_to_last_finish_s": (last_finished - first_created).total_seconds()
        if first_created and last_finished
        else None,
        "failures": failures[:EXAMPLES_KEPT],
    }


def settle_runs(*, run_ids: list[int], timeout_s: float) -> int:
    """Before the next phase: cancel what is still queued and let a running run end, so one
    phase's runs do not load the next. Returns how many were cancelled."""
    from labs.models import LabRun
    from labs.services import cancel_run

    cancelled = 0
    for run in LabRun.objects.filter(pk__in=run_ids, status__in=LabRun.ACTIVE):
        cancel_run(run=run)
        cancelled += 1
    deadline = time.monotonic() + timeout_s
    while LabRun.objects.filter(pk__in=run_ids, status__in=LabRun.ACTIVE).exists() and time.monotonic() < deadline:
        time.sleep(0.2)
    return cancelled


def settle_marks(*, timeout_s: float) -> int:
    """Before timing (and the next phase): let the grading worker finish what is queued, so one
    phase's backlog does not load the next. Returns how many were still waiting at the end."""
    from questions.models import Attempt

    pending = Attempt.objects.filter(grade_status=Attempt.GradeStatus.PENDING)
    deadline = time.monotonic() + timeout_s
    while pending.exists() and time.monotonic() < deadline:
        time.sleep(0.2)
    return pending.count()


def summarise(*, record: PhaseRecord, runs: dict[str, Any], server_cpu_s: float, seconds: float) -> dict[str, Any]:
    pages: dict[str, dict[str, float]] = {}
    for page in PAGE_TYPES:
        values = [s.elapsed_ms for s in record.samples if s.page == page and s.in_window]
        if values:
            pages[page] = {
                "n": len(values),
                "p50_ms": round(percentile(values=values, fraction=0.50), 1),
                "p95_ms": round(percentile(values=values, fraction=0.95), 1),
                "p99_ms": round(percentile(values=values, fraction=0.99), 1),
            }
    in_window = sum(1 for s in record.samples if s.in_window)
    lag = record.loop_lag_ms or [0.0]
    return {
        "learners": record.learners,
        "requests_in_window": in_window,
        "requests_per_s": round(in_window / seconds, 1),
        "requests_in_drain": len(record.samples) - in_window,
        "server_cpu_ms_per_request": round(1000 * server_cpu_s / max(1, len(record.samples)), 2),
        "client_loop_lag_ms": {
            "p99": round(percentile(values=lag, fraction=0.99), 1),
            "max": round(max(lag), 1),
        },
        "pages": pages,
        "errors": dict(record.errors),
        "error_total": sum(record.errors.values()),
        "error_examples": record.examples,
        "rate_limited": sum(count for kind, count in record.errors.items() if "429" in kind),
        "run_submit_failures": record.submit_failures,
        "runs": runs,
    }


def machine_load() -> dict[str, Any]:
    one, five, fifteen = os.getloadavg()
    return {"load_1m": round(one, 2), "load_5m": round(five, 2), "load_15m": round(fifteen, 2), "cpus": os.cpu_count()}


def format_report(*, report: dict[str, Any]) -> str:
    base, load = report["phases"]["baseline"], report["phases"]["load"]
    lines = []
    header = f"{base['learners']} learners"
    header_load = f"{load['learners']} learners"
    lines.append(f"{'':24} {header:^32}   {header_load:^32}   p95")
    lines.append(
        f"{'page type':24} {'n':>6} {'p50':>8} {'p95':>8} {'p99':>8}   "
        + f"{'n':>6} {'p50':>8} {'p95':>8} {'p99':>8}   growth"
    )
    for page in PAGE_TYPES:
        a, b = base["pages"].get(page), load["pages"].get(page)
        if not a and not b:
            continue

        def cells(row: dict[str, float] | None) -> str:
            if not row:
                return f"{'-':>6} {'-':>8} {'-':>8} {'-':>8}"
            return f"{row['n']:>6} {row['p50_ms']:>8.1f} {row['p95_ms']:>8.1f} {row['p99_ms']:>8.1f}"

        growth = report["growth_p95"].get(page)
        lines.append(f"{page:24} {cells(a)}   {cells(b)}   {f'x{growth:.1f}' if growth else '-'}")
    lines.append("(latency in ms, client-side, requests started inside the window)")
    for phase in (base, load):
        runs = phase["runs"]
        lines.append("")
        lines.append(
            f"{phase['learners']} learners: {phase['requests_in_window']:,} requests in the window "
            f"({phase['requests_per_s']} req/s), {phase['requests_in_drain']} more in the drain (polls, results); "
            f"gunicorn CPU {phase['server_cpu_ms_per_request']} ms/request; load generator's loop lag "
            f"p99 {phase['client_loop_lag_ms']['p99']} ms, max {phase['client_loop_lag_ms']['max']} ms"
        )
        verdict = "none (target met)" if not phase["error_total"] else f"{phase['error_total']} (target: none)"
        lines.append(f"  errors: {verdict}")
        for kind, count in sorted(phase["errors"].items(), key=lambda item: -item[1]):
            lines.append(f"    {count:>5} x {kind}")
        for example in phase["error_examples"]:
            lines.append(f"    e.g. {example}")
        if phase["rate_limited"]:
            lines.append(
                f"  {phase['rate_limited']} answers hit GRADING_RATE_LIMIT_PER_MINUTE (per learner per minute)"
            )
        wanted = report["runs_requested"]
        all_done = runs["succeeded"] == wanted
        lines.append(
            f"  runs: {runs['succeeded']} of {wanted} succeeded ({'target met' if all_done else 'target MISSED'}); "
            f"submitted {runs['submitted']}, failed {runs['failed']}, still queued {runs['queued']}, "
            f"running {runs['running']}, cancelled {runs['cancelled']}, form rejected {phase['run_submit_failures']}"
        )
        if runs["run_duration_p50_s"] is not None:
            lines.append(
                f"  run duration p50 {runs['run_duration_p50_s']:.2f} s, max {runs['run_duration_max_s']:.2f} s; "
                f"longest queue wait {runs['queue_wait_max_s']:.1f} s; first submit to last finish "
                f"{runs['first_submit_to_last_finish_s'] or 0:.1f} s (window {report['seconds']:.0f} s "
                f"+ drain up to {report['drain_seconds']:.0f} s)"
            )
        for failure in runs["failures"]:
            lines.append(f"    {failure}")
    lines.append("")
    engine = report["engine"]
    lines.append(
        f"each run: {engine['requests_per_run']} requests, {engine['engine_s_per_run']:.2f} s of engine time "
        f"(TTFT {ENGINE_TTFT_MS:.0f} ms, a token every {ENGINE_GAP_MS:.0f} ms); "
        f"{report['runs_requested']} runs = {report['runs_requested'] * engine['engine_s_per_run']:.1f} s "
        "plus the worker's per-run work"
    )
    before, after = report["machine_before"], report["machine_after"]
    lines.append(
        f"machine: {before['cpus']} CPUs; load average (1/5/15 min) before {before['load_1m']}/{before['load_5m']}/"
        f"{before['load_15m']}, after {after['load_1m']}/{after['load_5m']}/{after['load_15m']}"
    )
    return "\n".join(lines)


def warm_up(*, base_url: str, content: Content, session_key: str, run_url: str, parallel: int) -> None:
    """Every gunicorn thread imports, compiles its templates and opens its database connection,
    and every process loads the question bank (about a second, once) and matplotlib, before
    anything is timed."""
    from django.conf import settings

    paths = ["/", *content.indexes, "/practice/review/", content.lessons[0], content.run_lab_url, run_url]

    async def one(index: int) -> None:
        question = content.questions[index % len(content.questions)]
        async with httpx.AsyncClient(
            base_url=base_url, cookies={settings.SESSION_COOKIE_NAME: session_key}, timeout=120.0
        ) as http:
            for path in [*paths, question.url]:
                response = await http.get(path)
                if response.status_code >= 400:
                    raise RuntimeError(f"warm-up: GET {path} answered {response.status_code}")
            token = http.cookies.get("csrftoken", "")
            response = await http.post(
                question.url,
                data={"answer": question.answer, "follow_up": ""},
                headers={"HX-Request": "true", "X-CSRFToken": token},
            )
            if response.status_code != 200:
                raise RuntimeError(f"warm-up: POST {question.url} answered {response.status_code}")

    async def all_of_them() -> None:
        await asyncio.gather(*(one(index) for index in range(parallel)))

    asyncio.run(all_of_them())


def warm_worker(*, target: Any, content: Content, worker: Child) -> Any:
    """One untimed run, so the worker's first-run imports and the ETA's history are in place.
    Returns the run (its owner warms the pages up)."""
    from django.contrib.auth import get_user_model

    from labs.forms import RunForm
    from labs.models import Lab, LabRun
    from labs.services import submit_run

    lab = Lab.objects.get(slug=RUN_LAB)
    form = RunForm(data=content.run_form, lab=lab)
    form.is_valid()
    user = get_user_model().objects.create_user(username="load-warm-up", password=None)
    run = submit_run(user=user, lab=lab, target=target, params=form.params, prediction="Warm-up.")
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        run.refresh_from_db()
        if not run.is_active:
            if run.status != LabRun.Status.SUCCEEDED:
                raise RuntimeError(f"the warm-up run ended {run.status}: {run.error}")
            return run
        if worker.process.poll() is not None:
            raise RuntimeError(f"the worker exited with code {worker.process.returncode}:\n{worker.log_tail()}")
        time.sleep(0.1)
    raise RuntimeError(f"the warm-up run is still {run.status} after 120 s; the worker's log:\n{worker.log_tail()}")


def measure(*, args: argparse.Namespace, site: BenchSite, log: Callable[[str], None]) -> dict[str, Any]:
    site.prepare(collectstatic=True)
    site.start_scripted_target(name=args.target_name, engine_flags=ENGINE_FLAGS)
    site.manage("target", "probe", args.target_name)

    os.environ.update(site.env)
    import django

    django.setup()
    from labs.models import InferenceTarget

    target = InferenceTarget.objects.get(name=args.target_name)
    if target.queue_name != args.queue:
        raise RuntimeError(f"target queue is {target.queue_name}, expected {args.queue}")
    celery = [PYTHON, "-m", "celery", "-A", "config", "worker"]
    worker = site.children.start(
        name="worker",
        # INFO, for the "ready." line this waits for; as `make worker` runs it.
        argv=[*celery, "-Q", args.queue, "-c", "1", "-n", f"{args.queue}@%h", "--loglevel", "INFO"],
        env=site.env,
    )
    wait_for_log_line(child=worker, needle=" ready.", timeout_s=60)
    grader = site.children.start(
        name="grading-worker",
        # As scripts/services.py starts it; it loads the sentence model before " ready.".
        argv=[*celery, "-Q", args.grading_queue, "-c", "1", "-n", f"{args.grading_queue}@%h", "--loglevel", "INFO"],
        env=site.env,
    )
    wait_for_log_line(child=grader, needle=" ready.", timeout_s=120)
    web_port = free_port()
    server = site.start_gunicorn(port=web_port)
    base_url = f"http://127.0.0.1:{web_port}"

    content = load_content(target_pk=target.pk)
    engine_s, requests_per_run = expected_engine_s(target=target, content=content)
    log("warming up gunicorn and the worker (untimed)…")
    warm_run = warm_worker(target=target, content=content, worker=worker)
    warm_up(
        base_url=base_url,
        content=content,
        session_key=session_key_for(user=warm_run.user),
        run_url=warm_run.get_absolute_url(),
        parallel=8,
    )
    if left := settle_marks(timeout_s=120):
        raise RuntimeError(f"the grading worker left {left} warm-up answers unmarked after 120 s:\n{grader.log_tail()}")

    report: dict[str, Any] = {
        "command": " ".join(["python", "bench/load.py", *sys.argv[1:]]),
        "seconds": args.seconds,
        "drain_seconds": args.drain_seconds,
        "runs_requested": args.runs,
        "seed": args.seed,
        "engine": {"requests_per_run": requests_per_run, "engine_s_per_run": round(engine_s, 3)},
        "machine_before": machine_load(),
        "phases": {},
    }
    for phase, learners in (("baseline", args.baseline), ("load", args.learners)):
        log(f"{phase}: {learners} learners for {args.seconds:.0f} s, {args.runs} runs queued…")
        cpu_before = process_tree_cpu_s(pid=server.process.pid)
        # Made before the loop starts: the ORM is synchronous and must not run inside it.
        session_keys = sessions_for(prefix=f"load-{phase}", count=learners)
        record = asyncio.run(
            run_phase(
                name=phase,
                session_keys=session_keys,
                seconds=args.seconds,
                drain_s=args.drain_seconds,
                runs=args.runs,
                seed=args.seed,
                base_url=base_url,
                content=content,
            )
        )
        server_cpu_s = process_tree_cpu_s(pid=server.process.pid) - cpu_before
        site.children.check_alive()
        runs = run_outcomes(run_ids=record.submitted_run_ids)
        report["phases"][phase] = summarise(record=record, runs=runs, server_cpu_s=server_cpu_s, seconds=args.seconds)
        cancelled = settle_runs(run_ids=record.submitted_run_ids, timeout_s=30)
        if cancelled:
            log(f"{phase}: cancelled {cancelled} unfinished runs before going on")
        if unmarked := settle_marks(timeout_s=120):
            log(f"{phase}: {unmarked} answers still unmarked 120 s after the drain")
    report["machine_after"] = machine_load()
    base, load = report["phases"]["baseline"]["pages"], report["phases"]["load"]["pages"]
    report["growth_p95"] = {
        page: round(load[page]["p95_ms"] / base[page]["p95_ms"], 2)
        for page in PAGE_TYPES
        if page in base and page in load and base[page]["p95_ms"] > 0
    }
    return report


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--learners", type=int, default=100, help="simulated learners under load (default 100)")
    parser.add_argument("--baseline", type=int, default=10, help="simulated learners in the baseline (default 10)")
    parser.add_argument("--seconds", type=float, default=60.0, help="length of each phase's window (default 60)")
    parser.add_argument("--runs", type=int, default=20, help="lab runs queued in each phase (default 20)")
    parser.add_argument(
        "--drain-seconds", type=float, default=60.0, help="how long owners may poll after the window (default 60)"
    )
    parser.add_argument("--seed", type=int, default=1, help="seed of the learners' choices (default 1)")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    parser.add_argument("--keep", action="store_true", help="keep the state directory and the children's logs")
    parser.add_argument(
        "--postgres",
        metavar="URL",
        help="serve from a database of the run's own on this PostgreSQL server, as a cohort's deployment does "
        "(e.g. postgres://postgres@127.0.0.1:5432/postgres; created and dropped here); default: SQLite, as make run",
    )
    args = parser.parse_args()
    if min(args.learners, args.baseline) < 1 or args.runs < 0 or args.seconds <= 0 or args.drain_seconds < 0:
        parser.error("--learners and --baseline must be at least 1, --runs at least 0, --seconds above 0")
    if args.learners > 500 or args.seconds > 600:
        parser.error("at most 500 learners and 600 s: this is a benchmark for one small machine")
    stop_on_sigterm()
    suffix = os.urandom(3).hex()
    args.target_name = f"Load {suffix}"
    args.queue = f"target-load-{suffix}"
    args.grading_queue = f"grading-load-{suffix}"

    def log(message: str) -> None:
        print(message, file=sys.stderr if args.json else sys.stdout, flush=True)

    log(f"machine before: {machine_load()}")
    log("preparing a throwaway site (migrate, sync_content, collectstatic)…")
    # The queue's list empties itself; kombu's two binding sets for its exchange are ours to remove.
    own_keys = [
        key
        for queue in (args.queue, args.grading_queue)
        for key in (queue, f"_kombu.binding.{queue}", f"_kombu.binding_permanent.{queue}")
    ]
    with bench_site(name="load", keep=args.keep, extra_redis_patterns=own_keys, postgres=args.postgres) as site:
        site.env["GRADING_QUEUE"] = args.grading_queue  # gunicorn sends there, its worker takes from there
        report = measure(args=args, site=site, log=log)
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        print()
        print(format_report(report=report))
    return 0


if __name__ == "__main__":
    run_benchmark(main)
