"""``python -m workers.measure`` and ``manage.py measure``: flags in, summary table out.

The two commands share :func:`add_arguments` and :func:`execute`, so their flags cannot drift.
A progress bar is drawn on stderr only when it is a terminal; the summary goes to stdout; the
full result (every request's record) to ``--json-out``. The first Ctrl-C stops the run within
a second and still prints and writes what was measured.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import sys
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TextIO

from workers.measure.errors import InvalidSpec
from workers.measure.metrics import SLO
from workers.measure.probe import ProbeResult, probe
from workers.measure.protocols import Api
from workers.measure.result import RunResult
from workers.measure.runner import Progress, measure
from workers.measure.spec import (
    ARRIVALS,
    ENGINE_KINDS,
    SWEEP_PARAMS,
    Capabilities,
    RunSpec,
    Sweep,
    TargetSpec,
    fresh_seed,
)

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_CANCELLED = 0, 1, 2, 130


def add_arguments(parser: argparse.ArgumentParser) -> None:
    target = parser.add_argument_group("target")
    target.add_argument("--base-url", required=True, help="e.g. http://127.0.0.1:8000")
    target.add_argument("--api", required=True, choices=[a.value for a in Api])
    target.add_argument("--model", required=True)
    target.add_argument(
        "--api-key",
        default=os.environ.get("MEASURE_API_KEY"),
        help="sent as a Bearer token (default: $MEASURE_API_KEY)",
    )
    target.add_argument(
        "--engine",
        default="auto",
        choices=["auto", *ENGINE_KINDS],
        help="auto probes the target for its capabilities (default)",
    )
    target.add_argument(
        "--fresh-connections",
        action="store_true",
        help="open a new connection for every stream (automatic for llama.cpp)",
    )
    target.add_argument("--insecure", action="store_true", help="do not verify TLS certificates")

    load = parser.add_argument_group("workload and load shape")
    load.add_argument("--prompt-tokens", type=int, default=128)
    load.add_argument("--max-tokens", type=int, default=128)
    load.add_argument("--requests", type=int, default=20, help="measured requests (per sweep value)")
    load.add_argument(
        "--concurrency",
        type=int,
        default=None,
        help="streams in flight (closed loop, default 1); with --rate, a cap on them",
    )
    load.add_argument("--rate", type=float, default=None, help="open loop: requests per second")
    load.add_argument("--arrival", choices=ARRIVALS, default="poisson")
    load.add_argument("--warmup", type=int, default=0, help="unmeasured requests sent first")
    load.add_argument("--ignore-eos", action="store_true", help="force exactly --max-tokens")
    load.add_argument(
        "--seed",
        type=int,
        default=None,
        help="repeat an earlier workload exactly (its prompts, and so what a prefix cache holds for "
        "them); by default each run draws a fresh seed, printed with the result",
    )
    load.add_argument(
        "--prompt-cache",
        action="store_true",
        help="let llama.cpp reuse a cached prompt prefix (off: every prefill is computed)",
    )
    load.add_argument("--shared-prefix-tokens", type=int, default=0)
    load.add_argument(
        "--sweep",
        default=None,
        metavar="PARAM=V1,V2,...",
        help=f"run once per value of {' or '.join(SWEEP_PARAMS)}, in order",
    )

    limits = parser.add_argument_group("SLOs and limits")
    limits.add_argument("--slo-ttft-ms", type=float, default=None)
    limits.add_argument("--slo-tpot-ms", type=float, default=None)
    limits.add_argument("--slo-e2e-ms", type=float, default=None)
    limits.add_argument("--timeout", type=float, default=300.0, help="per request, seconds")
    limits.add_argument("--read-timeout", type=float, default=60.0, help="longest silence in a stream, seconds")
    limits.add_argument("--max-duration", type=float, default=None, help="wall-clock cap, seconds")
    limits.add_argument("--max-errors", type=int, default=None, help="stop after this many")
    limits.add_argument("--no-server-metrics", action="store_true", help="skip /metrics scrapes")

    out = parser.add_argument_group("output")
    out.add_argument("--json-out", type=Path, default=None, help="write the full result here")
    out.add_argument("--quiet", action="store_true", help="no progress bar")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m workers.measure",
        description="Measure TTFT, TPOT, ITL and throughput of a streaming LLM engine.",
    )
    add_arguments(parser)
    return parser


def _parse_sweep(text: str | None) -> Sweep | None:
    if not text:
        return None
    param, sep, values = text.partition("=")
    if not sep:
        raise InvalidSpec("--sweep takes PARAM=V1,V2,... e.g. prompt_tokens=16,256,1024")
    try:
        numbers = tuple(int(v) for v in values.split(",") if v.strip())
    except ValueError:
        raise InvalidSpec(f"--sweep values must be integers, got {values!r}") from None
    return Sweep(param=param.strip().replace("-", "_"), values=numbers)


def spec_from_args(args: argparse.Namespace) -> RunSpec:
    slo = SLO(
        ttft_s=args.slo_ttft_ms / 1000 if args.slo_ttft_ms is not None else None,
        tpot_s=args.slo_tpot_ms / 1000 if args.slo_tpot_ms is not None else None,
        e2e_s=args.slo_e2e_ms / 1000 if args.slo_e2e_ms is not None else None,
    )
    return RunSpec(
        requests=args.requests,
        prompt_tokens=args.prompt_tokens,
        max_tokens=args.max_tokens,
        concurrency=args.concurrency,
        rate=args.rate,
        arrival=args.arrival,
        warmup=args.warmup,
        ignore_eos=args.ignore_eos,
        seed=args.seed if args.seed is not None else fresh_seed(),
        shared_prefix_tokens=args.shared_prefix_tokens,
        prompt_cache=args.prompt_cache,
        sweep=_parse_sweep(args.sweep),
        slo=None if slo.empty else slo,
        timeout_s=args.timeout,
        read_timeout_s=args.read_timeout,
        max_duration_s=args.max_duration,
        max_errors=args.max_errors,
        server_metrics=not args.no_server_metrics,
    )


def target_from_args(args: argparse.Namespace, err: TextIO) -> tuple[TargetSpec, ProbeResult | None]:
    found: ProbeResult | None = None
    if args.engine == "auto":
        found = asyncio.run(
            probe(
                base_url=args.base_url,
                api_key=args.api_key,
                model=args.model,
                api=args.api,
                verify_tls=not args.insecure,
            )
        )
        for problem in found.errors:
            err.write(f"probe: {problem}\n")
        capabilities = found.capabilities()
    else:
        capabilities = Capabilities.for_engine(args.engine)
    if args.fresh_connections:
        capabilities = Capabilities(
            include_usage=capabilities.include_usage,
            ignore_eos=capabilities.ignore_eos,
            tokenize=capabilities.tokenize,
            fresh_connection_per_stream=True,
            metrics=capabilities.metrics,
            cache_prompt=capabilities.cache_prompt,
        )
    target = TargetSpec(
        base_url=args.base_url,
        api=args.api,
        model=args.model,
        api_key=args.api_key,
        capabilities=capabilities,
        verify_tls=not args.insecure,
    )
    return target, found


class ProgressBar:
    """One self-overwriting line on a terminal; nothing at all elsewhere."""

    def __init__(self, stream: TextIO, *, enabled: bool) -> None:
        self.stream = stream
        self.enabled = enabled
        self.drawn = False

    def update(self, progress: Progress) -> None:
        if not self.enabled:
            return
        width = 24
        total = max(progress.total, 1)
        filled = min(width, round(width * progress.done / total))
        ttft = progress.summary["ttft_s"]
        ttft_text = f"  TTFT p50 {ttft['p50'] * 1000:.1f} ms" if ttft else ""
        phase = "warm-up " if progress.record.warmup else ""
        line = (
            f"\r{phase}[{'#' * filled}{'.' * (width - filled)}] {progress.done}/{progress.total}"
            f"  {progress.output_tokens} tok  {progress.elapsed_s:.1f} s"
            f"  {progress.failed} failed{ttft_text}"
        )
        self.stream.write(line.ljust(100))
        self.stream.flush()
        self.drawn = True

    def finish(self) -> None:
        if self.drawn:
            self.stream.write("\n")
            self.stream.flush()


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value * 1000:.2f}"


def _plain(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f}"


def format_summary(result: RunResult) -> str:
    s = result.summary
    spec = result.spec
    target = result.target
    lines: list[str] = []
    engine = result.engine or {}
    engine_text = ""
    if engine.get("engine") and engine.get("engine") != "unknown":
        engine_text = f"  ({engine['engine']} {engine.get('engine_version') or ''})".rstrip()
    lines.append(f"Target   {target['base_url']}  {target['api']}  {target['model']}{engine_text}")
    if spec["load_shape"] == "open_loop":
        cap = f", at most {spec['concurrency']} in flight" if spec["concurrency"] else ""
        shape = f"open loop, {spec['arrival']} arrivals at {spec['rate']:g}/s{cap}"
    else:
        shape = f"closed loop, concurrency {spec['concurrency'] or 1}"
    sweep = spec["sweep"]
    sweep_text = f", sweep {sweep['param']} {sweep['values']}" if sweep else ""
    lines.append(
        f"Load     {shape}, {result.requests_planned} requests (+{spec['warmup']} warm-up), "
        f"prompt {spec['prompt_tokens']} tok, max {spec['max_tokens']} tok{sweep_text}"
    )
    lines.append(f"Seed     {spec['seed']}  (--seed {spec['seed']} repeats these prompts exactly)")
    counts = s["requests"]
    stopped = f"  ({result.stop_reason})" if result.stop_reason else ""
    lines.append(
        f"Result   {result.status}: {counts['succeeded']}/{counts['total']} ok, "
        f"{counts['failed']} failed, {counts['cancelled']} cancelled, "
        f"{s['duration_s']:.2f} s measured{stopped}"
    )
    lines.append("")
    header = f"{'metric':<16}" + "".join(f"{h:>10}" for h in ("p50", "p90", "p95", "p99", "mean", "min", "max", "n"))
    lines.append(header)
    rows = (
        ("TTFT (ms)", "ttft_s", _ms),
        ("TPOT (ms)", "tpot_s", _ms),
        ("ITL (ms)", "itl_s", _ms),
        ("E2E (ms)", "e2e_s", _ms),
        ("queue (ms)", "queue_s", _ms),
        ("output tokens", "output_tokens", _plain),
        ("prompt tokens", "prompt_tokens", _plain),
    )
    for label, key, fmt in rows:
        stats = s.get(key)
        if stats is None:
            lines.append(f"{label:<16}{'-':>10}")
            continue
        cells = [fmt(stats[k]) for k in ("p50", "p90", "p95", "p99", "mean", "min", "max")]
        lines.append(f"{label:<16}" + "".join(f"{c:>10}" for c in cells) + f"{stats['n']:>10}")
    lines.append("")
    tok_s = s["output_tokens_per_s"]
    req_s = s["requests_per_s"]
    lines.append(
        f"Throughput  {_plain(tok_s)} output tok/s, "
        f"{'-' if req_s is None else f'{req_s:.2f}'} req/s, "
        f"peak concurrency {s['peak_concurrency']}"
    )
    goodput = s.get("goodput")
    if goodput:
        slo = goodput["slo"]
        parts = [
            f"{name} <= {slo[key] * 1000:g} ms"
            for name, key in (("TTFT", "ttft_s"), ("TPOT", "tpot_s"), ("E2E", "e2e_s"))
            if slo[key] is not None
        ]
        fraction = goodput["fraction"] or 0.0
        lines.append(
            f"Goodput     {goodput['requests']}/{counts['total']} requests meet {' and '.join(parts)} ({fraction:.0%})"
        )
    if s["errors_by_kind"]:
        first = next(r.error for r in result.measured if r.error and r.error["kind"] != "cancelled")
        kinds = ", ".join(f"{k}: {v}" for k, v in sorted(s["errors_by_kind"].items()))
        lines.append(f"Errors      {kinds}")
        lines.append(f"            first: {first['message'] if first else ''}")
    if s["warnings_by_kind"]:
        kinds = ", ".join(f"{k}: {v}" for k, v in sorted(s["warnings_by_kind"].items()))
        lines.append(f"Warnings    {kinds}")
    server = s.get("server")
    if server and server.get("prefill_s"):
        decode = server.get("decode_per_token_s")
        lines.append(
            f"Server      ({server['source']}) prefill p50 {_ms(server['prefill_s']['p50'])} ms"
            + (f", decode p50 {_ms(decode['p50'])} ms/token" if decode else "")
        )
    cache = s.get("prefix_cache")
    if cache:
        lines.append(
            f"Prefix cache {cache['hit_rate']:.0%} of {cache['prompt_tokens']} prompt tokens served from the "
            f"engine's cache ({cache['source']})"
        )
    if result.groups:
        lines.append("")
        param = result.groups[0]["param"]
        lines.append(f"{param:<16}{'TTFT p50':>12}{'TPOT p50':>12}{'E2E p50':>12}{'tok/s':>10}{'ok':>6}")
        for group in result.groups:
            g = group["summary"]

            def p50(key: str, g: dict[str, Any] = g) -> str:
                return _ms(g[key]["p50"]) if g.get(key) else "-"

            lines.append(
                f"{group['value']:<16}{p50('ttft_s'):>12}{p50('tpot_s'):>12}{p50('e2e_s'):>12}"
                f"{_plain(g['output_tokens_per_s']):>10}{g['requests']['succeeded']:>6}"
            )
        lines.append("(TTFT, TPOT and E2E in ms)")
    for note in result.notes:
        lines.append(f"Note        {note}")
    return "\n".join(lines) + "\n"


def execute(args: argparse.Namespace, *, out: TextIO, err: TextIO) -> int:
    """Run a measurement as the flags say; return the process exit code."""
    try:
        spec = spec_from_args(args)
        target, found = target_from_args(args, err)
    except InvalidSpec as exc:
        err.write(f"error: {exc}\n")
        return EXIT_USAGE
    if found is not None and not found.reachable:
        err.write(f"error: {args.base_url} is not reachable or serves no known API\n")
        return EXIT_FAILED
    bar = ProgressBar(err, enabled=not args.quiet and _isatty(err))
    interrupt = _Interrupt(err)
    previous = interrupt.install()
    try:
        result = measure(
            target=target,
            spec=spec,
            on_progress=bar.update,
            cancel=interrupt.seen,
            engine=found.to_dict() if found is not None else None,
        )
    finally:
        bar.finish()
        _restore_interrupt(previous)
    out.write(format_summary(result))
    if args.json_out is not None:
        args.json_out.parent.mkdir(parents=True, exist_ok=True)
        args.json_out.write_text(result.to_json(indent=1))
        out.write(f"Wrote {args.json_out}\n")
    if result.status == "cancelled":
        return EXIT_CANCELLED
    return EXIT_OK if result.status == "succeeded" else EXIT_FAILED


def _isatty(stream: TextIO) -> bool:
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty())


class _Interrupt:
    """Ctrl-C once: finish cleanly with what was measured; twice: abort.

    The handler only sets a flag or raises (a handler that took a lock, as ``Event.set()``
    does, could deadlock against the code it interrupted); the runner polls ``seen``, which
    also prints the notice, from an ordinary thread.
    """

    def __init__(self, err: TextIO) -> None:
        self.err = err
        self.requested = False
        self._announced = False

    def _handle(self, signum: int, frame: Any) -> None:
        if self.requested:
            raise KeyboardInterrupt
        self.requested = True

    def seen(self) -> bool:
        if self.requested and not self._announced:
            self._announced = True
            self.err.write("\nstopping (Ctrl-C again to abort)...\n")
        return self.requested

    def install(self) -> Any:
        if threading.current_thread() is not threading.main_thread():
            return None
        return signal.signal(signal.SIGINT, self._handle)


def _restore_interrupt(previous: Any) -> None:
    if previous is not None:
        signal.signal(signal.SIGINT, previous)


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return execute(args, out=sys.stdout, err=sys.stderr)
