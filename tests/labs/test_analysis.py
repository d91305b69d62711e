"""Prediction against measurement and efficiency against the speed of light, from run summaries
built with the measurement library's own summarize (the format a lab really stores)."""

from __future__ import annotations

import pytest

from labs.analysis import efficiencies, measure_problem, measured_quantity, prediction_rows
from labs.checks import weight_bits
from tests.labs.test_checks import (
    concurrency_run,
    decode_run,
    output_length_run,
    prefix_run,
    quantization_run,
    rate_run,
)


def test_ratio_measures_read_the_last_step_over_the_first():
    summary = output_length_run()
    total = measured_quantity(measure="ratio:e2e_s:p50", summary=summary)
    ttft = measured_quantity(measure="ratio:ttft_s:p50", summary=summary)
    # 2,048 vs 128 tokens at 10 ms each after a 40 ms first token: (0.04 + 2047 × 0.01) / (0.04 + 127 × 0.01).
    assert total == pytest.approx(20.51 / 1.31, rel=0.06)
    assert ttft == pytest.approx(1.0, abs=0.08)
    aggregate = measured_quantity(measure="ratio:output_tokens_per_s:p50", summary=concurrency_run())
    assert aggregate > 10


def test_prediction_rows_put_the_learners_number_next_to_the_measured_one():
    predicts = [
        {"name": "total_ratio", "label": "total", "measure": "ratio:e2e_s:p50", "unit": "ratio"},
        {"name": "ttft_ratio", "label": "TTFT", "measure": "ratio:ttft_s:p50", "unit": "ratio"},
    ]
    rows = prediction_rows(predicts=predicts, predicted={"total_ratio": 16}, summary=output_length_run())
    total, ttft = rows
    assert total.predicted == 16 and total.ratio == pytest.approx(total.measured / 16)
    assert ttft.predicted is None and ttft.ratio is None and ttft.measured is not None


def test_other_measures():
    assert measured_quantity(measure="decode_tokens_per_s", summary=decode_run(tpot=0.01)) == pytest.approx(
        100, rel=0.05
    )
    assert measured_quantity(measure="prefix_ratio", summary=prefix_run(shared_ttft=0.1)) == pytest.approx(
        0.25, rel=0.1
    )
    speeds = {"tiny-f16": 100.0, "tiny-q8_0": 180.0, "tiny-q4_0": 250.0}
    assert measured_quantity(measure="bits_speedup", summary=quantization_run(speeds=speeds)) == pytest.approx(
        2.5, rel=0.05
    )
    assert measured_quantity(measure="saturation_rpm", summary=rate_run(capacity_rpm=100)) == 120


@pytest.mark.parametrize(
    ("measure", "problem"),
    [
        ("ratio:ttft_s:p50", None),
        ("ratio:ttft:p50", "a ratio is ratio:<metric>:<stat>"),
        ("speedup", "is not one of"),
        ("prefix_ratio:x", "takes no arguments"),
    ],
)
def test_measure_problems_are_named(measure, problem):
    found = measure_problem(measure)
    assert (found is None) if problem is None else (problem in found)


def test_efficiency_against_the_decode_and_prefill_bounds():
    summary = decode_run(tpot=0.01)  # 256 tokens per request at 10 ms, 50 ms to the first token
    rows = efficiencies(
        summary=summary,
        model_bytes={"tiny-q8": 2e9},
        default_model="tiny-q8",
        bandwidth_bytes_s=400e9,
        peak_flops=None,
        bits_of=weight_bits,
    )
    (decode,) = rows
    # 2 GB ÷ 400 GB/s = 5 ms per token against 10 ms measured: 50 % of the bound.
    assert decode.what == "decode" and decode.bound_s == pytest.approx(0.005)
    assert decode.percent == pytest.approx(50, rel=0.05)
    assert (
        efficiencies(
            summary=summary,
            model_bytes={},
            default_model="tiny-q8",
            bandwidth_bytes_s=400e9,
            peak_flops=None,
            bits_of=weight_bits,
        )
        == []
    )
