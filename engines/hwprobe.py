"""Measure this machine the way the speed-of-light bound needs it: memory bandwidth and cores.

Decode at batch 1 streams every weight once per token, so its floor is
``weight bytes / memory bandwidth``; the local targets take that bandwidth from this probe
rather than from a spec sheet, because a VM's share of a host is not on any sheet.

The probe times ``numpy.copyto`` between two buffers several times larger than the last-level
cache, split across threads (numpy drops the GIL while copying). Each copy of N bytes counts
2N: N read and N written. x86 stores usually read the destination line first
(write-allocate), so the memory bus really moves about 3N; counting 2N makes the figure a
floor of what the hardware can do, and it is close to what a read-mostly workload such as
decode gets. ``python -m engines.hwprobe`` prints the result as JSON.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

MIB = 1024 * 1024
MIN_BUFFER_BYTES = 1024 * MIB


@dataclass(frozen=True)
class HardwareProbe:
    cpu_model: str
    usable_cpus: int
    physical_cores: int
    last_level_cache_bytes: int | None
    total_memory_bytes: int | None
    memory_bandwidth_bytes_per_s: float
    single_thread_bandwidth_bytes_per_s: float
    buffer_bytes: int
    repeats: int
    method: str

    @property
    def memory_bandwidth_gb_s(self) -> float:
        return self.memory_bandwidth_bytes_per_s / 1e9

    def as_dict(self) -> dict[str, object]:
        return {**asdict(self), "memory_bandwidth_gb_s": round(self.memory_bandwidth_gb_s, 2)}


def _cpuinfo() -> list[dict[str, str]]:
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return []
    blocks = []
    for block in text.strip().split("\n\n"):
        entry = {}
        for line in block.splitlines():
            key, _, value = line.partition(":")
            entry[key.strip()] = value.strip()
        blocks.append(entry)
    return blocks


def cpu_model_name() -> str:
    for entry in _cpuinfo():
        for key in ("model name", "Model", "Hardware"):
            if entry.get(key):
                return entry[key]
    return platform.processor() or platform.machine()


def usable_cpus() -> int:
    # Affinity, not os.cpu_count(): a container or taskset may grant fewer CPUs than exist.
    with contextlib.suppress(AttributeError):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def physical_cores() -> int:
    cores = {(e.get("physical id"), e.get("core id")) for e in _cpuinfo() if "core id" in e}
    return len(cores) or usable_cpus()


def last_level_cache_bytes() -> int | None:
    best = None
    for size_file in Path("/sys/devices/system/cpu/cpu0/cache").glob("index*/size"):
        text = size_file.read_text().strip()
        units = {"K": 1024, "M": MIB, "G": 1024 * MIB}
        with contextlib.suppress(ValueError):
            size = int(text[:-1]) * units[text[-1]] if text[-1] in units else int(text)
            best = size if best is None else max(best, size)
    return best


def total_memory_bytes() -> int | None:
    with contextlib.suppress(OSError, ValueError):
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return int(line.split()[1]) * 1024
    return None


def copy_bandwidth(*, src: np.ndarray, dst: np.ndarray, threads: int, repeats: int) -> float:
    """Best bytes/s over ``repeats`` copies of ``src`` into ``dst`` with ``threads`` workers."""
    src_parts = np.array_split(src, threads)
    dst_parts = np.array_split(dst, threads)
    best = 0.0
    with ThreadPoolExecutor(max_workers=threads) as pool:
        for _ in range(repeats):
            started = time.perf_counter()
            list(pool.map(np.copyto, dst_parts, src_parts))
            elapsed = time.perf_counter() - started
            best = max(best, 2 * src.nbytes / elapsed)
    return best


def probe_hardware(*, buffer_bytes: int | None = None, repeats: int = 5) -> HardwareProbe:
    llc = last_level_cache_bytes()
    if buffer_bytes is None:
        # Four times the last-level cache so the copy is served by DRAM, not by cache.
        buffer_bytes = max(MIN_BUFFER_BYTES, 4 * (llc or 0))
    count = buffer_bytes // 8
    src = np.ones(count, dtype=np.float64)
    # Touch every page now so first-write page faults are not timed as bandwidth.
    dst = np.zeros(count, dtype=np.float64)
    dst.fill(1.0)
    cpus = usable_cpus()
    single = copy_bandwidth(src=src, dst=dst, threads=1, repeats=repeats)
    multi = copy_bandwidth(src=src, dst=dst, threads=cpus, repeats=repeats) if cpus > 1 else single
    return HardwareProbe(
        cpu_model=cpu_model_name(),
        usable_cpus=cpus,
        physical_cores=physical_cores(),
        last_level_cache_bytes=llc,
        total_memory_bytes=total_memory_bytes(),
        memory_bandwidth_bytes_per_s=max(single, multi),
        single_thread_bandwidth_bytes_per_s=single,
        buffer_bytes=src.nbytes,
        repeats=repeats,
        method="numpy copy, best of repeats, 2 bytes counted per byte copied (read + write)",
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m engines.hwprobe",
        description="Measure memory bandwidth, cores and CPU model; print JSON.",
    )
    parser.add_argument("--buffer-mib", type=int, default=None,
                        help="size of each copy buffer (default: 4x last-level cache, >= 1 GiB)")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--output", type=Path, default=None, help="also write the JSON here")
    args = parser.parse_args(argv)
    probe = probe_hardware(
        buffer_bytes=args.buffer_mib * MIB if args.buffer_mib else None, repeats=args.repeats
    )
    text = json.dumps(probe.as_dict(), indent=2)
    if args.output:
        args.output.parent.mkdir(parents=True, exist_ok=True)
        args.output.write_text(text + "\n")
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
