"""Stopping the local engine always works: two SIGTERMs in quick succession, or SIGTERM to the
process group of `make engine` (make passes the signal on to its child, which already got one),
stop the server and every llama-server it started within 15 s.

Before the fix, `engines.local serve` set a threading.Event in its SIGTERM handler; a second
SIGTERM arriving inside that Event.set() hung the process for ever in Condition.__enter__ and left
both llama-servers running.
"""

import os
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from engines.check import free_url
from engines.llamacpp.build import BuildError, ensure_llama_server
from engines.stopping import StopSignals
from tests.conftest import ROOT
from tests.core.test_run_command import _alive, _children_of

STOP_WITHIN_S = 15.0


def _engine_env(tmp_path) -> tuple[dict[str, str], list[str]]:
    urls = [free_url(), free_url()]
    env = {
        **os.environ,
        "LOCAL_ENGINE_URL": urls[0],
        "LOCAL_ENGINE_BATCHED_URL": urls[1],
        # One thread per server: the test is about stopping, not speed, on a shared CPU.
        "PREFILL_ENGINE_THREADS": "1",
    }
    return env, urls


def _wait_until_serving(process: subprocess.Popen, urls: list[str], *, timeout_s: float = 240.0) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        assert process.poll() is None, f"the engine exited early with code {process.returncode}"
        try:
            if all(httpx.get(f"{url}/health", timeout=1).status_code == 200 for url in urls):
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    pytest.fail(f"the engine did not serve {urls} within {timeout_s:.0f} s")


def _wait_for_line(process: subprocess.Popen, text: str, *, timeout_s: float = 120.0) -> None:
    deadline = time.monotonic() + timeout_s
    seen = b""
    fd = process.stdout.fileno()  # raw reads: a buffered reader would hide lines from select
    while time.monotonic() < deadline:
        ready, _, _ = select.select([fd], [], [], 0.5)
        if ready:
            chunk = os.read(fd, 4096)
            seen += chunk
            if text.encode() in seen:
                return
            if not chunk:
                break
    pytest.fail(f"the engine never printed {text!r}; it printed: {seen.decode(errors='replace')[-1000:]}")


def _assert_all_stop(pids: set[int], *, started: float) -> float:
    while time.monotonic() - started < STOP_WITHIN_S:
        if not [pid for pid in pids if _alive(pid)]:
            return time.monotonic() - started
        time.sleep(0.1)
    left = {pid: _command_line(pid) for pid in pids if _alive(pid)}
    pytest.fail(f"still running {STOP_WITHIN_S:.0f} s after SIGTERM: {left}")


def _command_line(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_text().replace("\0", " ").strip()
    except OSError:
        return ""


def _llama_servers(pids: set[int]) -> int:
    return sum("llama-server" in _command_line(pid) for pid in pids if _alive(pid))


@pytest.fixture(scope="module")
def llama_server():
    try:
        return ensure_llama_server()
    except BuildError as error:
        pytest.fail(f"llama-server is needed for the local engine and could not be built: {error}")


def test_a_second_signal_is_counted_and_cannot_interrupt_the_cleanup():
    """The handler raises once (to unwind a blocking start-up), then only counts."""
    stop = StopSignals(raise_first=True).install()
    cleaned_up = False
    try:
        try:
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(5)
            pytest.fail("the first SIGTERM did not interrupt the sleep")
        except KeyboardInterrupt:
            stop.stop_raising()
            os.kill(os.getpid(), signal.SIGTERM)  # arrives during the cleanup
            time.sleep(0.05)
            cleaned_up = True
        assert stop.received == signal.SIGTERM
        assert stop.count == 2
        assert cleaned_up
        started = time.monotonic()
        assert stop.wait(5.0)
        assert time.monotonic() - started < 0.1
    finally:
        stop.restore()
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL


@pytest.mark.slow
def test_serve_stops_everything_on_two_sigterms_in_quick_succession(tmp_path, llama_server):
    env, urls = _engine_env(tmp_path)
    process = subprocess.Popen([sys.executable, "-m", "engines.local", "serve"], cwd=ROOT, env=env,
                               stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                               start_new_session=True)
    try:
        _wait_until_serving(process, urls)
        # Past start-up: the servers are up and the default model is loaded.
        _wait_for_line(process, "loaded at start:")
        tree = {process.pid} | _children_of(process.pid)
        assert _llama_servers(tree) >= 4
        started = time.monotonic()
        process.send_signal(signal.SIGTERM)
        process.send_signal(signal.SIGTERM)
        _assert_all_stop(tree, started=started)
        assert process.wait(timeout=1) == 0
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
        process.wait()
    for url in urls:
        with pytest.raises(httpx.ConnectError):
            httpx.get(f"{url}/health", timeout=2)


@pytest.mark.slow
def test_serve_stops_on_two_sigterms_during_startup(tmp_path, llama_server):
    """Signals while the servers are still loading: the start-up unwinds, nothing is left."""
    env, _urls = _engine_env(tmp_path)
    process = subprocess.Popen([sys.executable, "-m", "engines.local", "serve"], cwd=ROOT, env=env,
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                               start_new_session=True)
    try:
        deadline = time.monotonic() + 60
        # Wait for the first llama-server to exist, so the signal lands mid start-up.
        while time.monotonic() < deadline:
            tree = {process.pid} | _children_of(process.pid)
            if _llama_servers(tree):
                break
            time.sleep(0.02)
        tree = {process.pid} | _children_of(process.pid)
        started = time.monotonic()
        process.send_signal(signal.SIGTERM)
        process.send_signal(signal.SIGTERM)
        _assert_all_stop(tree | _children_of(process.pid), started=started)
        code = process.wait(timeout=1)
        assert code in (0, 130), process.stderr.read().decode(errors="replace")[-3000:]
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
        process.wait()


@pytest.mark.slow
def test_sigterm_to_the_process_group_of_make_engine_stops_everything(tmp_path, llama_server):
    env, urls = _engine_env(tmp_path)
    # -o venv: the test uses the environment it runs in and never reinstalls it.
    make = subprocess.Popen(["make", "--no-print-directory", "-o", "venv", "engine"], cwd=ROOT, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        _wait_until_serving(make, urls)
        tree = {make.pid} | _children_of(make.pid)
        started = time.monotonic()
        os.killpg(make.pid, signal.SIGTERM)  # kill -- -PGID
        _assert_all_stop(tree, started=started)
    finally:
        for pid in [make.pid, *_children_of(make.pid)]:
            if _alive(pid):
                os.kill(pid, signal.SIGKILL)
        make.wait()
    for url in urls:
        with pytest.raises(httpx.ConnectError):
            httpx.get(f"{url}/health", timeout=2)
