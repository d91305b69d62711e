"""Harness fidelity: how close does each client come to the truth of a scripted engine?

Against the same scripted engine (its own process; TTFT 50 ms, then one token every 4, 10 or
20 ms, 64 tokens per request) this runs, side by side, at 1, 16 and 64 concurrent streams:

- ``ours``: workers.measure, exactly as the labs use it (``run_measurement``);
- ``floor``: a minimal client written on raw asyncio sockets that does nothing per chunk but
  stamp the time and count token events: the best this machine allows from Python;
- ``guidellm``: GuideLLM, if it is installed in ``var/peer-venv`` (see --help).

It reports the TTFT error against the truth (measured minus the scripted 50 ms; median and
p99), the mean absolute TPOT error against the scripted gap, and client CPU seconds per 1,000
output tokens. Every client runs in a child process of its own. For ours and the floor the CPU
time is the child's own, from just before the run to just after it (so it includes setting
up the run: prompts, connections); a peer cannot be timed from inside, so its CPU comes from
the kernel's accounting of its whole process tree (``wait4``) minus that of a one-round run
at the same concurrency, which removes its start-up.

    python bench/harness_fidelity.py [--clients ours,floor,guidellm] [--gaps 4,10,20] [--repeat 3]

``n`` is the number of requests measured over all repetitions; each statistic is the median of
the per-repetition values.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from workers.measure.scripted_engine import EngineConfig, spawn  # noqa: E402

MODEL = "scripted-model"
TTFT_MS = 50.0
MAX_TOKENS = 64
LEVELS = {1: 12, 16: 64, 64: 192}  # concurrency -> requests in the full run
PEER_VENV = ROOT / "var" / "peer-venv"
TOKENIZER_DIR = ROOT / "var" / "bench-tokenizer"


# -- the clients (each runs in a child process) --------------------------------------------------


def run_ours(url: str, concurrency: int, requests: int) -> list[dict[str, float]]:
    from workers.measure import Capabilities, RunSpec, TargetSpec, run_measurement

    target = TargetSpec(
        base_url=url,
        api="openai-completions",
        model=MODEL,
        capabilities=Capabilities(include_usage=True, ignore_eos=True),
    )
    spec = RunSpec(
        requests=requests,
        concurrency=concurrency,
        prompt_tokens=16,
        max_tokens=MAX_TOKENS,
        ignore_eos=True,
        server_metrics=False,
    )
    result = asyncio.run(run_measurement(target=target, spec=spec))
    return [
        {"ttft_ms": r.ttft_s * 1000, "tpot_ms": r.tpot_s * 1000, "tokens": r.output_tokens}
        for r in result.measured
        if r.ok
    ]


def run_floor(url: str, concurrency: int, requests: int) -> list[dict[str, float]]:
    """The floor: stamp on arrival, count token events by a byte search, nothing else."""
    host, port = url.removeprefix("http://").split(":")
    results: list[dict[str, float]] = []

    class Stream(asyncio.Protocol):
        def __init__(self) -> None:
            self.first = self.last = self.tokens = 0
            self.done: asyncio.Future[None] | None = None

        def data_received(self, data: bytes) -> None:
            now = time.perf_counter_ns()
            # The engine writes token events compactly ("text":"...") and its closing chunk
            # with spaces, so this search counts tokens only.
            count = data.count(b'"text":"')
            if count:
                if not self.first:
                    self.first = now
                self.last = now
                self.tokens += count
            if data.endswith(b"0\r\n\r\n") and self.done is not None and not self.done.done():
                self.done.set_result(None)

    async def main() -> None:
        loop = asyncio.get_running_loop()
        todo = list(range(requests))

        async def worker() -> None:
            transport, stream = await loop.create_connection(Stream, host, int(port))
            while todo:
                i = todo.pop()
                body = json.dumps(
                    {
                        "model": MODEL,
                        "prompt": f"floor request {i}",
                        "max_tokens": MAX_TOKENS,
                        "stream": True,
                        "ignore_eos": True,
                    }
                ).encode()
                request = (
                    f"POST /v1/completions HTTP/1.1\r\nhost: {host}\r\n"
                    f"content-type: application/json\r\ncontent-length: {len(body)}\r\n\r\n"
                ).encode() + body
                stream.first = stream.last = stream.tokens = 0
                stream.done = loop.create_future()
                sent = time.perf_counter_ns()
                transport.write(request)
                await stream.done
                results.append(
                    {
                        "ttft_ms": (stream.first - sent) / 1e6,
                        "tpot_ms": (stream.last - stream.first) / 1e6 / (stream.tokens - 1),
                        "tokens": stream.tokens,
                    }
                )
            transport.close()

        await asyncio.gather(*(worker() for _ in range(concurrency)))

    asyncio.run(main())
    return results


def ensure_tokenizer() -> Path:
    """GuideLLM needs a Hugging Face tokenizer directory; build a small one locally."""
    if (TOKENIZER_DIR / "tokenizer.json").exists():
        return TOKENIZER_DIR
    code = f"""
