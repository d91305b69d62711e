"""What the benchmarks that serve the site share: a throwaway state directory, the site's own
management commands run against it, child processes that are always stopped, and percentiles.

Every benchmark gets a fresh ``PREFILL_VAR_DIR`` (SQLite, figures, collected static files) and a
cache key prefix of its own in the machine's Redis, so it never touches ``var/`` or another
process's keys; both are removed on the way out. Children are started in sessions of their own
and get SIGTERM, then SIGKILL, when the benchmark ends, fails or is interrupted (Ctrl-C or
SIGTERM).
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO
from urllib.parse import urlsplit, urlunsplit

import httpx

from engines.stopping import StopSignals

ROOT = Path(__file__).resolve().parents[1]
PYTHON = sys.executable
GUNICORN_WORKERS = 2
# `make run` serves with the gthread worker and 4 threads per process; measure the same thing.
GUNICORN_THREADS = 4


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def percentile(*, values: Sequence[float], fraction: float) -> float:
    """Nearest-rank percentile (the value below which ``fraction`` of the samples fall)."""
    ordered = sorted(values)
    index = max(0, min(len(ordered) - 1, round(fraction * len(ordered) + 0.5) - 1))
    return ordered[index]


def run_benchmark(main: Callable[[], int]) -> None:
    """A benchmark's entry point: its exit code, or 130 after Ctrl-C once every child has stopped
    (the ``finally`` blocks that stop them run while the interrupt unwinds)."""
    try:
        raise SystemExit(main())
    except KeyboardInterrupt:
        print("\ninterrupted; every process this benchmark started has been stopped", file=sys.stderr)
        raise SystemExit(130) from None


def stop_on_sigterm() -> StopSignals:
    """SIGTERM and SIGHUP unwind like Ctrl-C, so every ``finally`` that stops a child runs.

    Only the first one raises; a second one during that cleanup is only counted, so it cannot
    cut the cleanup short (see engines.stopping)."""
    return StopSignals((signal.SIGTERM, signal.SIGHUP), raise_first=True).install()


def _processes() -> tuple[dict[int, int], dict[int, float]]:
    """Every process's parent and user + system CPU seconds, from /proc (empty where it is missing)."""
    ticks = os.sysconf("SC_CLK_TCK")
    parents: dict[int, int] = {}
    cpu: dict[int, float] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            raw = (entry / "stat").read_text()
        except OSError:
            continue
        # The command name may contain spaces; fields after its closing parenthesis are fixed.
        fields = raw[raw.rfind(")") + 2 :].split()
        child = int(entry.name)
        parents[child] = int(fields[1])
        cpu[child] = (int(fields[11]) + int(fields[12])) / ticks
    return parents, cpu


def _tree_cpu_s(*, pid: int, parents: dict[int, int], cpu: dict[int, float]) -> float:
    tree, frontier = {pid}, [pid]
    while frontier:
        parent = frontier.pop()
        for child, ppid in parents.items():
            if ppid == parent and child not in tree:
                tree.add(child)
                frontier.append(child)
    return sum(cpu.get(member, 0.0) for member in tree)


def process_tree_cpu_s(*, pid: int) -> float:
    """User + system CPU seconds of a process and all its descendants, from /proc.

    The machine is shared, so wall-clock rates move with everyone else's load; CPU seconds per
    request do not, and say what the server itself spends. Returns 0.0 where /proc is missing.
    """
    parents, cpu = _processes()
    return _tree_cpu_s(pid=pid, parents=parents, cpu=cpu)


def children_cpu_s(*, pid: int) -> dict[int, float]:
    """CPU seconds of each direct child of a process (with its own descendants): per gunicorn
    worker, to see how evenly the load generator's connections landed on them."""
    parents, cpu = _processes()
    return {
        child: _tree_cpu_s(pid=child, parents=parents, cpu=cpu)
        for child, parent in parents.items() if parent == pid
    }


@dataclass
class Child:
    name: str
    process: subprocess.Popen
    log_path: Path

    def log_tail(self, *, lines: int = 20) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""


