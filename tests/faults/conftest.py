"""Faults against the real parts: the site under gunicorn, Celery worker and beat processes, a
private Redis and (for its restart) a throwaway PostgreSQL cluster, and an engine process that
can be killed and started again on the same port.

The learner's side is driven over HTTP like a browser would (session cookie, CSRF token), so
what a test asserts is what a learner would see on the page.
"""

import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
import pytest

from labs.models import LabRun, RunRequest
from tests.conftest import ROOT, free_port
from tests.service_fixtures import stop_process_group, wait_for

CSRF_FIELD = re.compile(r'name="csrfmiddlewaretoken" value="([^"]+)"')
# A lab form's pre-filled fields, as a browser would send them (Django renders name before value).
PREFILLED_INPUT = re.compile(r'<input[^>]*\bname="(param_[^"]+)"[^>]*\bvalue="([^"]*)"')
PARAM_SELECT = re.compile(r'<select[^>]*\bname="(param_[^"]+)"[^>]*>(.*?)</select>', re.S)
SELECTED_OPTION = re.compile(r'<option value="([^"]*)"[^>]*\bselected\b')


class Browser:
    """A learner's HTTP session against the live site: cookies kept, forms posted with CSRF."""

    def __init__(self, base_url: str, *, session_cookie: str | None = None) -> None:
        self.http = httpx.Client(base_url=base_url, timeout=15, follow_redirects=True)
        if session_cookie:
            self.http.cookies.set("sessionid", session_cookie, domain="127.0.0.1")

    def get(self, path: str, **kwargs) -> httpx.Response:
        return self.http.get(path, **kwargs)

    def submit(self, path: str, data: dict) -> httpx.Response:
        """GET the page, then post its form with the page's CSRF token, as the browser would."""
        page = self.http.get(path)
        token = CSRF_FIELD.search(page.text)
        assert token, f"no form with a CSRF token on {path} ({page.status_code})"
        return self.http.post(path, data={"csrfmiddlewaretoken": token.group(1), **data}, headers={"Referer": path})

    def log_in(self, username: str, password: str) -> None:
        response = self.submit("/accounts/login/", {"username": username, "password": password})
        assert response.url.path == "/accounts/me/", response.text[:500]

    def queue_run(self, *, lab: str, target_id: int, **params) -> int:
        """Post the lab's form as a browser would: the page's own pre-filled values, then ours."""
        page = self.http.get(f"/labs/{lab}/?target={target_id}").text
        data = {name: value for name, value in PREFILLED_INPUT.findall(page) if name.startswith("param_")}
        for name, options in PARAM_SELECT.findall(page):
            chosen = SELECTED_OPTION.search(options)
            if chosen:
                data[name] = chosen.group(1)
        data.update({"target": str(target_id), "prediction": "TTFT flat, total time grows with output"})
        data.update({f"param_{name}": value for name, value in params.items()})
        response = self.submit(f"/labs/{lab}/", data)
        match = re.search(r"/labs/runs/(\d+)/", str(response.url))
        assert match, f"the run was not queued ({response.status_code}): {response.text[:800]}"
        return int(match.group(1))


@pytest.fixture
def learner_browser(live_site, make_user):
    """A logged-in learner over HTTP; the session is made directly so no password is hashed."""
    from django.test import Client

    def open_for(username: str) -> Browser:
        user = make_user(username)
        client = Client()
        client.force_login(user, backend="django.contrib.auth.backends.ModelBackend")
        return Browser(live_site.url, session_cookie=client.cookies["sessionid"].value)

    return open_for


class EngineProcess:
    """The scripted engine on a fixed port, so it can be killed and come back at the same URL."""

    def __init__(self, *args: str) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.args = args
        self.process: subprocess.Popen | None = None

    def start(self) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "workers.measure.scripted_engine", "--port", str(self.port),
             "--model", "scripted", *self.args],
            cwd=ROOT,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            try:
                if httpx.get(f"{self.url}/v1/models", timeout=0.5).status_code == 200:
                    return
            except httpx.HTTPError:
                time.sleep(0.05)
        pytest.fail("scripted engine did not start")

    def kill(self) -> None:
        """SIGKILL: open streams are cut mid-token and the port refuses connections after."""
        assert self.process is not None
        os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait()

    def stop(self) -> None:
        if self.process is not None:
            stop_process_group(self.process, grace_s=5)


