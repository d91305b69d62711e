"""Start what Prefill needs on one machine and stop all of it on Ctrl-C.

`make run` calls `python -m scripts.services run`: make sure Redis answers (start a private
redis-server under var/ when none does), then start the Celery worker(s), the beat scheduler and
gunicorn at once, so lessons and practice are served while the local engines build and start in
the background; when they answer, register them as targets and start their workers. Every
child's output goes to its own log under var/log/ (rotated), and the terminal shows one short
status block (the URL, each service's state, the engine build's progress) instead of their
banners. Every child is in its own process group and gets SIGTERM, then SIGKILL after a grace
period, so nothing is left running.
"""

import argparse
import contextlib
import json
import os
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlparse

from engines.stopping import StopSignals

ROOT = Path(__file__).resolve().parent.parent
VAR = Path(os.environ.get("PREFILL_VAR_DIR", ROOT / "var"))


LOG_DIR = VAR / "log"
# Where the Labs page reads how the local engines are getting on (labs.selectors).
ENGINE_STATE_FILE = VAR / "run" / "local-engines.json"
LOG_MAX_BYTES = 5 * 1024 * 1024
LOG_BACKUPS = 3


@dataclass
class Child:
    name: str
    process: subprocess.Popen
    log_path: Path | None = None
    pump: threading.Thread | None = field(default=None, repr=False)


class RotatingLog:
    """A child's output, appended to var/log/<name>.log and rotated at LOG_MAX_BYTES
    (<name>.log.1 ... .LOG_BACKUPS), so a long-running site keeps a bounded history."""

    def __init__(self, path: Path, *, max_bytes: int = LOG_MAX_BYTES, backups: int = LOG_BACKUPS) -> None:
        self.path, self.max_bytes, self.backups = path, max_bytes, backups
        path.parent.mkdir(parents=True, exist_ok=True)
        self._file = path.open("ab")

    def write(self, data: bytes) -> None:
        if self._file.tell() + len(data) > self.max_bytes and self._file.tell() > 0:
            self._rotate()
        self._file.write(data)
        self._file.flush()

    def _rotate(self) -> None:
        self._file.close()
        for index in range(self.backups - 1, 0, -1):
            older = self.path.with_name(f"{self.path.name}.{index}")
            if older.exists():
                older.replace(self.path.with_name(f"{self.path.name}.{index + 1}"))
        self.path.replace(self.path.with_name(f"{self.path.name}.1"))
        self._file = self.path.open("ab")

    def close(self) -> None:
        self._file.close()


def _pump(stream, log: RotatingLog) -> None:
    """Copy a child's output into its log until the child closes it (it exited)."""
    try:
        for line in iter(stream.readline, b""):
            log.write(line)
    finally:
        log.close()


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


def log_path_for(name: str) -> Path:
    return LOG_DIR / f"{name.replace(':', '-')}.log"


def _spawn(name: str, argv: list[str], env: dict[str, str], *, to_log_file: bool = True) -> Child:
    """Start a child in its own process group, its output going to var/log/<name>.log (or, for a
    container whose output is collected by docker, to ours)."""
    if not to_log_file:
        return Child(name, subprocess.Popen(argv, cwd=ROOT, env=env, start_new_session=True))
    log = RotatingLog(log_path_for(name))
    log.write(f"--- {time.strftime('%Y-%m-%d %H:%M:%S')} starting: {shlex.join(argv)}\n".encode())
    process = subprocess.Popen(
        argv, cwd=ROOT, env=env, start_new_session=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT
    )
    pump = threading.Thread(target=_pump, args=(process.stdout, log), name=f"log-{name}", daemon=True)
    pump.start()
    return Child(name, process, log.path, pump)


