"""Back up and restore the whole database with each backend's own tool.

Why not `dumpdata`/`loaddata`: they are not exact. loaddata into a migrated database collides
with the content types and permissions that `migrate` creates (their ids differ between
databases), leaves PostgreSQL's sequences behind the loaded ids unless they are reset by hand,
holds a whole table in memory (a cohort's lab runs are hundreds of thousands of requests), and
does not take a consistent snapshot of a site that is being written to. The native tools have
none of these problems:

- SQLite: the sqlite3 online backup API copies every page of the live file (WAL included) as a
  consistent snapshot, while the site keeps running; restoring is the same copy the other way.
- PostgreSQL: `pg_dump --format=custom` (a consistent snapshot, compressed) and `pg_restore`
  in one transaction, so a failed restore leaves the database as it was.

A backup is restored into the same kind of database it was taken from.
"""

import os
import shutil
import sqlite3
import subprocess
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from django.apps import apps
from django.conf import settings
from django.db import DatabaseError, connections

SQLITE_MAGIC = b"SQLite format 3\x00"
PG_CUSTOM_MAGIC = b"PGDMP"


class BackupError(Exception):
    """What went wrong, in words an instructor can act on."""


@dataclass(frozen=True)
class Inventory:
    """Rows per table (model label), for every model of every installed app: what a restore must
    give back, compared line by line with what the backup printed."""

    rows: dict[str, int]
    missing: tuple[str, ...] = ()  # tables the code has and the database lacks (an older schema)

    def lines(self) -> list[str]:
        counted = [f"  {label}: {count:,}" for label, count in sorted(self.rows.items()) if count]
        if self.missing:
            counted.append(f"  not in this database (run `manage.py migrate`): {', '.join(self.missing)}")
        return counted

    def sentence(self) -> str:
        tables = sum(1 for count in self.rows.values() if count)
        return f"{sum(self.rows.values()):,} rows in {tables} tables"


def inventory() -> Inventory:
    # Every model, not a chosen few: a backup is of the whole site, and core names no feature app.
    models = [
        model
        for model in apps.get_models(include_auto_created=True)
        if model._meta.managed and not model._meta.proxy
    ]
    rows: dict[str, int] = {}
    missing: list[str] = []
    for model in models:
        try:
            rows[model._meta.label] = model._default_manager.count()
        except DatabaseError:
            missing.append(model._meta.label)
    return Inventory(rows=rows, missing=tuple(missing))


def _database() -> dict:
    return settings.DATABASES["default"]


def _is_sqlite() -> bool:
    return _database()["ENGINE"].endswith("sqlite3")


def _is_postgres() -> bool:
    return _database()["ENGINE"].endswith("postgresql")


def default_backup_path(*, now: datetime) -> Path:
    suffix = "sqlite3" if _is_sqlite() else "pgdump"
    return Path(settings.VAR_DIR) / "backups" / f"prefill-{now:%Y%m%d-%H%M%S}.{suffix}"


def backup_database(*, output: Path) -> Inventory:
    """Write a consistent copy of the whole database to `output`; returns what it holds."""
    if output.exists():
        raise BackupError(f"{output} already exists; choose another file name (a backup never overwrites one).")
    output.parent.mkdir(parents=True, exist_ok=True)
    counted = inventory()
    if _is_sqlite():
        _sqlite_copy(source=Path(_database()["NAME"]), destination=output)
    elif _is_postgres():
        _run_pg("pg_dump", "--format=custom", f"--file={output}")
    else:
        raise BackupError(f"backups support SQLite and PostgreSQL, not {_database()['ENGINE']}")
    return counted


