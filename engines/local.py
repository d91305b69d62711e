"""Run the two local CPU targets: llama.cpp's llama-server, one request at a time and batched.

``python -m engines.local serve`` builds the binary and generates the models when missing,
starts both servers, prints their URLs and runs until Ctrl-C or SIGTERM, then stops them and
everything they started. ``python -m engines.local status`` prints JSON of what answers.

Both targets run llama-server in router mode: the process on the target's port owns no model
itself, it starts one child llama-server per model on first use (the default model at start)
and forwards each request by its ``"model"`` field. Every generated model and precision is
therefore reachable on both targets at the same URL, with the serving flags of that target
(``--parallel``, unified KV, threads); a lab selects one by name from ``var/models/manifest.json``.
The first request for a model that is not loaded waits for it to load (under two seconds for
these sizes), so labs should send a warm-up request first.

The serial target runs ``--parallel 1`` (requests queue, like Ollama's default); the batched
one runs ``--parallel 4`` with continuous batching and a unified KV cache, so that one slot may
hold a long prompt without the context being cut into four fixed parts.
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

import httpx

from engines.hwprobe import usable_cpus
from engines.llamacpp.build import BuildError, ensure_llama_server
from engines.llamacpp.models import (
    DEFAULT_MODEL,
    PRECISIONS,
    SPECS,
    ModelInfo,
    ensure_models,
    models_dir,
)
from engines.real_models import REAL_MODELS, RealModel, RealModelError, ensure_real_models
from engines.stopping import StopSignals, stop_process_group

DEFAULT_SERIAL_URL = "http://127.0.0.1:8011"
DEFAULT_BATCHED_URL = "http://127.0.0.1:8012"
BATCHED_SLOTS = 4
# The labs' longest request: a 2,048-token prompt plus 2,048 generated tokens, per slot.
CTX_PER_SLOT = 4096
# llama-server keeps evicted prompt states in host RAM (8 GiB by default, per model process);
# a bounded pool keeps the many processes of two routers from claiming the whole machine.
PROMPT_CACHE_MIB = 1024
STARTUP_TIMEOUT_S = 120.0
STOP_TIMEOUT_S = 10.0


class EngineError(RuntimeError):
    """A local engine could not be started; the message says why and what to do."""


def repo_root() -> Path:
    return Path(__file__).resolve().parents[1]


def runtime_dir() -> Path:
    return repo_root() / "var" / "engines"


@dataclass(frozen=True)
class EngineConfig:
    name: str
    url: str
    parallel: int
    threads: int
    ctx_per_slot: int
    default_model: str
    prompt_cache_mib: int = PROMPT_CACHE_MIB

    @property
    def host(self) -> str:
        return urlsplit(self.url).hostname or "127.0.0.1"

    @property
    def port(self) -> int:
        parts = urlsplit(self.url)
        return parts.port or (443 if parts.scheme == "https" else 80)


def server_command(
    *, binary: Path, config: EngineConfig, preset: Path, models_max: int
) -> list[str]:
    command = [
        str(binary),
        "--host", config.host,
        "--port", str(config.port),
        "--models-preset", str(preset),
        "--models-max", str(models_max),
        "--parallel", str(config.parallel),
        "--threads", str(config.threads),
        "--threads-batch", str(config.threads),
        "--metrics",
        "--no-webui",
        "--cache-ram", str(config.prompt_cache_mib),
    ]
    if config.parallel > 1:
        # Unified KV: one pool of parallel x ctx_per_slot cells that any slot may fill, instead
        # of -c split into equal per-slot shares (a 2,048-token prompt was refused that way).
        command += ["--kv-unified", "--kv-unified-per-slot", str(config.ctx_per_slot),
                    "--cont-batching"]
    else:
        command += ["--ctx-size", str(config.ctx_per_slot)]
    return command


def write_preset(
    *, path: Path, models: list[ModelInfo], directory: Path, default_model: str,
    real_models: Sequence[RealModel] = (),
) -> Path:
    """Write the router's model list: every generated and real model, the default loaded at start."""
    lines = ["version = 1", ""]
    for info in models:
        lines += [f"[{info.name}]", f"model = {(directory / info.file).resolve()}"]
        if info.name == default_model:
            lines.append("load-on-startup = true")
        lines.append("")
    for real in real_models:
        # --jinja: chat requests are rendered with the model's own chat template from its GGUF
        # (SmolLM2's ChatML, ending turns with <|im_end|>, its end-of-sequence token).
        lines += [f"[{real.name}]", f"model = {real.path}", "jinja = true"]
        if real.name == default_model:
            lines.append("load-on-startup = true")
        lines.append("")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines))
    return path


