from django.core.management.base import BaseCommand, CommandError

from core.content import ContentError
from core.services import sync_all_content


class Command(BaseCommand):
    help = "Load lessons, question sets and lab guides from the repository's content files."

    def add_arguments(self, parser) -> None:
        parser.add_argument("--strict", action="store_true", help="Treat dangling links as errors.")

    def handle(self, *args, strict: bool, **options) -> None:
        try:
            outcome = sync_all_content(strict=strict)
        except ContentError as error:
            raise CommandError(str(error)) from None
        for report in outcome.reports:
            self.stdout.write(report.summary_line())
        for warning in outcome.warnings:
            self.stderr.write(self.style.WARNING(f"warning: {warning}"))
        changed = any(report.changed for report in outcome.reports)
        self.stdout.write(self.style.SUCCESS("Content synced." if changed else "Content already up to date."))
