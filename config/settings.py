"""Settings for Prefill, read from the environment (12-factor).

The defaults give the embedded single-machine setup: SQLite under var/, a local Redis, DEBUG on.
`config.production` tightens these for a real deployment.
"""

from datetime import timedelta
from pathlib import Path

import dj_database_url

from config.env import ConfigError, env_bool, env_int, env_list, env_str, env_url

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = Path(env_str("PREFILL_VAR_DIR", default=str(BASE_DIR / "var")))
VAR_DIR.mkdir(parents=True, exist_ok=True)

DEBUG = env_bool("DEBUG", default=True)
# A fixed key is fine for a laptop; config.production refuses to start without SECRET_KEY.
SECRET_KEY = env_str("SECRET_KEY", default="dev-only-insecure-key-do-not-use-in-production")
ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", default=["localhost", "127.0.0.1", "[::1]", "testserver"])
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS", default=[])

INSTALLED_APPS = [
    "config.admin.PrefillAdminConfig",  # Django's admin with input guards (config/admin.py)
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "whitenoise.runserver_nostatic",
    "django.contrib.staticfiles",
    "axes",
    "django_htmx",
    "template_partials",
    "csp",
    "core",
    "accounts",
    "courses",
    "questions",
    "labs",
    "workers",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    # A kept signed-in page is answered here, before the session, CSRF, auth and CSP middleware
    # (core/page_cache.py), with the headers and cookie they sent when it was rendered.
    "core.page_cache.KeptPageMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    "core.middleware.DatabaseUnavailableMiddleware",
    "csp.middleware.CSPMiddleware",
    # Last, as django-axes asks: it turns a lockout flagged during the view into the lockout page.
    "axes.middleware.AxesMiddleware",
]

ROOT_URLCONF = "config.urls"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

WSGI_APPLICATION = "config.wsgi.application"

DATABASE_URL = env_url(
    "DATABASE_URL",
    default=f"sqlite:///{VAR_DIR / 'prefill.sqlite3'}",
    schemes=("sqlite", "postgres", "postgresql", "pgsql"),
)
try:
    # Persistent connections are checked before each request reuses them, so the first request
    # after a database restart gets a fresh connection instead of an error.
    DATABASES = {"default": dj_database_url.parse(DATABASE_URL, conn_max_age=60, conn_health_checks=True)}
except ValueError as error:
    raise ConfigError(f"DATABASE_URL could not be parsed: {error}") from None
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # WAL lets the web process read while a worker writes progress; the timeout rides out the
    # short write locks instead of failing with "database is locked".
    DATABASES["default"]["OPTIONS"] = {
        "timeout": 20,
        "transaction_mode": "IMMEDIATE",
        "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
    }

REDIS_URL = env_url("REDIS_URL", default="redis://127.0.0.1:6379/0", schemes=("redis", "rediss"))

CACHES = {
    "default": {
        # Redis, but a Redis outage makes the cache miss instead of failing the page (core/cache.py).
        "BACKEND": "core.cache.ForgivingRedisCache",
        "LOCATION": REDIS_URL,
        "KEY_PREFIX": env_str("CACHE_KEY_PREFIX", default="prefill"),
        "TIMEOUT": 60 * 60 * 24,
        # A Redis that hangs must not hang pages: give up on it quickly and render without it.
        "OPTIONS": {"socket_connect_timeout": 1, "socket_timeout": 2},
    },
}

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]
# django-axes first: it refuses a locked-out (username, IP) pair before any password is checked.
AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",
    "django.contrib.auth.backends.ModelBackend",
]
# Login throttling: after LOGIN_FAILURE_LIMIT wrong passwords for one username from one address,
# that pair may not log in for LOGIN_COOLOFF_MINUTES, even with the right password. Counting the
# pair (not the username alone) means an attacker cannot lock a learner out from everywhere.
AXES_FAILURE_LIMIT = env_int("LOGIN_FAILURE_LIMIT", default=5, minimum=1)
AXES_COOLOFF_TIME = timedelta(minutes=env_int("LOGIN_COOLOFF_MINUTES", default=15, minimum=1))
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
AXES_RESET_ON_SUCCESS = True
# The lockout ends at the time the page promises: more failures during it do not extend it.
AXES_RESET_COOL_OFF_ON_FAILURE_DURING_LOCKOUT = False
AXES_LOCKOUT_CALLABLE = "accounts.throttling.locked_out"
AXES_CLIENT_IP_CALLABLE = "accounts.throttling.client_ip"
# Proxies of ours in front of gunicorn that append to X-Forwarded-For; 0 trusts no such header.
LOGIN_TRUSTED_PROXIES = env_int("LOGIN_TRUSTED_PROXIES", default=0, minimum=0)
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "accounts:me"
LOGOUT_REDIRECT_URL = "home"

