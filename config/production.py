"""Production settings: everything in config.settings, hardened, with no usable secret default."""

import os

from config.env import ConfigError, env_bool, env_int

if not os.environ.get("SECRET_KEY"):
    raise ConfigError("SECRET_KEY must be set in production (50+ random characters)")
if len(os.environ["SECRET_KEY"]) < 50 or len(set(os.environ["SECRET_KEY"])) < 5:
    raise ConfigError("SECRET_KEY is too short or too repetitive; use 50+ random characters")
os.environ.setdefault("DEBUG", "false")

from config.settings import *  # noqa: F403
from config.settings import STORAGES

if DEBUG:  # noqa: F405
    raise ConfigError("DEBUG must be false in production (unset it or set DEBUG=false)")

STORAGES["staticfiles"] = {
    "BACKEND": "whitenoise.storage.CompressedManifestStaticFilesStorage",
}

# TLS terminates at the proxy in front of gunicorn; it sets X-Forwarded-Proto.
SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
SECURE_SSL_REDIRECT = env_bool("SECURE_SSL_REDIRECT", default=True)
SECURE_HSTS_SECONDS = env_int("SECURE_HSTS_SECONDS", default=60 * 60 * 24 * 365, minimum=0)
SECURE_HSTS_INCLUDE_SUBDOMAINS = True
SECURE_HSTS_PRELOAD = True
SESSION_COOKIE_SECURE = True
CSRF_COOKIE_SECURE = True
