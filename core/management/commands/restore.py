from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from core.backup import BackupError, restore_database


class Command(BaseCommand):
    help = (
        "Load a backup made by `manage.py backup` into the database DATABASE_URL names, which must be "
        "empty (or pass --replace). Stop the web and worker processes first."
    )

    def add_arguments(self, parser) -> None:
        parser.add_argument("backup", type=Path, help="The file `manage.py backup` wrote")
        parser.add_argument(
            "--replace", action="store_true", help="Overwrite a database that already has tables (everything in it)"
        )

    def handle(self, *args, backup: Path, replace: bool, **options) -> None:
        try:
            held = restore_database(source=backup, replace=replace)
        except BackupError as error:
            raise CommandError(str(error)) from None
        self.stdout.write(self.style.SUCCESS(f"Restored {held.sentence()} from {backup}:"))
        self.stdout.write("\n".join(held.lines()))
        self.stdout.write("If the backup came from an older Prefill, run `manage.py migrate` before starting the site.")
