"""`manage.py backup` and `manage.py restore`, run as an instructor runs them (subprocesses on the
real database): a populated database is backed up, restored into an EMPTY database, and every
learner, graded answer, lab run and stored request is found again, field by field.

On SQLite (the default pass) the empty database is a new file; on PostgreSQL (CI's database pass,
DATABASE_URL=postgres://...) it is a throwaway database created on the same server with a unique
name and dropped afterwards, so neither the test database nor anyone else's is touched."""

import json
import os
import subprocess
import sys
import uuid

import pytest
from django.core.management import call_command
from django.db import connection

from tests.conftest import ROOT
from tests.labs.test_runs import load_lab, make_target
from tests.learner_data import give_history, snapshot
from tests.service_fixtures import service_env, worker_database_url

pytestmark = pytest.mark.django_db(transaction=True)

SNAPSHOT = "import django, json; django.setup(); from tests.learner_data import snapshot; print(json.dumps(snapshot()))"


def manage(*argv: str, database_url: str) -> subprocess.CompletedProcess:
    from django.conf import settings

    return subprocess.run(
        [sys.executable, "manage.py", *argv],
        cwd=ROOT,
        env=service_env(redis_url=settings.REDIS_URL, DATABASE_URL=database_url),
        capture_output=True,
        text=True,
        timeout=300,
    )


def snapshot_of(database_url: str) -> dict:
    from django.conf import settings

    result = subprocess.run(
        [sys.executable, "-c", SNAPSHOT],
        cwd=ROOT,
        env=service_env(redis_url=settings.REDIS_URL, DATABASE_URL=database_url),
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    return json.loads(result.stdout)


def _psql(sql: str) -> None:
    """Run one statement on the test database's server, connected to its `postgres` database."""
    settings = connection.settings_dict
    subprocess.run(
        ["psql", "-v", "ON_ERROR_STOP=1", "-d", "postgres", "-c", sql],
        env={
            **os.environ,
            "PGHOST": settings.get("HOST") or "127.0.0.1",
            "PGPORT": str(settings.get("PORT") or 5432),
            "PGUSER": settings.get("USER") or "postgres",
            "PGPASSWORD": settings.get("PASSWORD") or "",
        },
        check=True,
        capture_output=True,
        text=True,
    )


@pytest.fixture
def empty_database(tmp_path):
    """A database with nothing in it, of the same kind as the test database."""
    if connection.vendor == "sqlite":
        yield f"sqlite:///{tmp_path / 'restored.sqlite3'}"
        return
    name = f"prefill_restore_{uuid.uuid4().hex[:12]}"
    _psql(f'CREATE DATABASE "{name}"')
    try:
        yield worker_database_url().rsplit("/", 1)[0] + f"/{name}"
    finally:
        _psql(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture
def populated(content, scripted_engine, make_user):
    call_command("sync_content", verbosity=0)
    target = make_target(scripted_engine("--ttft-ms", "5", "--gap-ms", "1"))
    lab = load_lab("ttft-vs-output-length")
    for name in ("ada", "bob", "chen"):
        give_history(user=make_user(name), lab=lab, target=target, tag=f"{name}'s words")
    make_user("teacher", is_staff=True)
    return snapshot()


def test_a_backup_restored_into_an_empty_database_gives_back_every_learner_attempt_run_and_request(
    populated, empty_database, tmp_path
):
    assert len(populated["learners"]) == 4 and len(populated["attempts"]) == 6
    assert len(populated["runs"]) == 6 and len(populated["requests"]) == 9  # 3 measured runs x (warm-up + 2)
    source = worker_database_url()
    backup_file = tmp_path / "cohort.backup"

    made = manage("backup", "--output", str(backup_file), database_url=source)
    assert made.returncode == 0, made.stderr
    assert f" to {backup_file} (" in made.stdout.splitlines()[0]
    listed = made.stdout.splitlines()[1:]
    for line in ("  auth.User: 4", "  questions.Attempt: 6", "  labs.LabRun: 6", "  labs.RunRequest: 9",
                 "  courses.LessonProgress: 6", "  questions.ReviewCard: 3"):
        assert line in listed, made.stdout
    assert backup_file.stat().st_size > 0

    restored = manage("restore", str(backup_file), database_url=empty_database)
    assert restored.returncode == 0, restored.stderr
    assert f"from {backup_file}:" in restored.stdout.splitlines()[0]
    assert made.stdout.splitlines()[0].split(" to ")[0].replace("Backed up", "Restored") in restored.stdout
    # Every table holds as many rows as the backup said, and nothing is reported missing.
    assert restored.stdout.splitlines()[1 : 1 + len(listed)] == listed

    assert snapshot_of(empty_database) == populated
    # The restored schema is complete: nothing left for migrate to do.
    check = manage("migrate", "--check", "--noinput", database_url=empty_database)
    assert check.returncode == 0, check.stdout + check.stderr


def test_restore_refuses_a_database_that_is_not_empty_and_a_file_that_is_not_a_backup(
    populated, empty_database, tmp_path
):
    source = worker_database_url()
    backup_file = tmp_path / "cohort.backup"
    assert manage("backup", "--output", str(backup_file), database_url=source).returncode == 0

    again = manage("backup", "--output", str(backup_file), database_url=source)
    assert again.returncode == 1
    assert f"{backup_file} already exists; choose another file name" in again.stderr

    refused = manage("restore", str(backup_file), database_url=source)
    assert refused.returncode == 1
    assert "already has tables: restore into an empty database, or pass --replace" in refused.stderr
    assert "Traceback" not in refused.stderr
    assert snapshot_of(source) == populated

    not_a_backup = tmp_path / "notes.txt"
    not_a_backup.write_text("not a database")
    wrong = manage("restore", str(not_a_backup), database_url=empty_database)
    assert wrong.returncode == 1
    kind = "SQLite" if connection.vendor == "sqlite" else "PostgreSQL"
    assert f"{not_a_backup} is not a {kind} backup" in wrong.stderr
    assert "Traceback" not in wrong.stderr
