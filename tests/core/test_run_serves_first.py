"""`make run` serves first and builds after: the supervisor (scripts.services) serves the home
page, a lesson and the Labs page while the local engine is still building, the Labs page shows
the build's progress, the terminal shows one short status block, and each service logs to its
own file under var/log/. The build is simulated: PREFILL_LOCAL_ENGINE_COMMAND runs a script that
writes what llama-server's build writes (its progress record and a Ninja log) and then waits."""

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx

from engines.llamacpp import LLAMA_CPP_PYTHON_VERSION
from tests.conftest import ROOT, free_port
from tests.core.test_run_command import _alive, _children_of

SLOW_BUILD = """
import json, os, sys, time
from pathlib import Path
root = Path(sys.argv[1])
root.mkdir(parents=True, exist_ok=True)
(root / "build.log").write_text(
    "$ cmake --build build --target llama-server -j 2\\n"
    "[36/206] Building CXX object ggml/src/CMakeFiles/ggml-cpu.dir/ops.cpp.o\\n"
    "[37/206] Building CXX object ggml/src/CMakeFiles/ggml-cpu.dir/vec.cpp.o\\n"
)
record = {"phase": "compiling", "started_at": time.time() - 75, "pid": os.getpid(), "log": str(root / "build.log")}
(root / "build-progress.json").write_text(json.dumps(record))
time.sleep(600)
"""


def _get(url: str, *, timeout_s: float) -> httpx.Response:
    deadline = time.monotonic() + timeout_s
    last: Exception | None = None
    while time.monotonic() < deadline:
        try:
            response = httpx.get(url, timeout=5)
            if response.status_code < 500:
                return response
        except httpx.HTTPError as error:
            last = error
        time.sleep(0.5)
    raise AssertionError(f"{url} did not answer within {timeout_s:.0f} s ({last})")


def test_the_site_serves_while_the_engine_builds_and_the_labs_page_shows_the_build(tmp_path):
    web_port, redis_port = free_port(), free_port()
    cache = tmp_path / "engine-cache"
    script = tmp_path / "slow_build.py"
    script.write_text(SLOW_BUILD)
    env = {
        **{
            k: v
            for k, v in os.environ.items()
            if k not in {"DJANGO_SETTINGS_MODULE", "DJANGO_ALLOW_ASYNC_UNSAFE", "DATABASE_URL"}
        },
        "PREFILL_VAR_DIR": str(tmp_path / "var"),
        "REDIS_URL": f"redis://127.0.0.1:{redis_port}/0",
        "PREFILL_ENGINE_CACHE": str(cache),
        "PREFILL_LOCAL_ENGINE_COMMAND": f"{sys.executable} {script} {cache / LLAMA_CPP_PYTHON_VERSION}",
        # Nothing answers there, so the engines are never ready during the test.
        "LOCAL_ENGINE_URL": f"http://127.0.0.1:{free_port()}",
        "LOCAL_ENGINE_BATCHED_URL": f"http://127.0.0.1:{free_port()}",
    }
    for step in (["migrate", "--noinput", "-v", "0"], ["sync_content"]):
        subprocess.run([sys.executable, "manage.py", *step], cwd=ROOT, env=env, check=True, capture_output=True)
    started = time.monotonic()
    process = subprocess.Popen(
        [sys.executable, "-m", "scripts.services", "run", "--port", str(web_port)],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    base = f"http://127.0.0.1:{web_port}"
    try:
        home = _get(f"{base}/", timeout_s=60)
        assert home.status_code == 200 and "Prefill" in home.text
        assert time.monotonic() - started < 60
        lesson = _get(f"{base}/learn/lessons/roofline-speed-of-light/", timeout_s=10)
        assert lesson.status_code == 200 and "The roofline and the speed of light" in lesson.text
        children = _children_of(process.pid)
        commands = [Path(f"/proc/{pid}/cmdline").read_text().replace("\0", " ") for pid in children if _alive(pid)]
        assert any(str(script) in command for command in commands)  # the build is still going
        labs = _get(f"{base}/labs/", timeout_s=10).text
        deadline = time.monotonic() + 20
        while "Building the local engines" not in labs and time.monotonic() < deadline:
            time.sleep(1)
            labs = httpx.get(f"{base}/labs/", timeout=5).text
        assert "Building the local engines" in labs
        assert "compiling, 37/206 units (18%)" in labs
        assert "elapsed of about 7 min 00 s" in labs  # no earlier build here: the typical first build
        assert 'aria-valuenow="18"' in labs
        lab = httpx.get(f"{base}/labs/ttft-vs-output-length/", timeout=5).text
        assert "Building the local engines" in lab
        log_dir = tmp_path / "var" / "log"
        assert "GET /labs/ HTTP/1.1" in (log_dir / "web.log").read_text()  # gunicorn's access log
        assert (log_dir / "worker-default.log").is_file() and (log_dir / "engine.log").is_file()
    finally:
        process.send_signal(signal.SIGINT)
        output, _ = process.communicate(timeout=60)
    assert "Prefill is running: http://127.0.0.1:" in output
    assert re.search(r"^  local engines +building: compiling, 37/206 units \(18%\)", output, re.MULTILINE), output
    assert f"logs: {tmp_path / 'var' / 'log'}/<service>.log" in output
    assert "celery@" not in output and "[tasks]" not in output  # the banners went to the logs
    assert len(output.splitlines()) < 60, output
    time.sleep(0.5)
    assert not [pid for pid in children if _alive(pid)], output[-2000:]
    assert not (tmp_path / "var" / "run" / "local-engines.json").exists()


def test_the_labs_page_says_nothing_of_local_engines_without_a_running_supervisor(client, db, settings, tmp_path):
    settings.VAR_DIR = tmp_path
    assert "local engines" not in client.get("/labs/").content.decode()
    state = tmp_path / "run" / "local-engines.json"
    state.parent.mkdir(parents=True)
    # Left behind by a supervisor that was killed a minute ago: not shown.
    state.write_text(json.dumps({"state": "building", "detail": "compiling", "updated_at": time.time() - 60}))
    assert "Building the local engines" not in client.get("/labs/").content.decode()
    failed = {"state": "failed", "detail": "the engine exited with code 1", "updated_at": time.time()}
    state.write_text(json.dumps(failed))
    html = client.get("/labs/").content.decode()
    assert "The local engines did not start" in html and "the engine exited with code 1" in html
