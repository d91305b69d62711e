from pathlib import Path

from django.core.management.base import BaseCommand, CommandError
from django.utils import timezone

from core.backup import BackupError, backup_database, default_backup_path


class Command(BaseCommand):
    help = (
        "Write a consistent copy of the whole database (SQLite: the online backup API; PostgreSQL: "
        "pg_dump custom format) while the site keeps running. Restore it with `manage.py restore FILE`."
    )

    def add_arguments(self, parser) -> None:
        parser.add_argument(
            "--output", type=Path, help="Where to write it (default: var/backups/prefill-<date>-<time>.<kind>)"
        )

    def handle(self, *args, output: Path | None, **options) -> None:
        path = output or default_backup_path(now=timezone.localtime())
        try:
            held = backup_database(output=path)
        except BackupError as error:
            raise CommandError(str(error)) from None
        size_mb = path.stat().st_size / 1e6
        self.stdout.write(self.style.SUCCESS(f"Backed up {held.sentence()} to {path} ({size_mb:.1f} MB):"))
        self.stdout.write("\n".join(held.lines()))