def _die_with_parent() -> None:
    # If the Python process is killed outright (SIGKILL, a crashed test run), the kernel sends
    # SIGTERM to the server, so no orphaned engine keeps holding the port and the CPU.
    with contextlib.suppress(OSError, AttributeError):
        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        pr_set_pdeathsig = 1
        libc.prctl(pr_set_pdeathsig, signal.SIGTERM)


def port_in_use(*, host: str, port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.settimeout(0.5)
        return probe.connect_ex((host, port)) == 0


@dataclass
class EngineHandle:
    config: EngineConfig
    process: subprocess.Popen[bytes]
    log_path: Path
    command: list[str]
    _stopped: bool = field(default=False, repr=False)

    @property
    def name(self) -> str:
        return self.config.name

    @property
    def url(self) -> str:
        return self.config.url

    @property
    def parallel(self) -> int:
        return self.config.parallel

    @property
    def pid(self) -> int:
        return self.process.pid

    def running(self) -> bool:
        return self.process.poll() is None

    def log_tail(self, *, lines: int = 15) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""

    def stop(self, *, timeout: float = STOP_TIMEOUT_S) -> None:
        """Stop the router and its model processes; idempotent."""
        if self._stopped:
            return
        self._stopped = True
        stop_process_group(self.process, timeout=timeout)




@dataclass
class LocalEngines:
    serial: EngineHandle
    batched: EngineHandle
    binary: Path
    models: list[ModelInfo]
    real_models: list[RealModel] = field(default_factory=list)

    @property
    def handles(self) -> list[EngineHandle]:
        return [self.serial, self.batched]

    def stop(self) -> None:
        for handle in self.handles:
            handle.stop()

    def __enter__(self) -> LocalEngines:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def launch(
    *, binary: Path, config: EngineConfig, preset: Path, models_max: int, log_path: Path
) -> EngineHandle:
    if port_in_use(host=config.host, port=config.port):
        raise EngineError(
            f"{config.url} is already in use (a previous engine still running?); "
            f"stop it or choose another URL"
        )
    command = server_command(binary=binary, config=config, preset=preset, models_max=models_max)
    log_path.parent.mkdir(parents=True, exist_ok=True)
    # The kernel ties the death signal to the thread that forked, not the process: from a
    # short-lived thread it would stop the server when that thread ends, so only the main
    # thread asks for it.
    tie_to_parent = (sys.platform == "linux"
                     and threading.current_thread() is threading.main_thread())
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            command,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            preexec_fn=_die_with_parent if tie_to_parent else None,
        )
    return EngineHandle(config=config, process=process, log_path=log_path, command=command)


def model_states(*, url: str, timeout: float = 2.0) -> dict[str, str]:
    """Router's view of each model: ``loaded``, ``loading``, ``unloaded`` or ``failed``."""
    response = httpx.get(f"{url}/models", timeout=timeout)
    response.raise_for_status()
    states = {}
    for entry in response.json().get("data", []):
        status = entry.get("status", {})
        states[entry["id"]] = "failed" if status.get("failed") else status.get("value", "unknown")
    return states


def wait_ready(*, handle: EngineHandle, model: str, timeout: float = STARTUP_TIMEOUT_S) -> None:
    """Block until the router answers and ``model`` is loaded, or raise with the log's tail."""
    deadline = time.monotonic() + timeout
    last_error = "no answer yet"
    while time.monotonic() < deadline:
        if not handle.running():
            raise EngineError(
                f"{handle.name} engine exited with code {handle.process.returncode}; "
                f"{handle.log_path}:\n{handle.log_tail()}"
            )
        try:
            health = httpx.get(f"{handle.url}/health", timeout=2.0)
            if health.status_code == 200:
                state = model_states(url=handle.url).get(model, "missing")
                if state == "loaded":
                    return
                if state in ("failed", "missing"):
                    raise EngineError(
                        f"{handle.name} engine could not load {model} ({state}); "
                        f"{handle.log_path}:\n{handle.log_tail()}"
                    )
                last_error = f"{model} {state}"
            else:
                last_error = f"/health answered {health.status_code}"
        except httpx.HTTPError as error:
            last_error = str(error) or type(error).__name__
        time.sleep(0.1)
    raise EngineError(f"{handle.name} engine not ready after {timeout:.0f} s ({last_error})")


