"""Build llama.cpp's ``llama-server`` from the sources vendored in the llama-cpp-python sdist.

``python -m engines.llamacpp.build`` prints the path of a ready binary, building it first when
the cache has none. The cache lives outside the repository (``~/.cache/prefill/llama.cpp`` or
``PREFILL_ENGINE_CACHE``) so a fresh clone on the same machine reuses the build (5-9 minutes on 2 cores).

Layout of one cache entry, ``<cache>/<version>/``::

    llama.cpp/        the vendored sources (models/ holds the vocab-only GGUF files)
    build/            cmake build tree, kept so a rebuild only recompiles what changed
    bin/llama-server  the self-contained binary
    build.json        how the binary was built (flags, CPU it was tuned for, seconds)
    build.log         compiler output of the last build
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from engines.filelock import locked
from engines.llamacpp import LLAMA_CPP_PYTHON_VERSION

INSTALL_HINT = (
    "building llama-server needs cmake and a C/C++ compiler: "
    "apt-get install cmake g++ (macOS: xcode-select --install && brew install cmake)"
)

# Offline-safe, single static binary: no shared libs to find at run time, no UI download,
# no HTTPS client (the server only ever reads local model files here).
BASE_CMAKE_FLAGS = (
    "-DCMAKE_BUILD_TYPE=Release",
    "-DBUILD_SHARED_LIBS=OFF",
    "-DLLAMA_USE_PREBUILT_UI=OFF",
    "-DLLAMA_BUILD_UI=OFF",
    "-DLLAMA_BUILD_SERVER=ON",
    "-DLLAMA_BUILD_TESTS=OFF",
    "-DLLAMA_BUILD_EXAMPLES=OFF",
    "-DLLAMA_OPENSSL=OFF",
)


class BuildError(RuntimeError):
    """The binary could not be produced; the message is meant for a human, one line."""


@dataclass(frozen=True)
class EngineBuild:
    version: str
    root: Path
    binary: Path
    sources: Path
    built_now: bool


def cache_root() -> Path:
    override = os.environ.get("PREFILL_ENGINE_CACHE")
    if override:
        return Path(override).expanduser()
    return Path.home() / ".cache" / "prefill" / "llama.cpp"


def version_root(*, version: str = LLAMA_CPP_PYTHON_VERSION) -> Path:
    return cache_root() / version


def binary_path(*, version: str = LLAMA_CPP_PYTHON_VERSION) -> Path:
    return version_root(version=version) / "bin" / "llama-server"


def sources_path(*, version: str = LLAMA_CPP_PYTHON_VERSION) -> Path:
    return version_root(version=version) / "llama.cpp"


def cpu_signature() -> str:
    """Identify the instruction set a native build was tuned for.

    A ``-march=native`` binary copied to an older CPU dies with SIGILL, so a cache moved to
    another machine must be rebuilt rather than trusted.
    """
    flags = ""
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith(("flags", "Features")):
                flags = " ".join(sorted(line.split(":", 1)[1].split()))
                break
    raw = f"{platform.machine()}|{flags}"
    return hashlib.sha256(raw.encode()).hexdigest()[:16]


# cpuinfo flag(s) -> ggml option, for x86 builds tuned to this CPU. AMX is left out on purpose:
# some VMs (this project's Firecracker sandboxes among them) advertise amx_int8 but fault on the
# first tile instruction, which killed every Q4_0/Q8_0 model at warm-up with SIGILL.
X86_FEATURES: tuple[tuple[tuple[str, ...], str], ...] = (
    (("sse4_2",), "GGML_SSE42"),
    (("avx",), "GGML_AVX"),
    (("avx2",), "GGML_AVX2"),
    (("fma",), "GGML_FMA"),
    (("f16c",), "GGML_F16C"),
    (("bmi2",), "GGML_BMI2"),
    (("avx_vnni",), "GGML_AVX_VNNI"),
    (("avx512f", "avx512cd", "avx512vl", "avx512dq", "avx512bw"), "GGML_AVX512"),
    (("avx512vbmi",), "GGML_AVX512_VBMI"),
    (("avx512_vnni",), "GGML_AVX512_VNNI"),
    (("avx512_bf16",), "GGML_AVX512_BF16"),
)
NO_AMX = ("-DGGML_AMX_TILE=OFF", "-DGGML_AMX_INT8=OFF", "-DGGML_AMX_BF16=OFF")
# Haswell (2013) and later: what ggml itself assumes when not tuning for the build machine.
PORTABLE_X86_FLAGS = frozenset({"sse4_2", "avx", "avx2", "fma", "f16c", "bmi2"})


def cpu_flags() -> set[str]:
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("flags"):
                return set(line.split(":", 1)[1].split())
    return set()


def cmake_flags(*, native: bool, flags: set[str] | None = None) -> list[str]:
    """CMake flags: tuned to this CPU (``native``) or portable to any x86-64 with AVX2.

    On x86 the tuning lists this CPU's instruction sets one by one rather than passing
    ``-march=native``, so that AMX can be excluded; elsewhere (ARM) ``GGML_NATIVE`` is used.
    A portable build decodes noticeably slower on CPUs with AVX-512.
    """
    if not native:
        flags = PORTABLE_X86_FLAGS
    else:
        flags = cpu_flags() if flags is None else flags
        if platform.machine() not in ("x86_64", "AMD64") or not flags:
            return [*BASE_CMAKE_FLAGS, "-DGGML_NATIVE=ON"]
    # Every option is spelled out, ON or OFF: a reused build tree keeps any option not passed.
    features = [
        f"-D{option}={'ON' if all(flag in flags for flag in needed) else 'OFF'}"
        for needed, option in X86_FEATURES
    ]
    return [*BASE_CMAKE_FLAGS, "-DGGML_NATIVE=OFF", *features, *NO_AMX]


def missing_tools() -> list[str]:
    missing = []
    if shutil.which("cmake") is None:
        missing.append("cmake")
    if not any(shutil.which(name) for name in ("c++", "g++", "clang++")):
        missing.append("C++ compiler")
    if not any(shutil.which(name) for name in ("cc", "gcc", "clang")):
        missing.append("C compiler")
    return missing


def _log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def ensure_sources(*, version: str = LLAMA_CPP_PYTHON_VERSION) -> Path:
    """Return the vendored llama.cpp tree, downloading and unpacking the sdist once."""
    target = sources_path(version=version)
    if (target / "CMakeLists.txt").is_file():
        return target
    with locked(version_root(version=version) / ".sources.lock"):
        if (target / "CMakeLists.txt").is_file():
            return target
        _download_and_unpack(version=version, target=target)
    return target


def _download_and_unpack(*, version: str, target: Path) -> None:
    _log(f"downloading llama-cpp-python=={version} sdist (about 75 MB) ...")
    _write_progress(root=version_root(version=version), phase="downloading sources", log_path=None)
    with tempfile.TemporaryDirectory(dir=target.parent) as scratch_dir:
        scratch = Path(scratch_dir)
        command = [
            sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:",
            "--quiet", "--dest", str(scratch), f"llama-cpp-python=={version}",
        ]
        result = subprocess.run(command, capture_output=True, text=True, check=False)
        archives = sorted(scratch.glob("llama_cpp_python-*.tar.gz"))
        if result.returncode != 0 or not archives:
            detail = (result.stderr or result.stdout).strip().splitlines()
            last = detail[-1] if detail else "no archive downloaded"
            raise BuildError(f"pip could not download llama-cpp-python=={version}: {last}")
        prefix = f"{archives[0].name.removesuffix('.tar.gz')}/vendor/llama.cpp/"
        unpacked = scratch / "llama.cpp"
        with tarfile.open(archives[0]) as archive:
            members = []
            for member in archive.getmembers():
                if not member.name.startswith(prefix):
                    continue
                member.name = member.name.removeprefix(prefix)
                if member.name:
                    members.append(member)
            if not members:
                raise BuildError(f"{archives[0].name} has no vendor/llama.cpp directory")
            archive.extractall(unpacked, members=members, filter="data")
        if target.exists():
            shutil.rmtree(target)
        unpacked.rename(target)


def _read_stamp(root: Path) -> dict[str, object]:
    try:
        return json.loads((root / "build.json").read_text())
    except (OSError, ValueError):
        return {}


def _stamp_matches(*, root: Path, flags: list[str]) -> bool:
    stamp = _read_stamp(root)
    return stamp.get("cmake_flags") == flags and stamp.get("cpu") == cpu_signature()


def ensure_llama_server(
    *, version: str = LLAMA_CPP_PYTHON_VERSION, native: bool = True, jobs: int | None = None
) -> EngineBuild:
    """Return a built llama-server for this version, building it only when needed.

    The fast path (binary present, built with the same flags for this CPU) touches no lock
    and starts no process, so calling this before every server start costs microseconds.
    """
    root = version_root(version=version)
    binary = binary_path(version=version)
    flags = cmake_flags(native=native)
    if binary.is_file() and _stamp_matches(root=root, flags=flags):
        return EngineBuild(version, root, binary, sources_path(version=version), built_now=False)
    missing = missing_tools()
    if missing:
        raise BuildError(f"{', '.join(missing)} not found; {INSTALL_HINT}")
    sources = ensure_sources(version=version)
    with locked(root / ".build.lock"):
        if binary.is_file() and _stamp_matches(root=root, flags=flags):
            return EngineBuild(version, root, binary, sources, built_now=False)
        _build(root=root, sources=sources, flags=flags, jobs=jobs or os.cpu_count() or 1)
    return EngineBuild(version, root, binary, sources, built_now=True)


def _build(*, root: Path, sources: Path, flags: list[str], jobs: int) -> None:
    build_dir = root / "build"
    log_path = root / "build.log"
    generator = "Ninja" if shutil.which("ninja") else "Unix Makefiles"
    # CMake reconfigures a tree in place when options change (only the CPU backend then
    # recompiles), but refuses one made by another generator.
    cache = build_dir / "CMakeCache.txt"
    if cache.is_file() and f"CMAKE_GENERATOR:INTERNAL={generator}\n" not in cache.read_text():
        shutil.rmtree(build_dir)
    configure = ["cmake", "-S", str(sources), "-B", str(build_dir), "-G", generator, *flags]
    compile_ = ["cmake", "--build", str(build_dir), "--config", "Release",
                "--target", "llama-server", "-j", str(jobs)]
    _log(f"building llama-server with {jobs} jobs (5-9 minutes on 2 cores); log: {log_path}")
    started = time.monotonic()
    _write_progress(root=root, phase="compiling", log_path=log_path)
    with log_path.open("w") as log:
        for command in (configure, compile_):
            log.write(f"$ {' '.join(command)}\n")
            log.flush()
            result = subprocess.run(command, stdout=log, stderr=subprocess.STDOUT, check=False)
            if result.returncode != 0:
                _write_progress(root=root, phase="failed", log_path=log_path)
                raise BuildError(
                    f"'{' '.join(command[:2])}' failed (exit {result.returncode}); "
                    f"see the end of {log_path}"
                )
    produced = build_dir / "bin" / "llama-server"
    if not produced.is_file():
        raise BuildError(f"cmake finished but {produced} is missing; see {log_path}")
    binary = root / "bin" / "llama-server"
    binary.parent.mkdir(parents=True, exist_ok=True)
    # Copy then rename, so a server started mid-build never executes a half-written file.
    partial = binary.with_name(".llama-server.partial")
    shutil.copy2(produced, partial)
    partial.replace(binary)
    seconds = round(time.monotonic() - started, 1)
    stamp = {"cmake_flags": flags, "cpu": cpu_signature(), "seconds": seconds, "jobs": jobs}
    (root / "build.json").write_text(json.dumps(stamp, indent=2) + "\n")
    (root / PROGRESS_FILE).unlink(missing_ok=True)
    _log(f"built llama-server in {seconds} s")


# Written when a download or build starts, removed when the build succeeds: how the supervisor
# and the Labs page tell a build in progress (and how far it got) from one that is done.
PROGRESS_FILE = "build-progress.json"
# A first build on 2 cores, when no earlier build on this machine says better (5-9 minutes).
EXPECTED_BUILD_S = 420.0
# Ninja prints "[12/206] Building CXX object ...", Unix Makefiles "[ 45%] Building ...".
_NINJA_STEP = re.compile(rb"^\[(\d+)/(\d+)\] ", re.MULTILINE)
_MAKE_PERCENT = re.compile(rb"^\[\s*(\d+)%\] ", re.MULTILINE)


@dataclass(frozen=True)
class BuildProgress:
    """How far llama-server's build has got, for people waiting on it.

    ``phase`` is "built", "not built", "downloading sources", "compiling" or "failed";
    ``done``/``total`` count compiled units (Ninja), ``percent`` is theirs or Make's;
    ``elapsed_s`` since the phase began and ``expected_s`` for the whole build (the last build's
    time on this machine, else a typical first build on 2 cores).
    """

    phase: str
    done: int | None = None
    total: int | None = None
    percent: int | None = None
    elapsed_s: float | None = None
    expected_s: float = EXPECTED_BUILD_S
    detail: str = ""

    def describe(self) -> str:
        if self.phase in {"built", "not built"}:
            return f"llama-server {self.phase}"
        parts = [self.phase]
        if self.done is not None and self.total:
            parts.append(f"{self.done}/{self.total} units ({self.percent}%)")
        elif self.percent is not None:
            parts.append(f"{self.percent}%")
        if self.elapsed_s is not None:
            parts.append(f"{_minutes(self.elapsed_s)} elapsed of about {_minutes(self.expected_s)}")
        if self.detail:
            parts.append(self.detail)
        return ", ".join(parts)


def _minutes(seconds: float) -> str:
    minutes, rest = divmod(round(seconds), 60)
    return f"{minutes} min {rest:02d} s" if minutes else f"{rest} s"


def _write_progress(*, root: Path, phase: str, log_path: Path | None) -> None:
    root.mkdir(parents=True, exist_ok=True)
    record = {"phase": phase, "started_at": time.time(), "pid": os.getpid(), "log": str(log_path or "")}
    (root / PROGRESS_FILE).write_text(json.dumps(record) + "\n")


def _alive(pid: int) -> bool:
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _compiled_units(log_path: Path) -> tuple[int | None, int | None, int | None]:
    """(done, total, percent) from the last progress line of the build log's tail."""
    try:
        with log_path.open("rb") as log:
            log.seek(0, os.SEEK_END)
            log.seek(max(0, log.tell() - 16384))
            tail = log.read()
    except OSError:
        return None, None, None
    steps = _NINJA_STEP.findall(tail)
    if steps:
        done, total = int(steps[-1][0]), int(steps[-1][1])
        return done, total, round(100 * done / total) if total else None
    percents = _MAKE_PERCENT.findall(tail)
    return (None, None, int(percents[-1])) if percents else (None, None, None)


