"""``manage.py measure``: the measurement CLI inside the project (same flags, no database)."""

from __future__ import annotations

import argparse
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from workers.measure.cli import EXIT_OK, add_arguments, execute


class Command(BaseCommand):
    help = "Measure TTFT, TPOT, ITL and throughput of a streaming LLM engine."

    def add_arguments(self, parser: CommandParser) -> None:
        add_arguments(parser)

    def handle(self, *args: Any, **options: Any) -> None:
        code = execute(argparse.Namespace(**options), out=self.stdout, err=self.stderr)
        if code != EXIT_OK:
            raise CommandError(f"measurement ended with exit code {code}", returncode=code)