def start_local_engines(
    *,
    serial_url: str | None = None,
    batched_url: str | None = None,
    model: str = DEFAULT_MODEL,
    sizes: tuple[str, ...] = tuple(SPECS),
    precisions: tuple[str, ...] = tuple(PRECISIONS),
    threads: int | None = None,
    batched_slots: int = BATCHED_SLOTS,
    ctx_per_slot: int = CTX_PER_SLOT,
    directory: Path | None = None,
    log_dir: Path | None = None,
    startup_timeout: float = STARTUP_TIMEOUT_S,
    real_models: tuple[str, ...] = tuple(REAL_MODELS),
) -> LocalEngines:
    """Build and generate what is missing, start both targets, return once ``model`` is loaded.

    URLs default to ``LOCAL_ENGINE_URL`` / ``LOCAL_ENGINE_BATCHED_URL``; threads to
    ``PREFILL_ENGINE_THREADS`` or every usable CPU. Raises
    ``BuildError`` or ``EngineError`` with a message for a human; nothing is left running then.
    """
    configured = engine_environment()
    serial_url = serial_url or configured.serial_url
    batched_url = batched_url or configured.batched_url
    binary = ensure_llama_server().binary
    directory = directory or models_dir()
    models = ensure_models(sizes=sizes, precisions=precisions, directory=directory)
    try:
        reals = ensure_real_models(names=real_models)
    except RealModelError as error:
        raise EngineError(str(error)) from None
    if model not in {info.name for info in models} | {real.name for real in reals}:
        raise EngineError(f"model {model} is neither a generated model in {directory} nor one of "
                          f"the real models ({', '.join(REAL_MODELS)})")
    log_dir = log_dir or runtime_dir()
    preset = write_preset(path=log_dir / "models.ini", models=models, directory=directory,
                          default_model=model, real_models=reals)
    threads = threads or configured.threads or usable_cpus()
    configs = [
        EngineConfig(name="serial", url=serial_url.rstrip("/"), parallel=1, threads=threads,
                     ctx_per_slot=ctx_per_slot, default_model=model),
        EngineConfig(name="batched", url=batched_url.rstrip("/"), parallel=batched_slots,
                     threads=threads, ctx_per_slot=ctx_per_slot, default_model=model),
    ]
    handles: list[EngineHandle] = []
    try:
        for config in configs:
            handles.append(launch(binary=binary, config=config, preset=preset,
                                  models_max=len(models) + len(reals), log_path=log_dir / f"{config.name}.log"))
        for handle in handles:
            wait_ready(handle=handle, model=model, timeout=startup_timeout)
    except BaseException:
        for handle in handles:
            handle.stop()
        raise
    return LocalEngines(serial=handles[0], batched=handles[1], binary=binary, models=models,
                        real_models=reals)


def engine_status(*, urls: dict[str, str]) -> dict[str, object]:
    report: dict[str, object] = {}
    for name, url in urls.items():
        entry: dict[str, object] = {"url": url, "up": False}
        try:
            health = httpx.get(f"{url}/health", timeout=2.0)
            entry["up"] = health.status_code == 200
            entry["models"] = model_states(url=url)
        except (httpx.HTTPError, ValueError) as error:
            entry["error"] = str(error) or type(error).__name__
        report[name] = entry
    state_file = runtime_dir() / "state.json"
    with contextlib.suppress(OSError, ValueError):
        report["started_by"] = json.loads(state_file.read_text())
    return report


def _write_state(*, engines: LocalEngines) -> Path:
    path = runtime_dir() / "state.json"
    state = {
        "pid": os.getpid(),
        "binary": str(engines.binary),
        "started_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "engines": {
            h.name: {"url": h.url, "pid": h.pid, "parallel": h.parallel, "log": str(h.log_path),
                     "command": h.command}
            for h in engines.handles
        },
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(state, indent=2) + "\n")
    return path


