"""Shared fixtures: users, free ports, private service instances, a browser."""

import os
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

from tests.sample_content import write_sample_content

# Scripted engine, private broker and real Celery worker processes, for any test folder.
pytest_plugins = ["tests.service_fixtures"]

ROOT = Path(__file__).resolve().parent.parent
# DB-touching fixtures of pytest-django: a test that uses none of them (and has no django_db mark)
# is refused the database, so it runs the same whatever DATABASE_URL says.
DATABASE_FIXTURES = {"db", "transactional_db", "django_db_setup", "live_server"}


def pytest_collection_modifyitems(config, items):
    """`PREFILL_TEST_SCOPE=database` (CI's PostgreSQL pass) keeps only the tests that can reach
    the database, less the layout checks and vLLM's lab figures: the others already ran,
    identically, in the SQLite pass."""
    if os.environ.get("PREFILL_TEST_SCOPE") != "database":
        return
    def runs_on_postgresql(item) -> bool:
        # Layout checks (page widths and chart text at phone size) read pages the database-bound
        # tests already check on PostgreSQL; the browser draws them the same whichever database
        # filled them, and they are the slowest tests, so they run once, in the SQLite pass.
        if item.get_closest_marker("layout"):
            return False
        # Likewise what a real engine's numbers show: the lessons the labs show on CPU vLLM (~5
        # minutes on a slow machine) and on the local engine, and the batching lab's knee on the
        # batched local engine (85-160 s): the engine measures the same whichever database stores
        # the run. The lab path through the database still runs on PostgreSQL with the local engine
        # (the lab journey in a browser, the other labs to a result) and the scripted one.
        if item.get_closest_marker("engine_figures"):
            return False
        return bool(item.get_closest_marker("django_db") or DATABASE_FIXTURES & set(item.fixturenames))

    config.hook.pytest_deselected(items=[item for item in items if not runs_on_postgresql(item)])
    items[:] = [item for item in items if runs_on_postgresql(item)]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture
def make_user(db, django_user_model):
    def make(username: str = "ada", password: str = "a-long-test-password-42", **extra):
        return django_user_model.objects.create_user(username=username, password=password, **extra)

    return make


@pytest.fixture
def user(make_user):
    return make_user()


@pytest.fixture
def logged_in_client(client, user):
    client.force_login(user)
    return client


@pytest.fixture
def private_redis():
    """A redis-server of our own on a free port, for tests that stop or restart Redis."""
    binary = shutil.which("redis-server")
    if binary is None:
        pytest.fail("redis-server is not installed: `apt-get install redis-server`")
    port = free_port()
    data_dir = tempfile.mkdtemp(prefix="prefill-redis-")
    process = subprocess.Popen(
        [binary, "--bind", "127.0.0.1", "--port", str(port), "--dir", data_dir, "--save", "", "--appendonly", "no"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"redis://127.0.0.1:{port}/0"
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                break
        except OSError:
            time.sleep(0.05)
    instance = {"url": url, "port": port, "process": process, "dir": data_dir}
    yield instance
    # A test that restarted Redis put its new process here: stop that one, not only the first.
    for running in {id(process): process, id(instance["process"]): instance["process"]}.values():
        running.terminate()
        running.wait(timeout=10)
    shutil.rmtree(data_dir, ignore_errors=True)


def chromium_path() -> str | None:
    return os.environ.get("CHROMIUM_PATH") or shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.fixture
def content(tmp_path: Path, settings):
    """Point sync_content at the sample content files, copied into a temp dir."""
    settings.CONTENT_DIRS = write_sample_content(root=tmp_path, settings_base_dir=Path(settings.BASE_DIR))
    return settings.CONTENT_DIRS


@pytest.fixture(autouse=True)
def isolated_cache(settings):
    """Give every test its own cache namespace on the real Redis (no flush of a shared server)."""
    import copy
    import uuid

    caches = copy.deepcopy(settings.CACHES)
    caches["default"]["KEY_PREFIX"] = f"{caches['default']['KEY_PREFIX']}-{uuid.uuid4().hex[:8]}"
    settings.CACHES = caches


@pytest.fixture(autouse=True)
def fresh_page_caches():
    """Per-process page caches must not carry one test's database state into the next."""
    from core.page_cache import forget_kept_pages
    from core.shared import forget_local_parts
    from core.versions import forget_content_version
    from courses import selectors as course_selectors
    from courses import views as course_views

    course_views._anonymous_pages.clear()
    course_selectors._LOCAL_RENDER_CACHE.clear()
    forget_local_parts()
    forget_content_version()
    forget_kept_pages()


@pytest.fixture
def synced(content, db):
    """The test content directory synced into the database, as `make run` does at start."""
    from django.core.management import call_command

    call_command("sync_content")
    return content


@pytest.fixture
def rendered_templates(monkeypatch):
    """Spy on a views module's render_to_string: `rendered_templates(views)` returns the list the
    names of the templates it renders are appended to (a shared part rendered once shows once)."""

    def spy(module) -> list[str]:
        rendered: list[str] = []
        real = module.render_to_string

        def recording(name, *args, **kwargs):
            rendered.append(name)
            return real(name, *args, **kwargs)

        monkeypatch.setattr(module, "render_to_string", recording)
        return rendered

    return spy