def worker_commands(*, python: str) -> list[tuple[str, list[str]]]:
    """One Celery worker for the default queue, one for grading answers, one per enabled target
    queue, plus beat.

    The target queues are asked from the database, so a target added by staff gets its worker on
    the next start.
    """
    queues = subprocess.run(
        [python, "manage.py", "worker_queues"], cwd=ROOT, capture_output=True, text=True, check=False
    )
    target_queues = [line for line in queues.stdout.split() if line] if queues.returncode == 0 else []
    celery = [python, "-m", "celery", "-A", "config"]
    commands = [
        ("worker:default", [*celery, "worker", "-Q", "default", "-c", "2", "-n", "default@%h", "--loglevel", "INFO"]),
        # Free-text answers are graded here (questions.tasks.grade_attempt), never in a web request;
        # GRADING_WORKER_CONCURRENCY processes share one copy of the sentence model.
        (
            "worker:grading",
            [*celery, "worker", "-Q", os.environ.get("GRADING_QUEUE", "grading"), "-c",
             os.environ.get("GRADING_WORKER_CONCURRENCY", "1"),
             "-n", "grading@%h", "--loglevel", "INFO"],
        ),
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


ENGINE_TIMEOUT_S = 1800.0


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


# How the status block names each engine.
ENGINE_LABELS = {"llamacpp": "local engines", "vllm": "local vLLM"}
# Each local engine: the module that builds (when needed) and serves it.
ENGINE_COMMANDS = {
    "llamacpp": ["-m", "engines.local", "serve"],
    "vllm": ["-m", "engines.vllm", "serve"],
}


def ready_urls(name: str, env: dict[str, str]) -> list[str]:
    """The URLs that answer once local engine ``name`` serves."""
    if name == "vllm":
        return [f"{env.get('LOCAL_ENGINE_VLLM_URL', 'http://127.0.0.1:8013').rstrip('/')}/v1/models"]
    return [
        f"{env.get('LOCAL_ENGINE_URL', 'http://127.0.0.1:8011').rstrip('/')}/health",
        f"{env.get('LOCAL_ENGINE_BATCHED_URL', 'http://127.0.0.1:8012').rstrip('/')}/health",
    ]


def engine_command(*, name: str, python: str, env: dict[str, str]) -> list[str]:
    """What builds (when needed) and serves local engine ``name``. PREFILL_LOCAL_ENGINE_COMMAND
    replaces llama.cpp's (tests: a build that takes as long as they need)."""
    override = env.get("PREFILL_LOCAL_ENGINE_COMMAND", "").strip()
    if name == "llamacpp" and override:
        return shlex.split(override)
    return [python, *ENGINE_COMMANDS[name]]


def build_progress() -> tuple[str, int | None]:
    """llama-server's build as the build reports it (engines.llamacpp.build): a line for people
    and the percent done; ("", None) when unknown, "llama-server built" once it is."""
    try:
        from engines.llamacpp.build import build_progress as read_progress
    except ImportError:  # the project's packages are not importable (no venv yet)
        return "", None
    progress = read_progress()
    return progress.describe(), progress.percent


def write_engine_state(state: str, *, detail: str = "", percent: int | None = None) -> None:
    """Tell the Labs page how the local engines are getting on (labs.selectors.local_engine_state)."""
    ENGINE_STATE_FILE.parent.mkdir(parents=True, exist_ok=True)
    record = {"state": state, "detail": detail, "percent": percent, "updated_at": time.time()}
    partial = ENGINE_STATE_FILE.with_suffix(".partial")
    partial.write_text(json.dumps(record) + "\n")
    partial.replace(ENGINE_STATE_FILE)


class StatusBlock:
    """The few lines the terminal shows: the URL, each service's state, where the logs are.

    On a terminal the block is redrawn in place, so it stays on screen; elsewhere (a log file, a
    pipe) it is printed again only when a state changes, and the build's progress at most every
    PLAIN_PROGRESS_EVERY_S.
    """

    PLAIN_PROGRESS_EVERY_S = 30.0

    def __init__(self, *, stream=None) -> None:
        self.stream = stream or sys.stdout
        self.tty = self.stream.isatty()
        self.lines: list[str] = []
        self.states: dict[str, str] = {}
        self.last_plain = 0.0

    def show(self, *, url: str, services: dict[str, str], progress: str = "") -> None:
        lines = [f"Prefill is running: {url}   (Ctrl-C stops everything)" if url else "Prefill workers (Ctrl-C)"]
        width = max((len(name) for name in services), default=0)
        lines += [f"  {name:<{width}}  {state}" for name, state in services.items()]
        lines.append(f"  logs: {LOG_DIR}/<service>.log   (make logs)")
        if self.tty:
            if lines != self.lines:
                erase = f"\x1b[{len(self.lines)}F\x1b[J" if self.lines else ""
                self.stream.write(erase + "\n".join(lines) + "\n")
                self.stream.flush()
        else:
            changed = {name: state.split(":")[0] for name, state in services.items()} != self.states
            due = progress and time.monotonic() - self.last_plain >= self.PLAIN_PROGRESS_EVERY_S
            if changed or due or not self.lines:
                self.stream.write("\n".join(lines) + "\n\n")
                self.stream.flush()
                self.last_plain = time.monotonic()
            self.states = {name: state.split(":")[0] for name, state in services.items()}
        self.lines = lines


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
    # Web threads and Celery workers that grade answers: one BLAS thread each (gunicorn.conf.py says why).
    env.setdefault("OPENBLAS_NUM_THREADS", "1")
    python = sys.executable
    children: list[Child] = []
    url = f"http://{host}:{port}/" if with_web else ""
    # `make run` keeps the terminal for its status block and sends each service's output to its
    # log file; `make worker` (and the compose file's worker service) passes the output through.
    to_log_files = with_web
    status = StatusBlock() if to_log_files else None
    engine_children: dict[str, Child] = {}
    engine_states: dict[str, str] = {}

    # Installed explicitly: a process started in the background of a non-interactive shell
    # inherits SIGINT as ignored, and Ctrl-C must stop everything wherever make was started.
    # The first signal unwinds a blocking start-up (migrations, a slow Redis) to the `finally`;
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
        # Serve first: the site and its workers do not wait for the local engines.
        if with_workers:
            for name, argv in worker_commands(python=python):
                children.append(_spawn(name, argv, env, to_log_file=to_log_files))
        if with_web:
            children.append(_spawn("web", web_command(python=python, host=host, port=port), env))
        for name in engines:
            # llama.cpp's log is var/log/engine.log, as before vLLM joined; vLLM's engine-vllm.log.
            child_name = "engine" if name == "llamacpp" else f"engine-{name}"
            engine_children[name] = _spawn(child_name, engine_command(name=name, python=python, env=env), env)
            children.append(engine_children[name])
            engine_states[name] = "starting"
        if engines:
            write_engine_state("building")
        engines_started = time.monotonic()
        last_probe = 0.0
        # Started: from here a signal is only a flag the loop below sees at once.
        stop.stop_raising()
        while not stop.wait(0.5):
            for child in list(children):
                code = child.process.poll()
                if code is None:
                    continue
                engine_name = next((n for n, c in engine_children.items() if c is child), None)
                if engine_name is not None:
                    # The site goes on without that engine; the Labs page and the block say why.
                    children.remove(child)
                    del engine_children[engine_name]
                    engine_states[engine_name] = f"failed (exit {code}): see {child.log_path}"
                    who = "the engine" if engine_name == "llamacpp" else f"the {engine_name} engine"
                    write_engine_state("failed", detail=f"{who} exited with code {code}; see {child.log_path}")
                    continue
                where = f"; see {child.log_path}" if child.log_path else ""
                print(f"{child.name} exited with code {code}{where}; stopping the rest.", file=sys.stderr, flush=True)
                return 1
            progress = ""
            pending = [name for name in engine_children if engine_states[name] != "ready"]
            if pending and time.monotonic() - last_probe >= 1.0:
                last_probe = time.monotonic()
                progress = _follow_engines(
                    pending=pending,
                    engine_children=engine_children,
                    engine_states=engine_states,
                    children=children,
                    started=engines_started,
                    env=env,
                    python=python,
                    with_workers=with_workers,
                    to_log_files=to_log_files,
                )
            services = {child.name: "running" for child in children if child not in engine_children.values()}
            if with_web:
                services["web"] = f"serving {url}"
            for name, state in engine_states.items():
                services[ENGINE_LABELS[name]] = state
            if status is not None:
                status.show(url=url, services=services, progress=progress)
        print("\nStopping…", flush=True)
        return 0
    except KeyboardInterrupt:
        print("\nStopping…", flush=True)
        return 0
    finally:
        stop.stop_raising()
        stop_all(children)
        stop.restore()
        if engines:
            ENGINE_STATE_FILE.unlink(missing_ok=True)


def _follow_engines(
    *,
    pending: list[str],
    engine_children: dict[str, Child],
    engine_states: dict[str, str],
    children: list[Child],
    started: float,
    env: dict[str, str],
    python: str,
    with_workers: bool,
    to_log_files: bool,
) -> str:
    """One look at the engines still starting: register the targets of those that answer (and
    start the workers of queues that are new), give up on those past ENGINE_TIMEOUT_S, and report
    llama.cpp's build progress. Returns the progress line, if any."""
    progress = ""
    for name in pending:
        engine = engine_children[name]
        if all(_http_ok(probe) for probe in ready_urls(name, env)):
            engine_states[name] = "ready"
            ready = [n for n, state in engine_states.items() if state == "ready"]
            register = [python, "manage.py", "register_local_targets"] + (["--vllm"] if "vllm" in ready else [])
            subprocess.run(register, cwd=ROOT, env=env, check=True, stdout=subprocess.DEVNULL)
            running = {child.name for child in children}
            if with_workers:
                for worker, argv in worker_commands(python=python):
                    if worker not in running:
                        children.append(_spawn(worker, argv, env, to_log_file=to_log_files))
        elif time.monotonic() - started > ENGINE_TIMEOUT_S:
            engine_states[name] = f"failed: no answer within {ENGINE_TIMEOUT_S:.0f} s; see {engine.log_path}"
            write_engine_state("failed", detail=engine_states[name])
            children.remove(engine)
            del engine_children[name]
            stop_all([engine])
        elif name == "llamacpp":
            progress, percent = build_progress()
            building = bool(progress) and "built" not in progress
            engine_states[name] = f"building: {progress}" if building else "starting (loading models)"
            write_engine_state(
                "building" if building else "starting",
                detail=progress if building else "llama-server is built; the engines are loading their models",
                percent=percent,
            )
        else:
            engine_states[name] = "starting (installs vLLM's CPU build on the first run)"
    if engine_children and all(engine_states[n] == "ready" for n in engine_children):
        write_engine_state("ready")
    return progress


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m scripts.services")
    sub = parser.add_subparsers(dest="command", required=True)
    run_parser = sub.add_parser("run", help="Redis (if needed), workers, beat, web, local engines")
    run_parser.add_argument("--host", default=os.environ.get("HOST", "127.0.0.1"))
    run_parser.add_argument("--port", type=int, default=int(os.environ.get("PORT", "8000")))
    run_parser.add_argument("--no-engine", action="store_true", help="Do not start the local engines")
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
        run(host=args.host, port=args.port, with_web=True, with_workers=True, engines=engines, prepare=args.prepare)
    )


if __name__ == "__main__":
    main()
