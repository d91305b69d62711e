"""Start what Prefill needs on one machine and stop all of it on Ctrl-C.

`make run` calls `python -m scripts.services run`: make sure Redis answers (start a private
redis-server under var/ when none does), then start the Celery worker(s), the beat scheduler and
gunicorn, print the URL and wait. Every child is in its own process group and gets SIGTERM, then
SIGKILL after a grace period, so nothing is left running.
"""

import argparse
import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlparse

from scripts.stopping import StopSignals

ROOT = Path(__file__).resolve().parent.parent
VAR = Path(os.environ.get("PREFILL_VAR_DIR", ROOT / "var"))


@dataclass
class Child:
    name: str
    process: subprocess.Popen


def redis_answers(url: str, *, timeout_s: float = 1.0) -> bool:
    """PING over a raw socket, so this works before the project's packages are importable."""
    parsed = urlparse(url)
    host, port = parsed.hostname or "127.0.0.1", parsed.port or 6379
    try:
        with socket.create_connection((host, port), timeout=timeout_s) as sock:
            if parsed.password:
                sock.sendall(f"AUTH {parsed.password}\r\n".encode())
                sock.recv(64)
            sock.sendall(b"PING\r\n")
            return sock.recv(64).startswith(b"+PONG")
    except OSError:
        return False


def start_redis(url: str) -> Child | None:
    """Start a local redis-server on REDIS_URL's port when nothing answers there."""
    if redis_answers(url):
        return None
    parsed = urlparse(url)
    if parsed.hostname not in {"127.0.0.1", "localhost", "::1"}:
        sys.exit(f"Redis does not answer at REDIS_URL={url} and it is not local, so it cannot be started here.")
    binary = shutil.which("redis-server")
    if binary is None:
        sys.exit(
            "No Redis answers at REDIS_URL and redis-server is not installed: "
            "run `sudo apt-get install redis-server` (Debian/Ubuntu) or set REDIS_URL."
        )
    data_dir = VAR / "redis"
    data_dir.mkdir(parents=True, exist_ok=True)
    port = parsed.port or 6379
    process = subprocess.Popen(
        [
            binary,
            "--bind",
            "127.0.0.1",
            "--port",
            str(port),
            "--dir",
            str(data_dir),
            "--appendonly",
            "yes",
            "--save",
            "60 1",
            "--logfile",
            str(data_dir / "redis.log"),
        ],
        start_new_session=True,
    )
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        if redis_answers(url):
            print(f"Started redis-server on 127.0.0.1:{port} (data in {data_dir})", flush=True)
            return Child("redis", process)
        if process.poll() is not None:
            sys.exit(f"redis-server exited with code {process.returncode}; see {data_dir / 'redis.log'}")
        time.sleep(0.1)
    process.terminate()
    sys.exit(f"redis-server did not answer on port {port} within 10 s; see {data_dir / 'redis.log'}")


def _spawn(name: str, argv: list[str], env: dict[str, str]) -> Child:
    return Child(name, subprocess.Popen(argv, cwd=ROOT, env=env, start_new_session=True))


def worker_commands(*, python: str) -> list[tuple[str, list[str]]]:
    """One Celery worker for the default queue, one per enabled target queue, plus beat.

    The target queues are asked from the database, so a target added by staff gets its worker on
    the next start.
    """
    queues = subprocess.run(
        [python, "manage.py", "worker_queues"], cwd=ROOT, capture_output=True, text=True, check=False
    )
    target_queues = [line for line in queues.stdout.split() if line] if queues.returncode == 0 else []
    celery = [python, "-m", "celery", "-A", "config"]
    commands = [
        ("worker:default", [*celery, "worker", "-Q", "default", "-c", "2", "-n", "default@%h", "--loglevel", "INFO"])
    ]
    for queue in target_queues:
        # Concurrency 1 per target: runs on one engine never overlap.
        commands.append(
            (f"worker:{queue}", [*celery, "worker", "-Q", queue, "-c", "1", "-n", f"{queue}@%h", "--loglevel", "INFO"])
        )
    commands.append(("beat", [*celery, "beat", "--loglevel", "WARNING", "-s", str(VAR / "celerybeat-schedule")]))
    return commands


