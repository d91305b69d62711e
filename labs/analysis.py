"""What a finished run measured against what the learner predicted and against the speed of light.

Plain data in and out, no Django: a run summary (``{"overall", "sweep_param", "steps"}``), the
lab's ``[[predict]]`` entries and the learner's numbers, and the target's hardware figures. The
charts draw; this module decides the numbers the results page states.

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
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from labs.charts import (
    as_number,
    decode_tokens_per_s,
    goodput_fraction,
    prefix_ratio,
    saturation_rate,
    stat,
    sweep_steps,
)

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
        from labs.checks import weight_bits

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
