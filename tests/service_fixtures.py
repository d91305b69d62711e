"""Real parts for tests: the site under gunicorn, a scripted engine process, the local llama.cpp
engine, and Celery worker and beat processes, all sharing the test database and a private Redis."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from django.db import connection

from config.celery import app as celery_app
from scripts.services import web_command
from tests.conftest import ROOT, free_port

OUTPUT = ROOT / "test-output"
CELERY = [sys.executable, "-m", "celery", "-A", "config"]


def worker_database_url() -> str:
    settings = connection.settings_dict
    if settings["ENGINE"].endswith("sqlite3"):
        return f"sqlite:///{Path(settings['NAME']).resolve()}"
    user = settings.get("USER") or "postgres"
    password = f":{settings['PASSWORD']}" if settings.get("PASSWORD") else ""
    host, port = settings.get("HOST") or "127.0.0.1", settings.get("PORT") or 5432
    return f"postgres://{user}{password}@{host}:{port}/{settings['NAME']}"


@pytest.fixture
def scripted_engine():
    """Start `python -m workers.measure.scripted_engine` with the given options; stops them all."""
    processes: list[subprocess.Popen] = []

    def start(*args: str) -> str:
        port = free_port()
        process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "workers.measure.scripted_engine",
                "--port",
                str(port),
                "--model",
                "scripted",
                *args,
            ],
            cwd=ROOT,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        processes.append(process)
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            try:
                if httpx.get(f"{url}/v1/models", timeout=0.5).status_code == 200:
                    return url
            except httpx.HTTPError:
                time.sleep(0.05)
        pytest.fail("scripted engine did not start")

    yield start
    for process in processes:
        process.terminate()
        process.wait(timeout=10)


@pytest.fixture
def broker(private_redis):
    """Point this process's Celery app at a private Redis, so tests never touch a real queue."""
    previous = celery_app.conf.broker_url
    _switch_broker(private_redis["url"])
    yield private_redis
    _switch_broker(previous)


def _switch_broker(url: str) -> None:
    """Drop the cached connection pools so the next publish connects to `url`.

    Celery's connection and producer pools live in kombu's process-wide registries, keyed by the
    broker's address: closing them without emptying the registries left a closed pool behind, and
    a later test whose private Redis drew the same port (or the default broker, restored after a
    test) got "Acquire on closed pool" and its answer graded in the web process instead of queued.
    """
    from kombu import pools

    pools.reset()  # closes every pool and empties the registries
    celery_app._pool = None
    celery_app.amqp._producer_pool = None
    celery_app.conf.broker_url = url


def service_env(*, redis_url: str, **extra: str) -> dict[str, str]:
    """The environment of a site process started by a test: the test database, the given Redis,
    the test's own cache namespace, the real settings module."""
    from django.conf import settings

    env = {
        **os.environ,
        "DATABASE_URL": worker_database_url(),
        "REDIS_URL": redis_url,
        "CACHE_KEY_PREFIX": settings.CACHES["default"]["KEY_PREFIX"],
        "DJANGO_SETTINGS_MODULE": "config.settings",
        **extra,
    }
    env.pop("DJANGO_ALLOW_ASYNC_UNSAFE", None)
    return env


def stop_process_group(process: subprocess.Popen, *, grace_s: float = 15.0) -> None:
    if process.poll() is not None:
        return
    os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(timeout=grace_s)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()


@pytest.fixture
def course(transactional_db):
    """The repository's real content: lessons with figures and calculators, the question bank, labs."""
    from django.core.management import call_command

    call_command("sync_content", verbosity=0)


@pytest.fixture(scope="session")
def collected_static():
    """The site serves collected, hashed static files when DEBUG is off, as in a deployment."""
    subprocess.run(
        [sys.executable, "manage.py", "collectstatic", "--noinput", "--verbosity", "0"],
        cwd=ROOT,
        env={**os.environ, "DEBUG": "false", "DJANGO_SETTINGS_MODULE": "config.settings"},
        check=True,
    )


class LiveSite:
    def __init__(self, *, url: str, process: subprocess.Popen, log_path: Path) -> None:
        self.url, self.process, self.log_path = url, process, log_path

    def log_tail(self, lines: int = 40) -> str:
        return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])


