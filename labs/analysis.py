"""The analyses behind what a lab run's page says: plain data in, numbers and decisions out.

Charts (labs.charts) draw and findings (labs.checks) word; both take their numbers from here, so a
chart and a finding never disagree about, say, where the knee is. No Django: the input is a run
summary (``{"overall", "sweep_param", "steps"}``, each summary in the measurement library's
format), the lab's ``[[predict]]`` entries and the learner's numbers, and the target's hardware.

- sweep_steps / stat / decode_tokens_per_s / goodput_fraction: reading a summary;
- linear_fit, find_knee / concurrency_knee, saturation_rate, prefix_ratio: the labs' analyses;
- measured_quantity / prediction_rows: prediction against measurement;
- efficiencies: measured speed against the speed of light.

A lab's ``[[predict]]`` entry names one quantity the learner predicts and how it is measured:

- ``ratio:<metric>:<stat>``: the metric's statistic at the last step of the sweep over the first
  (``ratio:ttft_s:p50`` is P50 TTFT at the longest output over the shortest); ``<metric>`` may be
  ``output_tokens_per_s`` (aggregate), whose statistic is ignored;
- ``decode_tokens_per_s``: per-request decode speed, 1 / P50 TPOT, of the first step;
- ``prefix_ratio``: P50 TTFT with a shared prefix over P50 TTFT with unique prompts;
- ``saturation_rpm``: the lowest offered rate whose goodput falls under 90 %;
- ``bits_speedup``: decode tokens/s of the fewest-bits model over the most-bits one.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

# find_knee: the knee is the lowest concurrency whose aggregate output tokens/s reaches 90 % of
# the peak the sweep measured. Judged against the measured peak rather than step by step, one
# noisy step cannot move it far: a dip before the peak does not end the curve early, and a step
# that happens to come in high only becomes the knee if it really is within 10 % of the best.
KNEE_PEAK_FRACTION = 0.90

# The open-loop lab calls a rate saturated once fewer than 90 % of requests meet the SLO.
SATURATION_GOODPUT = 0.90


@dataclass(frozen=True, slots=True)
class StepView:
    """One step of a run: its key, the swept value (None without a sweep) and its summary."""

    key: str
    value: Any
    summary: Mapping[str, Any]


def sweep_steps(*, summary: Mapping[str, Any]) -> tuple[str | None, list[StepView]]:
    """The swept parameter and the steps in sweep order (numeric sweeps sorted by value).

    A run without steps (or stored before steps existed) is one step over the overall summary.
    """
    param = summary.get("sweep_param")
    raw = summary.get("steps") or []
    steps: list[StepView] = []
    for step in raw:
        params = step.get("params") or {}
        if param == "model":
            value = params.get("model") or step.get("model") or step.get("key")
        elif param is not None:
            value = params.get(param)
        else:
            value = None
        steps.append(StepView(key=str(step.get("key") or "run"), value=value, summary=step.get("summary") or {}))
    if not steps and summary.get("overall"):
        steps.append(StepView(key="run", value=None, summary=summary["overall"]))
    if steps and all(as_number(s.value) is not None for s in steps):
        steps.sort(key=lambda s: as_number(s.value) or 0.0)
    return param, steps


def stat(*, summary: Mapping[str, Any], metric: str, key: str = "p50") -> float | None:
    """One statistic of one metric (``stat(summary=s, metric="ttft_s", key="p95")``), or None."""
    block = summary.get(metric)
    if not isinstance(block, Mapping):
        return None
    value = block.get(key)
    return float(value) if isinstance(value, int | float) else None


def decode_tokens_per_s(*, summary: Mapping[str, Any]) -> float | None:
    """Per-request decode speed, 1 / P50 TPOT: what one user sees once tokens start flowing."""
    tpot = stat(summary=summary, metric="tpot_s")
    return 1.0 / tpot if tpot else None


def goodput_fraction(*, summary: Mapping[str, Any]) -> float | None:
    goodput = summary.get("goodput")
    if not isinstance(goodput, Mapping):
        return None
    fraction = goodput.get("fraction")
    return float(fraction) if isinstance(fraction, int | float) else None


def linear_fit(*, xs: Sequence[float], ys: Sequence[float]) -> tuple[float, float, float]:
    """Least-squares line through the points: (slope, intercept, r²).

    r² is 1.0 when the points lie exactly on the line (including a flat one).
    """
    if len(xs) != len(ys):
        raise ValueError(f"{len(xs)} x values but {len(ys)} y values")
    n = len(xs)
    if n < 2:
        raise ValueError("a line needs at least two points")
    mean_x = math.fsum(xs) / n
    mean_y = math.fsum(ys) / n
    sxx = math.fsum((x - mean_x) ** 2 for x in xs)
    if sxx == 0:
        raise ValueError("a line needs at least two different x values")
    sxy = math.fsum((x - mean_x) * (y - mean_y) for x, y in zip(xs, ys, strict=True))
    slope = sxy / sxx
    intercept = mean_y - slope * mean_x
    ss_res = math.fsum((y - (slope * x + intercept)) ** 2 for x, y in zip(xs, ys, strict=True))
    ss_tot = math.fsum((y - mean_y) ** 2 for y in ys)
    # A flat set of points has no variance to explain: a perfect fit of it still counts as 1.
    r2 = (1.0 if ss_res <= 1e-24 else 0.0) if ss_tot == 0 else 1.0 - ss_res / ss_tot
    return slope, intercept, r2


@dataclass(frozen=True, slots=True)
class Knee:
    """Where more concurrency stops paying, with the numbers that decided it.

    ``before`` is the step just below the knee (None when the knee is the lowest concurrency,
    i.e. concurrency never paid): the last one still under KNEE_PEAK_FRACTION of the peak.
    """

    concurrency: float
    tokens_per_s: float
    peak_concurrency: float
    peak_tokens_per_s: float
    before: tuple[float, float] | None

    @property
    def fraction_of_peak(self) -> float:
        return self.tokens_per_s / self.peak_tokens_per_s


def find_knee(*, points: Sequence[tuple[float, float]]) -> Knee | None:
    """The lowest concurrency whose aggregate throughput reaches KNEE_PEAK_FRACTION of the peak.

    ``points`` are (concurrency, aggregate output tokens/s). None with fewer than two distinct
    concurrencies, or when only the highest concurrency reaches the threshold: throughput was
    still rising where the sweep stopped, so the knee lies beyond it.
    """
    rows: dict[float, float] = {}
    for c, a in sorted(points):
        if c > 0 and a > 0:
            rows.setdefault(float(c), float(a))
    ordered = sorted(rows.items())
    if len(ordered) < 2:
        return None
    peak_c, peak_a = max(ordered, key=lambda row: (row[1], -row[0]))
    index = next(i for i, (_, a) in enumerate(ordered) if a >= KNEE_PEAK_FRACTION * peak_a)
    if index == len(ordered) - 1:
        return None
    c, a = ordered[index]
    return Knee(
        concurrency=c,
        tokens_per_s=a,
        peak_concurrency=peak_c,
        peak_tokens_per_s=peak_a,
        before=ordered[index - 1] if index > 0 else None,
    )


def saturation_rate(*, points: Sequence[tuple[float, float]], threshold: float = SATURATION_GOODPUT) -> float | None:
    """The lowest offered rate whose goodput fraction falls below ``threshold``.

    ``points`` are (offered rate, goodput fraction 0..1); None when every rate meets it.
    """
    for rate, fraction in sorted(points):
        if fraction < threshold:
            return rate
    return None


def record_step_key(*, record: Mapping[str, Any]) -> str:
    """A record's step, named like the run's steps: "max_tokens=128", or "run" without a sweep."""
    params = record.get("params") or {}
    if not params:
        return "run"
    return ", ".join(f"{name}={params[name]}" for name in sorted(params))


def concurrency_knee(*, steps: Sequence[StepView]) -> Knee | None:
    """find_knee over a concurrency sweep's steps (aggregate output tokens/s per level)."""
    rows = [(as_number(s.value), _float(s.summary.get("output_tokens_per_s"))) for s in steps]
    return find_knee(points=[(c, a) for c, a in rows if c and a])


