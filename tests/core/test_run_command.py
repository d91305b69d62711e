"""`make run`'s supervisor: starts Redis when none answers, the workers and the web server, and
Ctrl-C leaves nothing running."""

import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from tests.conftest import ROOT, free_port


def _children_of(pid: int) -> set[int]:
    """Every descendant pid, read from /proc (no extra dependency)."""
    parents: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        parents.setdefault(ppid, []).append(int(entry.name))
    found, todo = set(), [pid]
    while todo:
        for child in parents.get(todo.pop(), []):
            if child not in found:
                found.add(child)
                todo.append(child)
    return found


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # The process may be reaped between the signal and the read: gone is not alive.
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def test_run_starts_redis_workers_and_web_and_ctrl_c_stops_all_of_it(tmp_path):
    web_port, redis_port = free_port(), free_port()
    env = {
        **{
            k: v
            for k, v in os.environ.items()
            if k not in {"DJANGO_SETTINGS_MODULE", "DJANGO_ALLOW_ASYNC_UNSAFE", "DATABASE_URL"}
        },
        "PREFILL_VAR_DIR": str(tmp_path),
        "REDIS_URL": f"redis://127.0.0.1:{redis_port}/0",
        "LOCAL_ENGINES": "",
    }
    subprocess.run([sys.executable, "manage.py", "migrate", "--noinput", "-v", "0"], cwd=ROOT, env=env, check=True)
    process = subprocess.Popen(
        [sys.executable, "-m", "scripts.services", "run", "--port", str(web_port), "--no-engine"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        deadline = time.monotonic() + 90
        health = None
        while time.monotonic() < deadline:
            try:
                health = httpx.get(f"http://127.0.0.1:{web_port}/healthz", timeout=2)
                if health.status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            time.sleep(0.5)
        assert health is not None and health.json()["status"] == "ok"
        assert (tmp_path / "redis").is_dir()  # it started its own redis-server under var/
        children = _children_of(process.pid)
        names = {Path(f"/proc/{pid}/cmdline").read_text().replace("\0", " ") for pid in children if _alive(pid)}
        assert any("redis-server" in name for name in names)
        assert any("celery" in name and "worker" in name for name in names)
        assert any("celery" in name and "beat" in name for name in names)
        assert any("gunicorn" in name for name in names)
    finally:
        process.send_signal(signal.SIGINT)
        output, _ = process.communicate(timeout=60)
    assert "Prefill is running: http://127.0.0.1:" in output
    time.sleep(0.5)
    assert not [pid for pid in children if _alive(pid)], output[-2000:]
    with httpx.Client() as client:
        try:
            client.get(f"http://127.0.0.1:{web_port}/healthz", timeout=1)
            raise AssertionError("the web server still answers after Ctrl-C")
        except httpx.ConnectError:
            pass


def _site_env(tmp_path, *, redis_port: int, **extra: str) -> dict[str, str]:
    return {
        **{
            k: v
            for k, v in os.environ.items()
            if k not in {"DJANGO_SETTINGS_MODULE", "DJANGO_ALLOW_ASYNC_UNSAFE", "DATABASE_URL"}
        },
        "PREFILL_VAR_DIR": str(tmp_path),
        "REDIS_URL": f"redis://127.0.0.1:{redis_port}/0",
        **extra,
    }


def _command_lines(pids: set[int]) -> list[str]:
    lines = []
    for pid in pids:
        if _alive(pid):
            try:
                lines.append(Path(f"/proc/{pid}/cmdline").read_text().replace("\0", " ").strip())
            except OSError:
                continue
    return lines


def _wait_for_processes(make: subprocess.Popen, *, wanted: list[str], timeout_s: float) -> set[int]:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        assert make.poll() is None, f"make exited early with code {make.returncode}"
        tree = _children_of(make.pid)
        lines = _command_lines(tree)
        if all(any(word in line for line in lines) for word in wanted):
            return tree
        time.sleep(0.5)
    running = _command_lines(_children_of(make.pid))
    raise AssertionError(f"not all of {wanted} started within {timeout_s:.0f} s: {running}")


def _kill_group_and_expect_nothing_left(make: subprocess.Popen, tree: set[int]) -> float:
    """`kill -- -PGID` of make; every process it started must be gone within 15 s."""
    tree = tree | _children_of(make.pid)
    started = time.monotonic()
    os.killpg(make.pid, signal.SIGTERM)
    while time.monotonic() - started < 15:
        if not [pid for pid in tree if _alive(pid)]:
            return time.monotonic() - started
        time.sleep(0.1)
    left = _command_lines(tree)
    for pid in tree:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    raise AssertionError(f"still running 15 s after SIGTERM to make's process group: {left}")


def test_sigterm_to_the_process_group_of_make_worker_stops_every_celery_process(tmp_path):
    redis_port = free_port()
    env = _site_env(tmp_path, redis_port=redis_port)
    subprocess.run([sys.executable, "manage.py", "migrate", "--noinput", "-v", "0"], cwd=ROOT, env=env, check=True)
    # -o venv: use the environment the tests run in, never reinstall it.
    make = subprocess.Popen(
        ["make", "--no-print-directory", "-o", "venv", "worker"],
        cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
    )
    try:
        tree = _wait_for_processes(make, wanted=["redis-server", "worker -Q default", "beat"], timeout_s=90)
        # Celery's prefork pool: the worker's own children must go too. They fork once the worker
        # has imported the project, which takes longer on a loaded machine: wait for them.
        deadline = time.monotonic() + 60
        while True:
            tree |= _children_of(make.pid)
            celery = [line for line in _command_lines(tree) if "celery" in line]
            if len(celery) >= 3 or time.monotonic() > deadline:
                break
            time.sleep(0.5)
        assert len(celery) >= 3, celery
        _kill_group_and_expect_nothing_left(make, tree)
    finally:
        make.wait(timeout=30)


@pytest.mark.slow
def test_sigterm_to_the_process_group_of_make_run_stops_everything_with_the_engine(tmp_path):
    """`make run` with the local engine: web, workers, beat, Redis, llama-servers all stop."""
    from engines.check import free_url
    from engines.llamacpp.build import BuildError, ensure_llama_server

    try:
        ensure_llama_server()
    except BuildError as error:
        pytest.fail(f"llama-server is needed for the local engine and could not be built: {error}")
    web_port, redis_port = free_port(), free_port()
    env = _site_env(
        tmp_path,
        redis_port=redis_port,
        PORT=str(web_port),
        LOCAL_ENGINE_URL=free_url(),
        LOCAL_ENGINE_BATCHED_URL=free_url(),
        PREFILL_ENGINE_THREADS="1",
    )
    make = subprocess.Popen(
        ["make", "--no-print-directory", "-o", "venv", "run"],
        cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
    )
    try:
        tree = _wait_for_processes(
            make, wanted=["redis-server", "llama-server", "worker -Q default", "beat", "gunicorn"], timeout_s=300
        )
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                if httpx.get(f"http://127.0.0.1:{web_port}/healthz", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.5)
        time.sleep(2)
        tree |= _children_of(make.pid)
        assert sum("llama-server" in line for line in _command_lines(tree)) >= 4
        _kill_group_and_expect_nothing_left(make, tree)
    finally:
        make.wait(timeout=30)
    with pytest.raises(httpx.ConnectError):
        httpx.get(f"http://127.0.0.1:{web_port}/healthz", timeout=1)