@pytest.fixture
def engine_process():
    engines: list[EngineProcess] = []

    def start(*args: str) -> EngineProcess:
        engine = EngineProcess(*args)
        engine.start()
        engines.append(engine)
        return engine

    yield start
    for engine in engines:
        engine.stop()


def restart_redis(private_redis: dict, *, down_s: float = 0.0, during=None) -> None:
    """Stop the private redis-server and start a new, empty one on the same port (what a restart
    without persistence does: every queued message is gone). `during` runs while it is down."""
    private_redis["process"].terminate()
    private_redis["process"].wait(timeout=10)
    if during is not None:
        during()
    time.sleep(down_s)
    private_redis["process"] = subprocess.Popen(
        [shutil.which("redis-server"), "--bind", "127.0.0.1", "--port", str(private_redis["port"]),
         "--dir", private_redis["dir"], "--save", "", "--appendonly", "no"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    import redis

    wait_for(lambda: _pings(redis.Redis.from_url(private_redis["url"])), timeout_s=10, message="redis back")


def _pings(client) -> bool:
    import redis

    try:
        return bool(client.ping())
    except redis.RedisError:
        return False


def final(run_id: int, *, timeout_s: float = 90.0) -> LabRun:
    return wait_for(
        lambda: LabRun.objects.filter(pk=run_id).exclude(status__in=LabRun.ACTIVE).first(),
        timeout_s=timeout_s,
        interval_s=0.3,
        message=f"run {run_id} to reach a final state",
    )


def measured(run_id: int) -> int:
    return RunRequest.objects.filter(run_id=run_id, warmup=False).exclude(ttft_s=None).count()


class PrivatePostgres:
    """A throwaway PostgreSQL cluster (initdb + pg_ctl in a temp dir), run as the postgres user
    because PostgreSQL refuses to run as root."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.data = root / "data"
        self.port = free_port()
        self.url = f"postgres://postgres@127.0.0.1:{self.port}/postgres"

    def _as_postgres(self, *argv: str) -> subprocess.CompletedProcess:
        command = list(argv)
        if os.geteuid() == 0:
            command = ["runuser", "-u", "postgres", "--", *command]
        return subprocess.run(command, capture_output=True, text=True, check=False, timeout=120)

    def init(self) -> None:
        if os.geteuid() == 0:
            shutil.chown(self.root, user="postgres")
        result = self._as_postgres("initdb", "-D", str(self.data), "-U", "postgres", "--auth=trust", "-N")
        assert result.returncode == 0, result.stderr

    def start(self) -> None:
        options = f"-p {self.port} -k {self.root} -c listen_addresses=127.0.0.1 -c fsync=off"
        result = self._as_postgres("pg_ctl", "-D", str(self.data), "-o", options, "-l", str(self.root / "log"),
                                   "-w", "start")
        assert result.returncode == 0, result.stderr + (self.root / "log").read_text()

    def stop(self) -> None:
        self._as_postgres("pg_ctl", "-D", str(self.data), "-m", "fast", "-w", "stop")


@pytest.fixture
def private_postgres():
    if shutil.which("initdb") is None or shutil.which("pg_ctl") is None:
        pytest.fail("initdb and pg_ctl are needed for the PostgreSQL restart test (apt-get install postgresql)")
    root = Path(tempfile.mkdtemp(prefix="prefill-pg-"))
    root.chmod(0o755)
    cluster = PrivatePostgres(root)
    cluster.init()
    cluster.start()
    yield cluster
    cluster.stop()
    shutil.rmtree(root, ignore_errors=True)