@dataclass
class Children:
    """Child processes of one benchmark, each in its own session, stopped together."""

    log_dir: Path
    started: list[Child] = field(default_factory=list)

    def start(self, *, name: str, argv: list[str], env: dict[str, str]) -> Child:
        log_path = self.log_dir / f"{name}.log"
        log: IO[bytes] = log_path.open("wb")
        try:
            process = subprocess.Popen(
                argv, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
            )
        finally:
            log.close()
        child = Child(name=name, process=process, log_path=log_path)
        self.started.append(child)
        return child

    def check_alive(self) -> None:
        for child in self.started:
            code = child.process.poll()
            if code is not None:
                raise RuntimeError(f"{child.name} exited with code {code}:\n{child.log_tail()}")

    def stop_all(self, *, grace_s: float = 5.0) -> None:
        for child in reversed(self.started):
            if child.process.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(child.process.pid, signal.SIGTERM)
        deadline = time.monotonic() + grace_s
        for child in reversed(self.started):
            try:
                child.process.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(child.process.pid, signal.SIGKILL)
                child.process.wait()
        self.started.clear()


def wait_for_http(*, url: str, child: Child, timeout_s: float = 30.0) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if child.process.poll() is not None:
            raise RuntimeError(f"{child.name} exited with code {child.process.returncode}:\n{child.log_tail()}")
        with contextlib.suppress(httpx.HTTPError):
            if httpx.get(url, timeout=2.0).status_code < 500:
                return
        time.sleep(0.1)
    raise RuntimeError(f"{child.name} did not answer at {url} within {timeout_s:.0f} s:\n{child.log_tail()}")


def wait_for_log_line(*, child: Child, needle: str, timeout_s: float = 30.0) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if child.process.poll() is not None:
            raise RuntimeError(f"{child.name} exited with code {child.process.returncode}:\n{child.log_tail()}")
        with contextlib.suppress(OSError):
            if needle in child.log_path.read_text(errors="replace"):
                return
        time.sleep(0.1)
    raise RuntimeError(f"{child.name} did not print {needle!r} within {timeout_s:.0f} s:\n{child.log_tail()}")


@dataclass
class BenchSite:
    """A throwaway Prefill installation: its state directory, environment and Redis namespace."""

    var_dir: Path
    env: dict[str, str]
    cache_prefix: str
    children: Children

    @property
    def static_root(self) -> Path:
        return self.var_dir / "staticfiles"

    @property
    def redis_url(self) -> str:
        return self.env["REDIS_URL"]

    def manage(self, *args: str) -> str:
        """Run ``manage.py`` against this site; stop with its output when it fails."""
        done = subprocess.run(
            [PYTHON, "manage.py", *args], cwd=ROOT, env=self.env, capture_output=True, text=True, check=False
        )
        if done.returncode != 0:
            raise RuntimeError(f"manage.py {' '.join(args)} failed ({done.returncode}):\n{done.stdout}{done.stderr}")
        return done.stdout

    def prepare(self, *, collectstatic: bool) -> None:
        self.manage("migrate", "--noinput", "--verbosity", "0")
        self.manage("sync_content")
        if collectstatic:
            self.manage("collectstatic", "--noinput", "--verbosity", "0")

    def start_scripted_target(self, *, name: str, engine_flags: Sequence[str]) -> str:
        """Start the scripted engine and register it as target ``name``, as an operator would;
        returns the engine's URL."""
        port = free_port()
        engine = self.children.start(
            name="engine",
            argv=[PYTHON, "-m", "workers.measure.scripted_engine", "--port", str(port), *engine_flags],
            env=self.env,
        )
        wait_for_log_line(child=engine, needle="listening on")
        url = f"http://127.0.0.1:{port}"
        self.manage("target", "add", "--name", name, "--kind", "vllm", "--base-url", url, "--model", "scripted")
        return url

    def start_gunicorn(self, *, port: int, workers: int = GUNICORN_WORKERS, threads: int = GUNICORN_THREADS) -> Child:
        child = self.children.start(
            name="gunicorn",
            argv=[
                PYTHON,
                "-m",
                "gunicorn",
                "config.wsgi",
                "--bind",
                f"127.0.0.1:{port}",
                "--workers",
                str(workers),
                "--threads",
                str(threads),
                "--graceful-timeout",
                "3",
                # One slow first request (imports, template compilation) must not kill a worker.
                "--timeout",
                "120",
            ],
            env=self.env,
        )
        wait_for_http(url=f"http://127.0.0.1:{port}/healthz", child=child)
        return child


