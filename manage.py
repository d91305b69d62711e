#!/usr/bin/env python
"""Django's command-line utility for administrative tasks."""

import os
import sys


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    from config.env import ConfigError

    try:
        from django.core.management import execute_from_command_line

        execute_from_command_line(sys.argv)
    except ConfigError as error:
        # A misconfigured environment is the operator's to fix: one line, no traceback.
        sys.stderr.write(f"Configuration error: {error}\n")
        sys.exit(2)


if __name__ == "__main__":
    main()
