"""`make run`'s supervisor: starts Redis when none answers, the workers and the web server, and
Ctrl-C leaves nothing running."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx

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
    stat = Path(f"/proc/{pid}/stat")
    return stat.exists() and stat.read_text().rsplit(")", 1)[1].split()[0] != "Z"


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
