"""docker-compose.yml validates with Debian's docker-compose and wires what the README names."""

import os
import re
import shutil
import subprocess

import pytest
import yaml

from tests.conftest import ROOT

ENV = {**os.environ, "SECRET_KEY": "s" * 60, "POSTGRES_PASSWORD": "pw-for-validation"}


def compose(*args: str) -> subprocess.CompletedProcess:
    if shutil.which("docker-compose") is None:
        pytest.fail("docker-compose is not installed; `make test` installs it (apt-get install docker-compose)")
    return subprocess.run(
        ["docker-compose", "-f", str(ROOT / "docker-compose.yml"), *args],
        cwd=ROOT,
        env=ENV,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_compose_file_validates_with_and_without_the_gpu_profile():
    assert compose("config", "-q").returncode == 0
    result = compose("--profile", "gpu", "config", "-q")
    assert result.returncode == 0, result.stderr


def test_compose_refuses_to_start_without_secrets():
    env = {k: v for k, v in ENV.items() if k not in {"SECRET_KEY"}}
    result = subprocess.run(
        ["docker-compose", "-f", str(ROOT / "docker-compose.yml"), "config", "-q"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode != 0
    assert "SECRET_KEY" in result.stderr


def test_every_service_the_readme_names_exists_and_is_wired():
    config = yaml.safe_load(compose("--profile", "gpu", "config").stdout)
    services = config["services"]
    readme = (ROOT / "README.md").read_text()
    named = set(re.findall(r"`(postgres|redis|web|worker|vllm|ollama|ollama-pull)`", readme))
    assert {"postgres", "redis", "web", "worker", "vllm", "ollama"} <= named
    assert named <= set(services)

    for name in ("web", "worker"):
        env = services[name]["environment"]
        assert env["DATABASE_URL"].startswith("postgres://prefill:") and env["DATABASE_URL"].endswith(
            "@postgres:5432/prefill"
        )
        assert env["REDIS_URL"] == "redis://redis:6379/0"
        assert env["VLLM_URL"] == "http://vllm:8000"
        assert env["OLLAMA_URL"] == "http://ollama:11434"
        assert env["DJANGO_SETTINGS_MODULE"] == "config.production"
    assert (
        "gunicorn config.wsgi" in " ".join(services["web"]["command"])
        if isinstance(services["web"]["command"], list)
        else "gunicorn config.wsgi" in services["web"]["command"]
    )
    assert services["worker"]["command"] == ["python", "-m", "scripts.services", "worker"]

    for gpu_service in ("vllm", "ollama"):
        devices = services[gpu_service]["deploy"]["resources"]["reservations"]["devices"]
        assert devices[0]["driver"] == "nvidia" and "gpu" in devices[0]["capabilities"]
        assert services[gpu_service]["volumes"], f"{gpu_service} needs a model cache volume"
    assert services["vllm"]["image"].startswith("vllm/vllm-openai")
    assert services["ollama"]["image"].startswith("ollama/ollama")
    assert any("--enable-prefix-caching" in arg for arg in services["vllm"]["command"])
