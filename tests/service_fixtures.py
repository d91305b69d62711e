"""Real parts for lab tests: a scripted engine process and Celery worker processes that share the
test database and a private Redis broker."""

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
from tests.conftest import ROOT, free_port


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
    """Drop the cached connection pools so the next publish connects to `url`."""
    if celery_app._pool is not None:
        celery_app._pool.force_close_all()
        celery_app._pool = None
    celery_app.amqp._producer_pool = None
    celery_app.conf.broker_url = url


@pytest.fixture
def celery_worker(broker):
    """Start real `celery worker` processes consuming the given queues."""
    workers: list[subprocess.Popen] = []

    def start(*queues: str, extra_env: dict | None = None) -> subprocess.Popen:
        env = {
            **os.environ,
            "DATABASE_URL": worker_database_url(),
            "REDIS_URL": broker["url"],
            "DJANGO_SETTINGS_MODULE": "config.settings",
            "LAB_HEARTBEAT_S": "1",
            **(extra_env or {}),
        }
        env.pop("DJANGO_ALLOW_ASYNC_UNSAFE", None)
        process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "celery",
                "-A",
                "config",
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
            start_new_session=True,
        )
        workers.append(process)
        return process

    yield start
    for process in workers:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGTERM)
            try:
                process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()


def wait_for(predicate, *, timeout_s: float = 60.0, interval_s: float = 0.2, message: str = "condition"):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval_s)
    pytest.fail(f"timed out after {timeout_s:.0f} s waiting for {message}")
