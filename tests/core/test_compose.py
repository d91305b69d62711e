"""docker-compose.yml validates with Debian's docker-compose and wires what the README names."""

import os
import re
import shutil
import subprocess
import sys
from urllib.parse import urlsplit

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
    assert services["vllm"]["environment"]["VLLM_PREFIX_CACHING"] == "--enable-prefix-caching"
    assert "$VLLM_PREFIX_CACHING" in vllm_shell_command(services)


# --- the GPU deployment (issue 20) -------------------------------------------------------------


def gpu_config(**env: str) -> dict:
    result = compose_with_env(env, "--profile", "gpu", "config")
    assert result.returncode == 0, result.stderr
    return yaml.safe_load(result.stdout)


def compose_with_env(env: dict[str, str], *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        ["docker-compose", "-f", str(ROOT / "docker-compose.yml"), *args],
        cwd=ROOT,
        env={**ENV, **env},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def vllm_shell_command(services: dict) -> str:
    """The script vLLM's entrypoint shell runs, as the container sees it (compose's `$$` is `$`)."""
    assert services["vllm"]["entrypoint"] == ["/bin/sh", "-c"]
    return services["vllm"]["command"][0].replace("$$", "$")


def seconds(duration: str | int) -> float:
    """A compose duration ("30m", "1m30s", "10s", or seconds as a number) in seconds."""
    if isinstance(duration, int | float):
        return float(duration)
    units = {"h": 3600, "m": 60, "s": 1, "ms": 0.001}
    return sum(float(n) * units[unit] for n, unit in re.findall(r"([0-9.]+)(ms|h|m|s)", duration))


def test_every_image_is_pinned_to_a_release_and_the_engines_to_tested_versions():
    services = gpu_config()["services"]
    for name, service in services.items():
        image = service["image"]
        last_part = image.split("/")[-1]
        tag = last_part.rpartition(":")[2] if ":" in last_part else ""
        assert tag, f"{name}: image {image} has no tag, so it means :latest"
        assert tag != "latest", f"{name}: image {image} floats with every release"
    assert re.fullmatch(r"vllm/vllm-openai:v\d+\.\d+\.\d+", services["vllm"]["image"])
    assert re.fullmatch(r"ollama/ollama:\d+\.\d+\.\d+", services["ollama"]["image"])
    assert services["ollama-pull"]["image"] == services["ollama"]["image"]
    # The README names the versions it was checked with.
    readme = (ROOT / "README.md").read_text()
    assert services["vllm"]["image"] in readme and services["ollama"]["image"] in readme


def test_vllm_is_health_checked_and_what_shares_its_gpu_waits_for_it():
    services = gpu_config()["services"]
    check = services["vllm"]["healthcheck"]
    assert check["test"] == ["CMD", "curl", "-f", "http://localhost:8000/health"]
    # A first start downloads the weights and compiles: minutes, not seconds.
    assert seconds(check["start_period"]) >= 600

    def waits_for(service: str, dependency: str, condition: str) -> bool:
        return services[service]["depends_on"].get(dependency, {}).get("condition") == condition

    assert waits_for("ollama", "vllm", "service_healthy")
    assert waits_for("ollama-pull", "ollama", "service_healthy")
    assert waits_for("register-targets", "vllm", "service_healthy")
    assert waits_for("register-targets", "ollama-pull", "service_completed_successfully")
    # The worker reads the targets when it starts: after web has registered them.
    assert waits_for("worker", "web", "service_healthy")
    web = services["web"]["command"]
    web = " ".join(web) if isinstance(web, list) else web
    assert web.index("register_env_targets") < web.index("gunicorn")
    assert services["register-targets"]["command"] == ["python", "manage.py", "register_env_targets"]


def test_gpus_are_chosen_by_id_per_engine_and_tensor_parallelism_follows_them(tmp_path):
    services = gpu_config(VLLM_GPU_IDS="0,1", OLLAMA_GPU_IDS="2")["services"]
    for name, ids in (("vllm", ["0,1"]), ("ollama", ["2"])):
        (device,) = services[name]["deploy"]["resources"]["reservations"]["devices"]
        assert device["device_ids"] == ids and "count" not in device, name
    for name in ("web", "worker"):
        assert services[name]["environment"]["VLLM_GPU_IDS"] == "0,1"
        assert services[name]["environment"]["OLLAMA_GPU_IDS"] == "2"

    # Run the vllm service's own start script with a stand-in `vllm` that prints its arguments.
    (tmp_path / "vllm").write_text('#!/bin/sh\nprintf "%s\\n" "$@"\n')
    (tmp_path / "vllm").chmod(0o755)
    for ids, parallel in (("0,1", "2"), ("3", "1"), ("0,1,2,3", "4")):
        environment = gpu_config(VLLM_GPU_IDS=ids)["services"]["vllm"]["environment"]
        started = subprocess.run(
            ["/bin/sh", "-c", vllm_shell_command(services)],
            env={**environment, "PATH": f"{tmp_path}:/usr/bin:/bin"},
            capture_output=True,
            text=True,
            timeout=10,
            check=True,
        )
        args = started.stdout.splitlines()
        assert args[0] == "vLLM on GPU(s) " + ids + ": --tensor-parallel-size " + parallel
        assert args[1:3] == ["serve", "meta-llama/Llama-3.2-1B-Instruct"]
        assert args[args.index("--tensor-parallel-size") + 1] == parallel
        assert args[args.index("--gpu-memory-utilization") + 1] == "0.5"
        assert args[args.index("--max-model-len") + 1] == "8192"
        assert args[args.index("--max-num-seqs") + 1] == "64"
        assert "--enable-prefix-caching" in args


def test_both_engines_fit_one_gpu_by_an_explicit_split_and_serve_the_context_the_labs_need():
    from labs.models import InferenceTarget

    services = gpu_config()["services"]
    vllm, ollama = services["vllm"]["environment"], services["ollama"]["environment"]
    assert float(vllm["VLLM_GPU_MEMORY_UTILIZATION"]) <= 0.5
    assert int(ollama["OLLAMA_MAX_LOADED_MODELS"]) >= 1 and ollama["OLLAMA_NUM_PARALLEL"] == "1"
    # The largest request a target allows by default is its prompt limit plus its output limit.
    fields = {field.name: field for field in InferenceTarget._meta.get_fields()}
    longest = fields["max_prompt_tokens"].default + fields["max_output_tokens"].default
    assert int(ollama["OLLAMA_CONTEXT_LENGTH"]) >= longest
    assert int(vllm["VLLM_MAX_MODEL_LEN"]) >= longest
    # OLLAMA_MODELS is the pull list for web and ollama-pull; given to the server it would be
    # read as the path of its model store.
    assert "OLLAMA_MODELS" not in ollama


def test_vllm_keeps_its_compile_cache_and_weights_in_named_volumes():
    config = gpu_config()
    mounts = {volume.split(":")[1]: volume.split(":")[0] for volume in config["services"]["vllm"]["volumes"]}
    assert mounts["/root/.cache/vllm"] in config["volumes"]
    assert mounts["/root/.cache/huggingface"] in config["volumes"]


def test_an_engine_left_out_of_env_registers_no_target():
    services = compose_with_env({"VLLM_URL": "", "OLLAMA_URL": ""}, "config").stdout
    env = yaml.safe_load(services)["services"]["web"]["environment"]
    assert env["VLLM_URL"] == "" and env["OLLAMA_URL"] == ""


def test_web_turns_healthy_under_production_settings_so_the_worker_starts(tmp_path):
    """The worker waits for web's health check, so the check must pass with the instructor's own
    ALLOWED_HOSTS: run it against the production settings with compose's environment for web."""
    web = gpu_config(ALLOWED_HOSTS="prefill.example.org")["services"]["web"]
    test = web["healthcheck"]["test"]
    assert test[:3] == ["CMD", "curl", "-fsS"]
    headers = dict(test[i + 1].split(": ", 1) for i, arg in enumerate(test) if arg == "-H")
    url = urlsplit(test[-1])
    probe = (
        "import django; django.setup()\n"
        "from django.test import Client\n"
        f"client = Client(HTTP_HOST={url.netloc!r}, "
        + ", ".join(f"HTTP_{name.upper().replace('-', '_')}={value!r}" for name, value in headers.items())
        + ")\n"
        f"response = client.get({url.path!r})\n"
        "print(response.status_code)\n"
    )
    env = {
        **os.environ,
        **web["environment"],
        # Production refuses ENV's repetitive validation key.
        "SECRET_KEY": "health-check-" + "".join(chr(ord("a") + i % 26) for i in range(50)),
        "DATABASE_URL": f"sqlite:///{tmp_path / 'health.sqlite3'}",
        "REDIS_URL": os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/0"),
        "PREFILL_VAR_DIR": str(tmp_path),
    }
    result = subprocess.run(
        [sys.executable, "-c", probe], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60, check=False
    )
    assert result.stdout.strip() == "200", result.stderr[-2000:]