def restore_database(*, source: Path, replace: bool) -> Inventory:
    """Load a backup into the configured database, which must be empty unless `replace`."""
    if not source.is_file():
        raise BackupError(f"{source} is not a file.")
    with source.open("rb") as handle:
        head = handle.read(16)
    connections.close_all()  # the restore writes underneath Django's connection
    if _is_sqlite():
        if not head.startswith(SQLITE_MAGIC):
            raise BackupError(f"{source} is not a SQLite backup, and DATABASE_URL points at SQLite.{_which(head)}")
        destination = Path(_database()["NAME"])
        if not replace and _sqlite_has_tables(destination):
            raise BackupError(_not_empty(str(destination)))
        _sqlite_check(source)
        _sqlite_copy(source=source, destination=destination)
    elif _is_postgres():
        if not head.startswith(PG_CUSTOM_MAGIC):
            raise BackupError(
                f"{source} is not a PostgreSQL backup (pg_dump custom format), and DATABASE_URL points at "
                f"PostgreSQL.{_which(head)}"
            )
        if not replace and _postgres_has_tables():
            raise BackupError(_not_empty(f"database {_database()['NAME']}"))
        # One transaction: a restore that fails half-way leaves the database as it was.
        options = ["--clean", "--if-exists"] if replace else []
        _run_pg(
            "pg_restore", "--no-owner", "--no-privileges", "--single-transaction", "--exit-on-error",
            *options, f"--dbname={_database()['NAME']}", str(source),
        )
    else:
        raise BackupError(f"backups support SQLite and PostgreSQL, not {_database()['ENGINE']}")
    connections.close_all()
    return inventory()


def _which(head: bytes) -> str:
    if head.startswith(SQLITE_MAGIC):
        return " It is a SQLite backup."
    if head.startswith(PG_CUSTOM_MAGIC):
        return " It is a PostgreSQL backup."
    return ""


def _not_empty(where: str) -> str:
    return (
        f"{where} already has tables: restore into an empty database, or pass --replace to overwrite "
        "everything in it with the backup."
    )


def _sqlite_copy(*, source: Path, destination: Path) -> None:
    destination.parent.mkdir(parents=True, exist_ok=True)
    reader = sqlite3.connect(f"{source.resolve().as_uri()}?mode=ro", uri=True)
    writer = sqlite3.connect(destination)
    try:
        reader.backup(writer)
    except sqlite3.Error as error:
        raise BackupError(f"copying {source} to {destination} failed: {error}") from None
    finally:
        writer.close()
        reader.close()


def _sqlite_has_tables(path: Path) -> bool:
    if not path.exists() or path.stat().st_size == 0:
        return False
    with sqlite3.connect(path) as db:
        return db.execute("SELECT count(*) FROM sqlite_master WHERE type = 'table'").fetchone()[0] > 0


def _sqlite_check(path: Path) -> None:
    reader = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
    try:
        verdict = reader.execute("PRAGMA integrity_check").fetchone()[0]
        prefill = reader.execute(
            "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'django_migrations'"
        ).fetchone()[0]
    except sqlite3.DatabaseError as error:
        raise BackupError(f"{path} cannot be read as a SQLite database: {error}") from None
    finally:
        reader.close()
    if verdict != "ok":
        raise BackupError(f"{path} is damaged (SQLite integrity check: {verdict}); nothing was restored.")
    if not prefill:
        raise BackupError(f"{path} is a SQLite database but not a Prefill backup (no django_migrations table).")


def _postgres_has_tables() -> bool:
    with connections["default"].cursor() as cursor:
        cursor.execute("SELECT count(*) FROM information_schema.tables WHERE table_schema = current_schema()")
        has_tables = cursor.fetchone()[0] > 0
    connections.close_all()
    return has_tables


def _pg_environment() -> dict[str, str]:
    """libpq's own variables: the password never appears on a command line (ps would show it)."""
    database = _database()
    env = {**os.environ, "PGDATABASE": str(database["NAME"])}
    for key, variable in (("HOST", "PGHOST"), ("PORT", "PGPORT"), ("USER", "PGUSER"), ("PASSWORD", "PGPASSWORD")):
        if database.get(key):
            env[variable] = str(database[key])
    if database.get("OPTIONS", {}).get("sslmode"):
        env["PGSSLMODE"] = str(database["OPTIONS"]["sslmode"])
    return env


def _run_pg(tool: str, *arguments: str) -> None:
    binary = shutil.which(tool)
    if binary is None:
        raise BackupError(
            f"{tool} is not installed: install PostgreSQL's client tools (apt-get install postgresql-client), "
            "of the server's major version or newer. With docker compose use `make backup` / `make restore`, "
            "which run them inside the postgres container."
        )
    result = subprocess.run([binary, *arguments], env=_pg_environment(), capture_output=True, text=True, check=False)
    if result.returncode != 0:
        said = " ".join(result.stderr.strip().splitlines()[-3:]) or f"exit status {result.returncode}"
        raise BackupError(f"{tool} failed: {said}")
