"""Typed readers for settings that come from the environment (12-factor).

Each reader raises ConfigError naming the variable and what is allowed, so a bad value stops the
process with one line instead of a traceback deep inside Django.

Every process entry point stops the same way on a bad value: manage.py, gunicorn (config/wsgi.py),
the Celery worker and beat (config/celery.py) and the local engine (engines/local.py) print
`Configuration error: <what is wrong and what is allowed>` on stderr and exit.
"""

import contextlib
import os
import sys
from collections.abc import Iterator
from typing import NoReturn
from urllib.parse import urlparse

# The exit status of a process stopped by a bad environment value.
CONFIG_EXIT_STATUS = 2


class ConfigError(Exception):
    """An environment variable is missing or has a value we cannot use."""


_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}


def env_str(name: str, *, default: str | None = None) -> str:
    value = os.environ.get(name)
    if value is None:
        if default is None:
            raise ConfigError(f"{name} is not set and has no default here; set it in the environment")
        return default
    return value


def env_bool(name: str, *, default: bool) -> bool:
    raw = os.environ.get(name)
    if raw is None:
        return default
    lowered = raw.strip().lower()
    if lowered in _TRUE:
        return True
    if lowered in _FALSE:
        return False
    raise ConfigError(f"{name}={raw!r} is not a boolean; use one of 1/0, true/false, yes/no, on/off")


def env_int(name: str, *, default: int, minimum: int | None = None) -> int:
    raw = os.environ.get(name)
    if raw is None:
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ConfigError(f"{name}={raw!r} is not a whole number") from None
    if minimum is not None and value < minimum:
        raise ConfigError(f"{name}={value} is below the minimum of {minimum}")
    return value


def env_list(name: str, *, default: list[str]) -> list[str]:
    raw = os.environ.get(name)
    if raw is None:
        return default
    return [item.strip() for item in raw.split(",") if item.strip()]


def env_url(name: str, *, default: str, schemes: tuple[str, ...]) -> str:
    raw = os.environ.get(name, default)
    parsed = urlparse(raw)
    if parsed.scheme not in schemes:
        allowed = ", ".join(f"{scheme}://" for scheme in schemes)
        raise ConfigError(f"{name}={raw!r} has an unsupported scheme; use {allowed}")
    return raw


def stop_on_config_error(error: ConfigError, *, status: int = CONFIG_EXIT_STATUS) -> NoReturn:
    """The one line every entry point prints for a bad environment value, then exit."""
    sys.stderr.write(f"Configuration error: {error}\n")
    sys.stderr.flush()
    raise SystemExit(status)


@contextlib.contextmanager
def configuration_checked(*, status: int = CONFIG_EXIT_STATUS) -> Iterator[None]:
    """Run an entry point's start-up; a ConfigError inside stops the process with the one line.
    A misconfigured environment is the operator's to fix: a traceback would only hide the line."""
    try:
        yield
    except ConfigError as error:
        stop_on_config_error(error, status=status)


def load_settings_or_stop(*, status: int = CONFIG_EXIT_STATUS) -> None:
    """Load Django's settings now, where every environment value is read and checked, rather than
    deep inside a server's or worker's start-up where the error would surface as a traceback."""
    from django.conf import settings

    with configuration_checked(status=status):
        settings.INSTALLED_APPS  # noqa: B018 - the first access imports and checks the settings module