@pytest.fixture
def live_site(request, broker, collected_static, transactional_db):
    """The real site: gunicorn started with `make run`'s own command line and DEBUG off, on the
    test database and the private Redis that the test's Celery workers use as their broker."""
    port = free_port()
    OUTPUT.mkdir(exist_ok=True)
    log_path = OUTPUT / f"{request.node.name[:120]}-web.log"
    with log_path.open("w") as log:
        process = subprocess.Popen(
            web_command(python=sys.executable, host="127.0.0.1", port=port),
            cwd=ROOT,
            env=service_env(redis_url=broker["url"], DEBUG="false"),
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    site = LiveSite(url=f"http://127.0.0.1:{port}", process=process, log_path=log_path)
    deadline = time.monotonic() + 60
    while True:
        try:
            if httpx.get(f"{site.url}/healthz", timeout=2).status_code == 200:
                break
        except httpx.HTTPError:
            pass
        if process.poll() is not None or time.monotonic() > deadline:
            stop_process_group(process)
            pytest.fail(f"gunicorn did not serve /healthz:\n{site.log_tail()}")
        time.sleep(0.1)
    yield site
    stop_process_group(process)


@pytest.fixture
def celery_worker(broker):
    """Start real `celery worker` processes consuming the given queues."""
    workers: list[subprocess.Popen] = []

    def start(*queues: str, extra_env: dict | None = None, log_path: Path | None = None) -> subprocess.Popen:
        """`log_path`: the worker's output goes there (to assert on), else to the test's output."""
        env = service_env(redis_url=broker["url"], LAB_HEARTBEAT_S="1", **(extra_env or {}))
        log = log_path.open("w") if log_path is not None else None
        process = subprocess.Popen(
            [
                *CELERY,
                "worker",
                "-Q",
                ",".join(queues),
                "-c",
                "1",
                "--without-gossip",
                "--without-mingle",
                "-n",
                f"test-{len(workers)}-{os.getpid()}@%h",
                "--loglevel",
                "WARNING",
            ],
            cwd=ROOT,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT if log is not None else None,
            start_new_session=True,
        )
        if log is not None:
            log.close()  # the worker holds its own descriptor
        workers.append(process)
        return process

    yield start
    for process in workers:
        stop_process_group(process)


def wait_for(predicate, *, timeout_s: float = 60.0, interval_s: float = 0.2, message: str = "condition"):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval_s)
    pytest.fail(f"timed out after {timeout_s:.0f} s waiting for {message}")


@pytest.fixture
def celery_beat(broker):
    """Start the real beat scheduler, so the reaper runs on its own schedule as in production."""
    processes: list[subprocess.Popen] = []

    def start(*, every_s: float = 1.0, schedule_dir: Path) -> subprocess.Popen:
        env = service_env(redis_url=broker["url"], LAB_REAPER_EVERY_S=str(every_s))
        process = subprocess.Popen(
            [
                *CELERY,
                "beat",
                "--loglevel",
                "WARNING",
                "-s",
                str(schedule_dir / "celerybeat-schedule"),
            ],
            cwd=ROOT,
            env=env,
            start_new_session=True,
        )
        processes.append(process)
        return process

    yield start
    for process in processes:
        stop_process_group(process)


@pytest.fixture
def local_engines(tmp_path):
    """Both local llama.cpp targets (serial and batched) on free ports with the smallest model.

    One thread per server: on 2 shared cores, two spinning threads stall whenever one is
    descheduled; the lessons the tests check hold at any speed.
    """
    from engines.llamacpp.build import BuildError, ensure_llama_server
    from engines.local import start_local_engines

    try:
        ensure_llama_server()
    except BuildError as error:
        pytest.fail(f"llama-server is needed for the local engine and could not be built: {error}")
    engines = start_local_engines(
        serial_url=f"http://127.0.0.1:{free_port()}",
        batched_url=f"http://127.0.0.1:{free_port()}",
        sizes=("60m",),
        precisions=("f16",),
        threads=1,
        log_dir=tmp_path,
    )
    yield engines
    engines.stop()