def build_progress(*, version: str = LLAMA_CPP_PYTHON_VERSION, now: float | None = None) -> BuildProgress:
    """Read how the build stands from the files it writes; starts nothing and takes no lock."""
    root = version_root(version=version)
    expected = float(_read_stamp(root).get("seconds") or EXPECTED_BUILD_S)
    try:
        record = json.loads((root / PROGRESS_FILE).read_text())
    except (OSError, ValueError):
        record = None
    if record is None:
        built = binary_path(version=version).is_file()
        return BuildProgress(phase="built" if built else "not built", expected_s=expected)
    elapsed = max(0.0, (now or time.time()) - float(record.get("started_at", 0)))
    if record.get("phase") == "failed" or not _alive(int(record.get("pid", 0))):
        log = record.get("log") or ""
        return BuildProgress(phase="failed", elapsed_s=elapsed, expected_s=expected, detail=f"see {log}" if log else "")
    done, total, percent = _compiled_units(Path(record["log"])) if record.get("log") else (None, None, None)
    return BuildProgress(
        phase=str(record.get("phase", "compiling")), done=done, total=total, percent=percent,
        elapsed_s=elapsed, expected_s=expected,
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m engines.llamacpp.build",
        description="Build (once) and print the path of llama.cpp's llama-server.",
    )
    parser.add_argument("--version", default=LLAMA_CPP_PYTHON_VERSION,
                        help="llama-cpp-python sdist version to build from")
    parser.add_argument("--portable", action="store_true",
                        help="GGML_NATIVE=OFF: runs on other CPUs, decodes slower")
    parser.add_argument("--jobs", type=int, default=None, help="parallel compile jobs")
    args = parser.parse_args(argv)
    try:
        build = ensure_llama_server(version=args.version, native=not args.portable,
                                    jobs=args.jobs)
    except BuildError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    print(build.binary)
    return 0


if __name__ == "__main__":
    sys.exit(main())