def serve(*, model: str, threads: int | None = None) -> int:
    # While building and starting, the first SIGINT/SIGTERM raises KeyboardInterrupt: it unwinds
    # through start_local_engines, which stops whatever it had started. The handler raises once
    # only, and every statement it can land on (install, start, stop_raising) is inside the try,
    # so a signal arriving just as the start finishes still stops the servers; later signals
    # are only counted and cannot cut the cleanup short (see engines.stopping).
    stop = StopSignals(raise_first=True)
    engines: LocalEngines | None = None
    try:
        stop.install()
        engines = start_local_engines(model=model, threads=threads)
        stop.stop_raising()
    except KeyboardInterrupt:
        if engines is not None:
            engines.stop()
        stop.restore()
        return 130
    except (BuildError, EngineError, ValueError) as error:
        stop.restore()
        print(f"error: {error}", file=sys.stderr)
        return 1
    try:
        return _serve_until_stopped(engines=engines, model=model, stop=stop)
    finally:
        stop.restore()


def _serve_until_stopped(*, engines: LocalEngines, model: str, stop: StopSignals) -> int:
    state = _write_state(engines=engines)
    try:
        print(f"serial  (--parallel 1): {engines.serial.url}", flush=True)
        print(f"batched (--parallel {engines.batched.parallel}): {engines.batched.url}", flush=True)
        print(f"generated models: {', '.join(info.name for info in engines.models)}", flush=True)
        print(f"real models: {', '.join(real.name for real in engines.real_models)}", flush=True)
        print(f"loaded at start: {model}", flush=True)
        print("generated models: real timings, synthetic text; real models: real words and "
              "stopping; Ctrl-C stops both", file=sys.stderr, flush=True)
        while not stop.wait(0.5):
            for handle in engines.handles:
                if not handle.running():
                    print(f"error: {handle.name} engine exited with code "
                          f"{handle.process.returncode}; {handle.log_path}:\n{handle.log_tail()}",
                          file=sys.stderr)
                    return 1
        return 0
    finally:
        engines.stop()
        with contextlib.suppress(OSError):
            state.unlink()


@dataclass(frozen=True)
class EngineEnvironment:
    serial_url: str
    batched_url: str
    threads: int  # 0: every usable CPU


def engine_environment() -> EngineEnvironment:
    """The engine's variables, read and checked by the site's own readers (config/env.py), so a
    bad value gives the same one-line message as every other process; raises ConfigError."""
    from config.env import env_int, env_url

    return EngineEnvironment(
        serial_url=env_url("LOCAL_ENGINE_URL", default=DEFAULT_SERIAL_URL, schemes=("http",)).rstrip("/"),
        batched_url=env_url("LOCAL_ENGINE_BATCHED_URL", default=DEFAULT_BATCHED_URL, schemes=("http",)).rstrip("/"),
        threads=env_int("PREFILL_ENGINE_THREADS", default=0, minimum=0),
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m engines.local",
        description="llama.cpp's llama-server as two local CPU targets (serial and batched).",
    )
    commands = parser.add_subparsers(dest="command", required=True)
    serve_parser = commands.add_parser("serve", help="build, generate models, run both targets")
    serve_parser.add_argument("--model", default=DEFAULT_MODEL, help="model loaded at start")
    serve_parser.add_argument("--threads", type=int, default=None,
                              help="CPU threads per server (default: PREFILL_ENGINE_THREADS or "
                                   "every usable CPU)")
    commands.add_parser("status", help="print JSON of what is up")
    args = parser.parse_args(argv)
    from config.env import configuration_checked

    # Checked before anything starts: a bad value must not wait for a 6-minute build to show.
    with configuration_checked():
        configured = engine_environment()
    if args.command == "serve":
        return serve(model=args.model, threads=args.threads)
    urls = {"serial": configured.serial_url, "batched": configured.batched_url}
    report = engine_status(urls=urls)
    print(json.dumps(report, indent=2))
    return 0 if all(entry["up"] for key, entry in report.items() if key in urls) else 1


if __name__ == "__main__":
    sys.exit(main())