import json, pathlib
from tokenizers import Tokenizer, models, pre_tokenizers, trainers
words = open({str(Path(__file__))!r}).read().split()
tok = Tokenizer(models.WordLevel(unk_token="[UNK]"))
tok.pre_tokenizer = pre_tokenizers.Whitespace()
tok.train_from_iterator([" ".join(words)] * 4, trainers.WordLevelTrainer(special_tokens=["[UNK]"]))
out = pathlib.Path({str(TOKENIZER_DIR)!r}); out.mkdir(parents=True, exist_ok=True)
tok.save(str(out / "tokenizer.json"))
(out / "tokenizer_config.json").write_text(json.dumps({{
    "tokenizer_class": "PreTrainedTokenizerFast", "unk_token": "[UNK]",
    "model_max_length": 1000000}}))
"""
    subprocess.run([str(PEER_VENV / "bin" / "python"), "-c", code], check=True)
    return TOKENIZER_DIR


def guidellm_command(url: str, concurrency: int, requests: int, out: Path) -> list[str]:
    tokenizer = ensure_tokenizer()
    return [
        str(PEER_VENV / "bin" / "guidellm"),
        "run",
        "--backend",
        f"kind=openai_http,target={url},model={MODEL}",
        "--profile",
        f"kind=concurrent,streams={concurrency}",
        "--constraint",
        f"kind=max_requests,count={requests}",
        "--tokenizer",
        f"kind=huggingface_auto,model={tokenizer}",
        "--data",
        f"kind=synthetic_text,prompt_tokens=16,output_tokens={MAX_TOKENS}",
        "--output",
        f"kind=json,path={out}",
        "--disable-console",
    ]


def read_guidellm(out: Path) -> list[dict[str, float]]:
    report = json.loads(out.read_text())
    rows: list[dict[str, float]] = []
    for benchmark in report["benchmarks"]:
        for request in benchmark["requests"]["successful"]:
            tokens = request.get("output_tokens") or 0
            ttft = request.get("time_to_first_token_ms")
            tpot = request.get("time_per_output_token_ms")
            itl = request.get("inter_token_latency_ms")
            if ttft is None or tokens < 2:
                continue
            rows.append({"ttft_ms": ttft, "tpot_ms": itl if itl is not None else tpot, "tokens": tokens})
    return rows


# -- orchestration --------------------------------------------------------------------------------


def run_child(client: str, url: str, concurrency: int, requests: int) -> tuple[list[dict], float]:
    """Run one client in a child process: its results, and CPU seconds for the run (measured
    inside the child for ours and the floor; for a peer, all the CPU its process tree used)."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "out.json"
        if client == "guidellm":
            cmd = guidellm_command(url, concurrency, requests, out)
        else:
            cmd = [
                sys.executable,
                __file__,
                "--child",
                client,
                "--url",
                url,
                "--concurrency",
                str(concurrency),
                "--requests",
                str(requests),
                "--out",
                str(out),
            ]
        proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        _, status, usage = os.wait4(proc.pid, 0)
        stderr = proc.stderr.read().decode() if proc.stderr else ""
        if os.waitstatus_to_exitcode(status) != 0:
            raise RuntimeError(f"{client} failed: {stderr[-2000:]}")
        if client == "guidellm":
            return read_guidellm(out), usage.ru_utime + usage.ru_stime
        data = json.loads(out.read_text())
    return data["rows"], data["cpu_s"]


def p99(values: list[float]) -> float:
    ordered = sorted(values)
    pos = (len(ordered) - 1) * 0.99
    low = math.floor(pos)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (pos - low)


