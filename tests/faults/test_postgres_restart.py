"""PostgreSQL restarts during a run. The whole site runs on a throwaway cluster of its own (the
machine's PostgreSQL is never touched): gunicorn, a Celery worker and the scripted engine. While
the database is down the page says so (503, not a server error) and the worker keeps measuring;
after the restart the run completes with every request stored, and the site serves again at once."""

import os
import subprocess
import sys
import time

import psycopg
import pytest

from scripts.services import web_command
from tests.conftest import ROOT, free_port
from tests.faults.conftest import Browser
from tests.service_fixtures import CELERY, OUTPUT, stop_process_group, wait_for

pytestmark = [pytest.mark.slow]

PASSWORD = "prefill-decode-bandwidth-9"
SETUP = """
from django.conf import settings
from django.contrib.auth.models import User
from labs.content_sync import sync_labs
from labs.targets import upsert_target
sync_labs(content_dir=settings.BASE_DIR / "labs" / "content")
User.objects.create_user("ada", password="{password}")
print(upsert_target(name="Scripted GPU", kind="vllm", base_url="{engine}", models=["scripted"]).pk)
"""


def query(url: str, sql: str, *args) -> list[tuple]:
    with psycopg.connect(url, connect_timeout=2) as connection:
        return connection.execute(sql, args).fetchall()


def run_state(url: str, run_id: int) -> tuple[str, str, int]:
    status, error = query(url, "SELECT status, error FROM labs_labrun WHERE id = %s", run_id)[0]
    stored = query(url, "SELECT count(*) FROM labs_runrequest WHERE run_id = %s", run_id)[0][0]
    return status, error, stored


def finished_state(url: str, run_id: int, timeout_s: float = 90) -> tuple[str, str, int]:
    def done():
        try:
            state = run_state(url, run_id)
        except psycopg.OperationalError:
            return None
        return state if state[0] not in ("queued", "running") else None

    return wait_for(done, timeout_s=timeout_s, interval_s=0.3, message=f"run {run_id} to finish")


@pytest.fixture
def site_on_private_postgres(private_postgres, private_redis, scripted_engine, request):
    engine = scripted_engine("--ttft-ms", "10", "--gap-ms", "20")
    env = {
        **os.environ,
        "DATABASE_URL": private_postgres.url,
        "REDIS_URL": private_redis["url"],
        "DJANGO_SETTINGS_MODULE": "config.settings",
        "CACHE_KEY_PREFIX": f"prefill-pg-fault-{os.getpid()}",
        "DEBUG": "false",
        "LAB_HEARTBEAT_S": "1",
    }
    env.pop("DJANGO_ALLOW_ASYNC_UNSAFE", None)
    manage = [sys.executable, "manage.py"]
    subprocess.run([*manage, "migrate", "--noinput", "-v", "0"], cwd=ROOT, env=env, check=True)
    setup = subprocess.run(
        [*manage, "shell", "-c", SETUP.format(password=PASSWORD, engine=engine)],
        cwd=ROOT, env=env, check=True, capture_output=True, text=True,
    )
    target_id = int(setup.stdout.strip().splitlines()[-1])
    OUTPUT.mkdir(exist_ok=True)
    port = free_port()
    children = []
    with (OUTPUT / "postgres-restart-services.log").open("w") as log:
        children.append(subprocess.Popen(
            web_command(python=sys.executable, host="127.0.0.1", port=port),
            cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
        ))
        children.append(subprocess.Popen(
            [*CELERY, "worker", "-Q", "target-scripted-gpu", "-c", "1",
             "--without-gossip", "--without-mingle", "-n", f"pg-fault-{os.getpid()}@%h", "--loglevel", "WARNING"],
            cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
        ))
    site = Browser(f"http://127.0.0.1:{port}")
    wait_for(lambda: _answers(site), timeout_s=60, message="gunicorn on the private cluster")
    yield {"site": site, "db": private_postgres, "target_id": target_id}
    for child in children:
        stop_process_group(child)


def _answers(site: Browser) -> bool:
    try:
        return site.get("/healthz").status_code == 200
    except Exception:
        return False


def test_a_postgres_restart_mid_run_loses_nothing_and_the_site_serves_again_at_once(site_on_private_postgres):
    site, db = site_on_private_postgres["site"], site_on_private_postgres["db"]
    target_id = site_on_private_postgres["target_id"]
    site.log_in("ada", PASSWORD)
    run_id = site.queue_run(lab="ttft-vs-output-length", target_id=target_id, max_tokens="40", prompt_tokens="16",
                            repeats="10")
    wait_for(lambda: run_state(db.url, run_id)[2] >= 3, message="three stored requests")

    db.stop()
    down = site.get(f"/labs/runs/{run_id}/")
    assert down.status_code == 503, down.text[:300]
    assert "database is not answering" in down.text and down.headers["Retry-After"] == "5"
    time.sleep(2)  # the worker measures on meanwhile
    db.start()

    status, error, stored = finished_state(db.url, run_id)
    assert (status, error) == ("succeeded", "")
    assert stored == 1 + 10  # the warm-up and every measured request: none lost in the outage

    # Every gunicorn thread's old connection is checked and replaced: no request fails.
    for _ in range(12):
        assert site.get(f"/labs/runs/{run_id}/").status_code == 200
    page = site.get(f"/labs/runs/{run_id}/").text
    assert "What you should see" in page

    next_id = site.queue_run(lab="ttft-vs-output-length", target_id=target_id, max_tokens="8", prompt_tokens="16",
                             repeats="2")
    assert finished_state(db.url, next_id)[0] == "succeeded"
