"""Typed readers for settings that come from the environment (12-factor).

Each reader raises ConfigError naming the variable and what is allowed, so a bad value stops the
process with one line instead of a traceback deep inside Django.
"""

import os
from urllib.parse import urlparse


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
