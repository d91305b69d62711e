"""Prediction against measurement and efficiency against the speed of light, from run summaries
built with the measurement library's own summarize (the format a lab really stores)."""

from __future__ import annotations

import pytest

from labs import analysis
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


# --- analyses on known data -----------------------------------------------------------------


def test_linear_fit_recovers_an_exact_line_and_scores_noise_lower():
    slope, intercept, r2 = analysis.linear_fit(xs=[0, 1, 2, 3], ys=[1, 3, 5, 7])
    assert (slope, intercept, r2) == pytest.approx((2.0, 1.0, 1.0))
    slope, intercept, r2 = analysis.linear_fit(xs=[1, 2, 3, 4], ys=[2, 1, 4, 3])
    assert slope == pytest.approx(0.6)
    assert intercept == pytest.approx(1.0)
    assert r2 == pytest.approx(0.36)
    assert analysis.linear_fit(xs=[1, 2], ys=[5, 5]) == pytest.approx((0.0, 5.0, 1.0))


@pytest.mark.parametrize(("xs", "ys"), [([1], [1]), ([2, 2], [1, 3]), ([1, 2], [1])])
def test_linear_fit_refuses_what_is_not_a_line(xs, ys):
    with pytest.raises(ValueError):
        analysis.linear_fit(xs=xs, ys=ys)


def test_find_knee_on_a_saturating_batch():
    points = [(1, 100), (2, 195), (4, 380), (8, 720), (16, 1300), (32, 1450), (64, 1500)]
    knee = analysis.find_knee(points=points)
    assert knee is not None
    assert (knee.concurrency, knee.tokens_per_s) == (32, 1450)
    assert (knee.peak_concurrency, knee.peak_tokens_per_s) == (64, 1500)
    assert knee.before == (16, 1300)


def test_find_knee_is_none_while_scaling_and_at_the_lowest_level_when_the_engine_never_batched():
    scaling = [(1, 100), (2, 195), (4, 380), (8, 720)]
    assert analysis.find_knee(points=scaling) is None
    serial = [(1, 100), (2, 101), (4, 99), (8, 100)]
    knee = analysis.find_knee(points=serial)
    assert knee is not None and knee.concurrency == 1 and knee.before is None
    assert analysis.find_knee(points=[(4, 100)]) is None


def test_find_knee_reaches_90_percent_of_the_peak_on_noisy_data():
    points = [(1, 320), (2, 380), (4, 540), (8, 520), (16, 500)]
    knee = analysis.find_knee(points=points)
    assert knee is not None and knee.concurrency == 4
    assert knee.fraction_of_peak >= 0.9


def test_saturation_rate_is_the_first_rate_below_the_goodput_threshold():
    assert analysis.saturation_rate(points=[(60, 1.0), (30, 1.0), (120, 0.85), (240, 0.2)]) == 120
    assert analysis.saturation_rate(points=[(30, 0.95), (60, 0.91)]) is None