def measure_client(client: str, url: str, concurrency: int, gap_ms: float) -> dict[str, Any]:
    requests = LEVELS[concurrency]
    rows, cpu = run_child(client, url, concurrency, requests)
    tokens = sum(r["tokens"] for r in rows)
    if client == "guidellm":
        # A peer's start-up (imports, worker processes, tokenizer) is not per-token work:
        # subtract a one-round run of it at the same concurrency.
        base_rows, cpu_base = run_child(client, url, concurrency, concurrency)
        cpu -= cpu_base
        tokens -= sum(r["tokens"] for r in base_rows)
    ttft_err = [r["ttft_ms"] - TTFT_MS for r in rows]
    tpot_err = [abs(r["tpot_ms"] - gap_ms) for r in rows]
    return {
        "n": len(rows),
        "expected": requests,
        "ttft_err_p50": statistics.median(ttft_err),
        "ttft_err_p99": p99(ttft_err),
        "tpot_err": statistics.mean(tpot_err),
        "cpu_per_1k": cpu / tokens * 1000 if tokens > 0 else float("nan"),
        "wrong_counts": sum(1 for r in rows if r["tokens"] != MAX_TOKENS),
    }


def _format_row(gap: float, concurrency: int, client: str, rows: list[dict[str, Any]]) -> str:
    def mid(key: str) -> float:
        return statistics.median(row[key] for row in rows)

    n = sum(row["n"] for row in rows)
    expected = sum(row["expected"] for row in rows)
    wrong = sum(row["wrong_counts"] for row in rows)
    flag = "" if n == expected and not wrong else f"  ({n}/{expected} ok, {wrong} bad counts)"
    return (
        f"{gap:>6g} {concurrency:>7} {client:>9} {n:>5} "
        f"{mid('ttft_err_p50'):>10.2f} ms {mid('ttft_err_p99'):>10.2f} ms "
        f"{mid('tpot_err'):>6.3f} ms {mid('cpu_per_1k'):>13.3f}{flag}"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clients", default="ours,floor,guidellm")
    parser.add_argument("--gaps", default="4,10,20")
    parser.add_argument("--levels", default="1,16,64")
    parser.add_argument("--repeat", type=int, default=1, help="runs per cell; medians are shown")
    parser.add_argument("--child", choices=["ours", "floor"], help=argparse.SUPPRESS)
    parser.add_argument("--url", help=argparse.SUPPRESS)
    parser.add_argument("--concurrency", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--requests", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--out", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        runner = run_ours if args.child == "ours" else run_floor
        if args.child == "ours":
            # Imports and first-use set-up (httpx loads its backends lazily) are paid once per
            # process, as in a long-lived worker: one request first keeps them out of the count.
            run_ours(args.url, 1, 1)
        started = time.process_time()
        rows = runner(args.url, args.concurrency, args.requests)
        cpu_s = time.process_time() - started
        args.out.write_text(json.dumps({"rows": rows, "cpu_s": cpu_s}))
        return 0

    clients = [c for c in args.clients.split(",") if c]
    if "guidellm" in clients and not (PEER_VENV / "bin" / "guidellm").exists():
        print(f"guidellm: not installed in {PEER_VENV}; skipped", file=sys.stderr)
        clients.remove("guidellm")
    levels = [int(x) for x in args.levels.split(",")]
    print(
        f"scripted engine: TTFT {TTFT_MS:g} ms, {MAX_TOKENS} tokens per request; "
        f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f}"
    )
    header = (
        f"{'gap ms':>6} {'streams':>7} {'client':>9} {'n':>5} {'TTFT err p50':>13} "
        f"{'TTFT err p99':>13} {'TPOT err':>9} {'CPU s/1k tok':>13}"
    )
    print(header)
    print("-" * len(header))
    for gap in (float(g) for g in args.gaps.split(",")):
        with spawn(EngineConfig(ttft_ms=TTFT_MS, gap_ms=gap, role_chunk=False)) as url:
            for concurrency in levels:
                # Clients take turns within each repetition, so a burst of other work on the
                # machine hits them alike; each statistic is the median over repetitions.
                runs: dict[str, list[dict[str, Any]]] = {client: [] for client in clients}
                for _ in range(args.repeat):
                    for client in clients:
                        try:
                            runs[client].append(measure_client(client, url, concurrency, gap))
                        except Exception as exc:  # one failing peer must not hide the others
                            print(f"{gap:>6g} {concurrency:>7} {client:>9}  failed: {exc}")
                for client, rows in runs.items():
                    if rows:
                        print(_format_row(gap, concurrency, client, rows), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