def _delete_own_keys(*, redis_url: str, patterns: Sequence[str]) -> int:
    """Delete this benchmark's keys only (never FLUSH: the Redis is shared)."""
    import redis

    client = redis.Redis.from_url(redis_url, socket_timeout=5, socket_connect_timeout=5)
    deleted = 0
    try:
        for pattern in patterns:
            batch = list(client.scan_iter(match=pattern, count=500))
            if batch:
                deleted += int(client.delete(*batch))
    except redis.RedisError as error:
        print(f"note: could not remove the benchmark's Redis keys: {error}", file=sys.stderr)
    finally:
        client.close()
    return deleted


@contextlib.contextmanager
def _throwaway_postgres(*, server_url: str, name: str) -> Iterator[str]:
    """A database of the benchmark's own on the PostgreSQL server at ``server_url`` (any database
    the user may connect to there, e.g. postgres://postgres@127.0.0.1:5432/postgres), created
    here and dropped on the way out; yields its URL."""
    import psycopg
    from psycopg import sql

    parts = urlsplit(server_url)
    database = f"prefill_bench_{name}_{secrets.token_hex(4)}"
    with psycopg.connect(server_url, autocommit=True) as admin:
        admin.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(database)))
    try:
        yield urlunsplit(parts._replace(path=f"/{database}"))
    finally:
        with psycopg.connect(server_url, autocommit=True) as admin:
            admin.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(database)))


@contextlib.contextmanager
def bench_site(
    *, name: str, keep: bool = False, extra_redis_patterns: Sequence[str] = (), postgres: str | None = None
) -> Iterator[BenchSite]:
    """A fresh state directory and cache prefix; on exit: children stopped, keys and files removed.

    ``extra_redis_patterns`` name further keys the benchmark created (a Celery queue of its own).
    ``postgres``: the URL of a PostgreSQL server to hold the site's database (one of its own,
    dropped at the end), as a cohort's deployment does; by default a throwaway SQLite file, as
    `make run` does.
    """
    database = _throwaway_postgres(server_url=postgres, name=name) if postgres else contextlib.nullcontext(None)
    # The site's children stop before its PostgreSQL database is dropped.
    with database as database_url, _site(
        name=name, keep=keep, extra_redis_patterns=extra_redis_patterns, database_url=database_url
    ) as site:
        yield site


@contextlib.contextmanager
def _site(
    *, name: str, keep: bool, extra_redis_patterns: Sequence[str], database_url: str | None
) -> Iterator[BenchSite]:
    token = secrets.token_hex(4)
    var_dir = Path(tempfile.mkdtemp(prefix=f"prefill-bench-{name}-"))
    cache_prefix = f"bench-{name}-{token}"
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "config.settings",
        "PREFILL_VAR_DIR": str(var_dir),
        # The throwaway SQLite file (or PostgreSQL database), whatever database the caller's
        # environment points at.
        "DATABASE_URL": database_url or f"sqlite:///{var_dir / 'bench.sqlite3'}",
        "REDIS_URL": os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/0"),
        "CACHE_KEY_PREFIX": cache_prefix,
        "DEBUG": "false",
        "ALLOWED_HOSTS": "127.0.0.1,localhost",
        "LOG_LEVEL": "WARNING",
        "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""),
    }
    site = BenchSite(var_dir=var_dir, env=env, cache_prefix=cache_prefix, children=Children(log_dir=var_dir))
    try:
        yield site
    finally:
        site.children.stop_all()
        _delete_own_keys(redis_url=env["REDIS_URL"], patterns=[f"{cache_prefix}:*", *extra_redis_patterns])
        if keep:
            print(f"kept the state directory and logs: {var_dir}")
        else:
            shutil.rmtree(var_dir, ignore_errors=True)