def web_command(*, python: str, host: str, port: int) -> list[str]:
    """gunicorn as `make run` serves the site; the browser tests start the very same command."""
    return [
        python,
        "-m",
        "gunicorn",
        "config.wsgi",
        "--bind",
        f"{host}:{port}",
        "--workers",
        "2",
        "--threads",
        "4",
        "--access-logfile",
        "-",
        "--graceful-timeout",
        "5",
    ]


def local_engines(value: str) -> list[str]:
    """LOCAL_ENGINES: a comma list of `llamacpp` and `vllm` (empty: none)."""
    names = [name.strip() for name in value.split(",") if name.strip()]
    unknown = [name for name in names if name not in ENGINE_COMMANDS]
    if unknown:
        raise SystemExit(
            f"LOCAL_ENGINES={value!r}: unknown engine {', '.join(unknown)}; use a comma list of "
            f"{', '.join(ENGINE_COMMANDS)}, or empty for none"
        )
    return names


# Each local engine: the module that serves it, and the URL paths that answer once it is ready.
ENGINE_COMMANDS = {
    "llamacpp": ["-m", "engines.local", "serve"],
    "vllm": ["-m", "engines.vllm", "serve"],
}


def _ready_urls(name: str, env: dict[str, str]) -> list[str]:
    if name == "vllm":
        return [f"{env.get('LOCAL_ENGINE_VLLM_URL', 'http://127.0.0.1:8013').rstrip('/')}/v1/models"]
    return [
        f"{env.get('LOCAL_ENGINE_URL', 'http://127.0.0.1:8011').rstrip('/')}/health",
        f"{env.get('LOCAL_ENGINE_BATCHED_URL', 'http://127.0.0.1:8012').rstrip('/')}/health",
    ]


def _wait_for_engines(engines: list[Child], *, env: dict[str, str], timeout_s: float = 1800.0) -> None:
    """Wait until every local engine answers (the first start builds llama-server, several minutes on
    2 cores, and installs vLLM's CPU build, a few more)."""
    names = ", ".join(engine.name for engine in engines)
    print(f"Starting the local engines ({names}; the first run builds/installs them)…", flush=True)
    deadline = time.monotonic() + timeout_s
    pending = {engine.name: engine for engine in engines}
    while pending and time.monotonic() < deadline:
        for name, engine in list(pending.items()):
            if engine.process.poll() is not None:
                code = engine.process.returncode
                raise SystemExit(f"the local engine {name} exited with code {code}; see the lines above")
            if all(_http_ok(url) for url in _ready_urls(name.removeprefix("engine:"), env)):
                del pending[name]
        time.sleep(1.0)
    if pending:
        raise SystemExit(f"the local engines {', '.join(pending)} did not answer within {timeout_s:.0f} s")


def _http_ok(url: str) -> bool:
    import urllib.error
    import urllib.request

    try:
        with urllib.request.urlopen(url, timeout=2) as response:  # noqa: S310 - a local URL we built
            return response.status == 200
    except (urllib.error.URLError, OSError):
        return False