LANGUAGE_CODE = "en-gb"
TIME_ZONE = env_str("TIME_ZONE", default="UTC")
USE_I18N = False
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = VAR_DIR / "staticfiles"
STATIC_ROOT.mkdir(parents=True, exist_ok=True)
# Without collectstatic (tests, development) whitenoise serves straight from the app directories.
WHITENOISE_USE_FINDERS = DEBUG
STATICFILES_DIRS = [BASE_DIR / "static"]
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "whitenoise.storage.CompressedManifestStaticFilesStorage"},
}
if DEBUG:
    STORAGES["staticfiles"] = {
        "BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage",
    }

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# Sessions are read from the cache (Redis) and written through to the database: a signed-in
# page costs no session query, and a Redis restart loses no session (read back from the table).
SESSION_ENGINE = "django.contrib.sessions.backends.cached_db"
SESSION_COOKIE_HTTPONLY = True
SESSION_COOKIE_SAMESITE = "Lax"
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
X_FRAME_OPTIONS = "DENY"

# Content Security Policy: scripts only from our own static files (htmx is served from
# django-htmx's static files, never a CDN). Styles also allow inline because the progress bars
# set their width inline and matplotlib's inline SVG figures carry a <style> element; no script
# can be inlined, so injected markup cannot run.
CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": ["'self'"],
        "script-src": ["'self'"],
        "style-src": ["'self'", "'unsafe-inline'"],
        "img-src": ["'self'", "data:"],
        "font-src": ["'self'"],
        "connect-src": ["'self'"],
        "object-src": ["'none'"],
        "base-uri": ["'self'"],
        "form-action": ["'self'"],
        "frame-ancestors": ["'none'"],
    },
}

# Celery: the broker is the same Redis; the database, not Redis, is the source of truth for runs.
CELERY_BROKER_URL = REDIS_URL
CELERY_RESULT_BACKEND = None
CELERY_TASK_IGNORE_RESULT = True
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
CELERY_TASK_DEFAULT_QUEUE = "default"
CELERY_BROKER_TRANSPORT_OPTIONS = {"visibility_timeout": 60 * 60}
CELERY_TASK_ALWAYS_EAGER = env_bool("CELERY_TASK_ALWAYS_EAGER", default=False)

HEALTHZ_TIMEOUT_S = 2.0

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "root": {"handlers": ["console"], "level": env_str("LOG_LEVEL", default="INFO")},
    # django-axes logs every successful login at INFO; its warnings (failures, lockouts) are the news.
    "loggers": {"django.db.backends": {"level": "WARNING"}, "axes": {"level": "WARNING"}},
}

CONTENT_DIRS = {
    "courses": BASE_DIR / "courses" / "content",
    "questions": BASE_DIR / "questions" / "content",
    "labs": BASE_DIR / "labs" / "content",
}

GRADING_RATE_LIMIT_PER_MINUTE = env_int("GRADING_RATE_LIMIT_PER_MINUTE", default=20, minimum=1)
# The grading worker's CPU priority below the web's (nice(2) increment): on a small machine a
# page answers first and a mark waits a few milliseconds more, rather than the other way round.
# The Celery queue free-text answers are graded on (one worker: scripts/services.py). Its own name
# only where two sites share one Redis database (the load benchmark does).
GRADING_QUEUE = env_str("GRADING_QUEUE", default="grading")
GRADING_WORKER_NICENESS = env_int("GRADING_WORKER_NICENESS", default=5, minimum=0)
# Optional LLM judge: any OpenAI-compatible endpoint. Unset = deterministic rubric grading only.
GRADING_JUDGE_BASE_URL = env_str("GRADING_JUDGE_BASE_URL", default="")
GRADING_JUDGE_MODEL = env_str("GRADING_JUDGE_MODEL", default="")
GRADING_JUDGE_API_KEY = env_str("GRADING_JUDGE_API_KEY", default="")
GRADING_JUDGE_TIMEOUT_S = env_int("GRADING_JUDGE_TIMEOUT_S", default=20, minimum=1)

# Lab runs: a running run whose heartbeat is older than this is presumed to have lost its worker;
# a queued run dispatched longer ago than LAB_REDISPATCH_AFTER_S onto an empty queue is re-sent.
LAB_HEARTBEAT_S = env_int("LAB_HEARTBEAT_S", default=5, minimum=1)
LAB_HEARTBEAT_STALE_S = env_int("LAB_HEARTBEAT_STALE_S", default=45, minimum=5)
LAB_REDISPATCH_AFTER_S = env_int("LAB_REDISPATCH_AFTER_S", default=60, minimum=5)
# How long a running lab waits for the database to come back (a restart, a failover) before it
# gives up on writing; it keeps measuring meanwhile and writes what it measured afterwards.
LAB_DATABASE_PATIENCE_S = env_int("LAB_DATABASE_PATIENCE_S", default=120, minimum=1)
# How often beat runs the reaper (stale runs, lost broker messages, judge opinions that never came).
LAB_REAPER_EVERY_S = env_int("LAB_REAPER_EVERY_S", default=20, minimum=1)
CELERY_BEAT_SCHEDULE = {
    "reap-stale-runs": {"task": "workers.tasks.reap_stale_runs", "schedule": float(LAB_REAPER_EVERY_S)},
    "settle-stale-judgements": {"task": "workers.tasks.settle_stale_judgements", "schedule": 60.0},
    # Answers whose grade never came (no grading worker, a lost message): graded by the settler.
    "settle-stale-grades": {"task": "questions.tasks.settle_stale_grades", "schedule": 15.0},
}
