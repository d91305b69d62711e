"""Bad environment values stop the process with one line naming the variable."""

import os
import subprocess
import sys

import pytest

from config.env import ConfigError, env_bool, env_int, env_url
from tests.conftest import ROOT


def run_manage(*args: str, **env: str) -> subprocess.CompletedProcess:
    # The browser tests set DJANGO_ALLOW_ASYNC_UNSAFE in this process; a deployment never has it.
    full_env = {k: v for k, v in os.environ.items() if k not in {"DJANGO_SETTINGS_MODULE", "DJANGO_ALLOW_ASYNC_UNSAFE"}}
    full_env.update(env)
    return subprocess.run(
        [sys.executable, "manage.py", *args], cwd=ROOT, env=full_env, capture_output=True, text=True, timeout=120
    )


@pytest.mark.parametrize(
    ("env", "needle"),
    [
        ({"DATABASE_URL": "mysql://x@localhost/db"}, "DATABASE_URL"),
        ({"REDIS_URL": "http://localhost:6379"}, "REDIS_URL"),
        ({"DEBUG": "maybe"}, "DEBUG"),
    ],
)
def test_invalid_environment_gives_one_line_naming_the_variable(env, needle):
    result = run_manage("check", **env)
    assert result.returncode == 2
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("Configuration error:")
    assert needle in lines[0]
    assert "Traceback" not in result.stderr


def test_production_refuses_to_start_without_a_secret_key():
    result = run_manage("check", DJANGO_SETTINGS_MODULE="config.production", SECRET_KEY="")
    assert result.returncode == 2
    assert "SECRET_KEY must be set" in result.stderr
    assert "Traceback" not in result.stderr


def test_production_settings_pass_check_deploy_without_warnings():
    result = run_manage(
        "check",
        "--deploy",
        "--fail-level",
        "WARNING",
        DJANGO_SETTINGS_MODULE="config.production",
        SECRET_KEY="k3y-" + "x7Yq9pLm2Zr8Tn4Wv6Bs1Hc5Jd0Fg3Ka" * 2,
        ALLOWED_HOSTS="prefill.example.org",
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "no issues" in result.stdout


def test_env_readers_explain_what_is_allowed(monkeypatch):
    monkeypatch.setenv("X_BOOL", "perhaps")
    with pytest.raises(ConfigError, match="X_BOOL='perhaps' is not a boolean; use one of"):
        env_bool("X_BOOL", default=False)
    monkeypatch.setenv("X_INT", "-3")
    with pytest.raises(ConfigError, match="below the minimum of 1"):
        env_int("X_INT", default=5, minimum=1)
    monkeypatch.setenv("X_URL", "ftp://host")
    with pytest.raises(ConfigError, match="use redis://"):
        env_url("X_URL", default="redis://localhost", schemes=("redis",))


BAD_REDIS = {"REDIS_URL": "http://x"}
REDIS_LINE = "Configuration error: REDIS_URL='http://x' has an unsupported scheme; use redis://, rediss://"
BAD_INT = {"LAB_HEARTBEAT_S": "soon"}
INT_LINE = "Configuration error: LAB_HEARTBEAT_S='soon' is not a whole number"


def run_entry_point(argv: list[str], **env: str) -> subprocess.CompletedProcess:
    """A process started directly, as a deployment or an operator starts it (not through make run)."""
    full_env = {k: v for k, v in os.environ.items() if k not in {"DJANGO_SETTINGS_MODULE", "DJANGO_ALLOW_ASYNC_UNSAFE"}}
    full_env.update(env)
    return subprocess.run(argv, cwd=ROOT, env=full_env, capture_output=True, text=True, timeout=120)


ENTRY_POINTS = {
    # gunicorn as make run, the Dockerfile and docker compose start it (more workers than one, so
    # a message printed per worker would show twice).
    "web (gunicorn config.wsgi)": [sys.executable, "-m", "gunicorn", "config.wsgi", "--bind", "127.0.0.1:0",
                                   "--workers", "2"],
    "celery worker": [sys.executable, "-m", "celery", "-A", "config", "worker", "-Q", "default", "-c", "1"],
    "celery beat": [sys.executable, "-m", "celery", "-A", "config", "beat"],
    "manage.py": [sys.executable, "manage.py", "check"],
}


@pytest.mark.parametrize(("bad", "line"), [(BAD_REDIS, REDIS_LINE), (BAD_INT, INT_LINE)], ids=["url", "int"])
@pytest.mark.parametrize("entry_point", list(ENTRY_POINTS))
def test_every_entry_point_stops_with_the_same_one_line_on_a_bad_value(entry_point, bad, line):
    result = run_entry_point(ENTRY_POINTS[entry_point], **bad)
    output = result.stdout + result.stderr
    assert result.returncode == 2, output
    assert "Traceback" not in output
    assert output.count("Configuration error:") == 1, output
    assert line in result.stderr.splitlines(), output


@pytest.mark.parametrize(
    ("bad", "line"),
    [
        ({"PREFILL_ENGINE_THREADS": "many"},
         "Configuration error: PREFILL_ENGINE_THREADS='many' is not a whole number"),
        ({"LOCAL_ENGINE_URL": "ftp://gpu-box"},
         "Configuration error: LOCAL_ENGINE_URL='ftp://gpu-box' has an unsupported scheme; use http://"),
    ],
    ids=["int", "url"],
)
def test_the_local_engine_stops_with_the_same_one_line_before_building_anything(bad, line):
    result = run_entry_point([sys.executable, "-m", "engines.local", "serve"], **bad)
    assert result.returncode == 2
    assert result.stderr.splitlines() == [line]
    assert "Traceback" not in result.stdout + result.stderr