def stop_all(children: list[Child], *, grace_s: float = 10.0) -> None:
    for child in reversed(children):
        if child.process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(child.process.pid, signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    for child in reversed(children):
        remaining = max(0.1, deadline - time.monotonic())
        try:
            child.process.wait(timeout=remaining)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(child.process.pid, signal.SIGKILL)
            child.process.wait()


# What `make content static` does, run by the supervisor itself once its Redis answers: a Redis
# started for these steps alone would outlive `make run` (nothing would own it).
PREPARE_STEPS = (
    ["manage.py", "migrate", "--noinput"],
    ["manage.py", "sync_content"],
    ["manage.py", "collectstatic", "--noinput", "--verbosity", "0"],
)


def run(
    *, host: str, port: int, with_web: bool, with_workers: bool, engines: list[str], prepare: bool = False
) -> int:
    env = dict(os.environ)
    redis_url = env.setdefault("REDIS_URL", "redis://127.0.0.1:6379/0")
    python = sys.executable
    children: list[Child] = []

    # Installed explicitly: a process started in the background of a non-interactive shell
    # inherits SIGINT as ignored, and Ctrl-C must stop everything wherever make was started.
    # The first signal unwinds a blocking start-up (waiting for the engine) to the `finally`;
    # later ones are only counted, so a second SIGTERM (kill -- -PGID of make hits this process
    # and make, which passes it on) cannot interrupt stop_all halfway.
    stop = StopSignals(raise_first=True)
    try:
        stop.install()
        redis_child = start_redis(redis_url)
        if redis_child:
            children.append(redis_child)
        if prepare:
            for step in PREPARE_STEPS:
                subprocess.run([python, *step], cwd=ROOT, env=env, check=True)
        if engines:
            started = [_spawn(f"engine:{name}", [python, *ENGINE_COMMANDS[name]], env) for name in engines]
            children.extend(started)
            _wait_for_engines(started, env=env)
            register = [python, "manage.py", "register_local_targets"] + (["--vllm"] if "vllm" in engines else [])
            subprocess.run(register, cwd=ROOT, env=env, check=True)
        if with_workers:
            for name, argv in worker_commands(python=python):
                children.append(_spawn(name, argv, env))
        if with_web:
            children.append(_spawn("web", web_command(python=python, host=host, port=port), env))
            print(f"\nPrefill is running: http://{host}:{port}/   (Ctrl-C stops everything)\n", flush=True)
        # Started: from here a signal is only a flag the loop below sees at once.
        stop.stop_raising()
        while not stop.wait(0.5):
            for child in children:
                code = child.process.poll()
                if code is not None:
                    print(f"{child.name} exited with code {code}; stopping the rest.", file=sys.stderr, flush=True)
                    return 1
        print("\nStopping…", flush=True)
        return 0
    except KeyboardInterrupt:
        print("\nStopping…", flush=True)
        return 0
    finally:
        stop.stop_raising()
        stop_all(children)
        stop.restore()


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m scripts.services")
    sub = parser.add_subparsers(dest="command", required=True)
    run_parser = sub.add_parser("run", help="Redis (if needed), workers, beat, web")
    run_parser.add_argument("--host", default=os.environ.get("HOST", "127.0.0.1"))
    run_parser.add_argument("--port", type=int, default=int(os.environ.get("PORT", "8000")))
    run_parser.add_argument("--no-engine", action="store_true", help="Do not start the local llama.cpp engine")
    run_parser.add_argument(
        "--prepare", action="store_true", help="Migrate, sync content and collect static files before starting"
    )
    sub.add_parser("worker", help="Redis (if needed), workers and beat in the foreground")
    sub.add_parser("redis", help="Make sure Redis answers at REDIS_URL; start it in the background if not")
    args = parser.parse_args()
    if args.command == "redis":
        child = start_redis(os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/0"))
        if child:
            print(f"redis-server pid {child.process.pid} left running in the background")
        return
    if args.command == "worker":
        sys.exit(run(host="", port=0, with_web=False, with_workers=True, engines=[]))
    engines = [] if args.no_engine else local_engines(os.environ.get("LOCAL_ENGINES", "llamacpp"))
    sys.exit(
        run(
            host=args.host,
            port=args.port,
            with_web=True,
            with_workers=True,
            engines=engines,
            prepare=args.prepare,
        )
    )


if __name__ == "__main__":
    main()