def prefix_ratio(*, steps: Sequence[StepView]) -> float | None:
    """P50 TTFT with a shared prefix over P50 TTFT with unique prompts."""
    shared = [stat(summary=s.summary, metric="ttft_s") for s in steps if is_shared(s.value)]
    unique = [stat(summary=s.summary, metric="ttft_s") for s in steps if not is_shared(s.value)]
    if not shared or not unique or shared[0] is None or not unique[0]:
        return None
    return shared[0] / unique[0]


def is_shared(value: Any) -> bool:
    """Whether a shared_prefix step value means "with the shared prefix" (1, "1", True)."""
    number = as_number(value)
    return bool(number) if number is not None else bool(value)


def as_number(value: Any) -> float | None:
    """A step value as a finite float (ints, floats, numeric strings), else None."""
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, int | float):
        return float(value) if math.isfinite(value) else None
    if isinstance(value, str):
        try:
            number = float(value)
        except ValueError:
            return None
        return number if math.isfinite(number) else None
    return None


def _float(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


_BITS_PATTERNS: tuple[tuple[re.Pattern[str], int | None], ...] = (
    (re.compile(r"(?<![a-z0-9])(?:bf16|fp16|f16|float16|half)(?![0-9])"), 16),
    (re.compile(r"(?<![a-z0-9])(?:fp32|f32|float32)(?![0-9])"), 32),
    (re.compile(r"(?<![a-z0-9])(?:fp8|f8|e4m3|e5m2)(?![0-9])"), 8),
    (re.compile(r"(?<![a-z0-9])(?:mxfp4|nvfp4|nf4|fp4|awq|gptq)(?![0-9])"), 4),
    (re.compile(r"(?<![a-z0-9])(?:iq|q|int|i|w)(\d)(?:_[a-z0-9]+)*(?![0-9])"), None),
)


def weight_bits(*, name: str) -> int | None:
    """Bits per weight read from a model or quantization name (``q4_k_m`` -> 4), or None."""
    lowered = name.lower()
    for pattern, bits in _BITS_PATTERNS:
        match = pattern.search(lowered)
        if match:
            return bits if bits is not None else int(match.group(1))
    return None


MEASURES = ("ratio", "decode_tokens_per_s", "prefix_ratio", "saturation_rpm", "bits_speedup")
RATIO_METRICS = ("ttft_s", "tpot_s", "e2e_s", "itl_s", "output_tokens_per_s")
RATIO_STATS = ("p50", "p90", "p95", "p99", "mean")


def measure_problem(measure: str) -> str | None:
    """Why a ``[[predict]]`` measure is not understood, or None when it is (checked at sync)."""
    kind, _, rest = measure.partition(":")
    if kind not in MEASURES:
        return f"measure '{measure}' is not one of {', '.join(MEASURES)} (ratio as ratio:<metric>:<stat>)"
    if kind == "ratio":
        metric, _, statistic = rest.partition(":")
        if metric not in RATIO_METRICS or statistic not in RATIO_STATS:
            return (
                f"measure '{measure}': a ratio is ratio:<metric>:<stat> with metric one of "
                f"{', '.join(RATIO_METRICS)} and stat one of {', '.join(RATIO_STATS)}"
            )
    elif rest:
        return f"measure '{measure}' takes no arguments"
    return None


def measured_quantity(*, measure: str, summary: Mapping[str, Any]) -> float | None:
    """The quantity a ``[[predict]]`` measure names, from a run summary; None if not measurable."""
    _, steps = sweep_steps(summary=summary)
    kind, _, rest = measure.partition(":")
    if kind == "ratio":
        metric, _, statistic = rest.partition(":")

        def value(step_summary: Mapping[str, Any]) -> float | None:
            if metric == "output_tokens_per_s":
                raw = step_summary.get("output_tokens_per_s")
                return float(raw) if isinstance(raw, int | float) and raw > 0 else None
            return stat(summary=step_summary, metric=metric, key=statistic)

        known = [v for s in steps if (v := value(s.summary))]
        return known[-1] / known[0] if len(known) >= 2 else None
    if kind == "decode_tokens_per_s":
        return decode_tokens_per_s(summary=steps[0].summary) if steps else None
    if kind == "prefix_ratio":
        return prefix_ratio(steps=steps)
    if kind == "saturation_rpm":
        points = [
            (as_number(s.value) or 0.0, fraction)
            for s in steps
            if (fraction := goodput_fraction(summary=s.summary)) is not None
        ]
        return saturation_rate(points=points) if points else None
    if kind == "bits_speedup":
        rows = [
            (bits, speed)
            for s in steps
            if (bits := weight_bits(name=str(s.value))) and (speed := decode_tokens_per_s(summary=s.summary))
        ]
        if len({bits for bits, _ in rows}) < 2:
            return None
        fewest = min(rows, key=lambda row: row[0])
        most = max(rows, key=lambda row: row[0])
        return fewest[1] / most[1]
    return None


@dataclass(frozen=True, slots=True)
class PredictionRow:
    name: str
    label: str
    unit: str
    predicted: float | None
    measured: float | None

    @property
    def ratio(self) -> float | None:
        """Measured over predicted: 1.0 is a perfect prediction, 2.0 means twice what you said."""
        if self.predicted is None or self.measured is None or self.predicted == 0:
            return None
        return self.measured / self.predicted


def prediction_rows(
    *, predicts: Sequence[Mapping[str, Any]], predicted: Mapping[str, Any], summary: Mapping[str, Any]
) -> list[PredictionRow]:
    """One row per ``[[predict]]`` entry: the learner's number (None if they gave none) and the
    measured one (None when the run could not measure it)."""
    rows = []
    for entry in predicts:
        value = predicted.get(entry["name"])
        rows.append(
            PredictionRow(
                name=entry["name"],
                label=entry["label"],
                unit=entry.get("unit", ""),
                predicted=float(value) if isinstance(value, int | float) and math.isfinite(value) else None,
                measured=measured_quantity(measure=entry["measure"], summary=summary),
            )
        )
    return rows


@dataclass(frozen=True, slots=True)
class Efficiency:
    """A measured speed as a share of its speed-of-light bound, with what both were."""

    step: str
    what: str  # "decode" or "prefill"
    measured_s: float
    bound_s: float

    @property
    def percent(self) -> float:
        return 100.0 * self.bound_s / self.measured_s


def efficiencies(
    *,
    summary: Mapping[str, Any],
    model_bytes: Mapping[str, float],
    default_model: str,
    bandwidth_bytes_s: float | None,
    peak_flops: float | None,
    bits_of: Any,
) -> list[Efficiency]:
    """Per step, P50 TPOT against the decode bound (weights ÷ bandwidth) and, where the target's
    peak FLOP/s is known, P50 TTFT against the prefill bound (2 × parameters × prompt tokens ÷
    peak). Parameters are weight bytes × 8 ÷ bits per weight (read from the model name, 16 when
    it says nothing). A step whose model has no recorded size gets no row."""
    param, steps = sweep_steps(summary=summary)
    rows: list[Efficiency] = []
    for step in steps:
        model = str(step.value) if param == "model" else default_model
        weight_bytes = model_bytes.get(model)
        if not weight_bytes:
            continue
        tpot = stat(summary=step.summary, metric="tpot_s")
        if bandwidth_bytes_s and tpot:
            rows.append(
                Efficiency(step=step.key, what="decode", measured_s=tpot, bound_s=weight_bytes / bandwidth_bytes_s)
            )
        ttft = stat(summary=step.summary, metric="ttft_s")
        prompt = stat(summary=step.summary, metric="prompt_tokens")
        if peak_flops and ttft and prompt:
            parameters = float(weight_bytes) * 8 / (bits_of(name=model) or 16)
            rows.append(
                Efficiency(step=step.key, what="prefill", measured_s=ttft, bound_s=2 * parameters * prompt / peak_flops)
            )
    return rows
