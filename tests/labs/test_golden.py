"""Golden tests of what a learner reads: for each of the 8 labs a recorded run (tests.labs.golden_runs:
known timings shaped like real engines, noisy and non-monotonic steps included) and the exact
findings, chart titles, units and summary text it produces. A change to any of them is a change
to what learners are told, and must be made here on purpose."""

from __future__ import annotations

import pytest

from labs import charts
from labs.analysis import measured_quantity
from labs.checks import evaluate
from tests.labs.golden_runs import BOUND_CPU, RUNS
from tests.labs.test_charts import parse, texts_of, title_of

P99_NOTE = ("small-sample", True, True, "P99 not meaningful (n < 100)")

GOLDEN = {
    "ttft-vs-output-length": {
        "findings": [
            ("ttft-flat", True, False, "TTFT stayed nearly flat as output length grew"),
            ("e2e-grows", True, False, "Total time grew with output length"),
            P99_NOTE,
        ],
        "details": {
            # The middle step's TTFT is 20 % high (noise); only the ends are compared, and say so.
            "ttft-flat": "P50 TTFT went 130 ms -> 128 ms (×0.98) from max_tokens=128 to max_tokens=2,048",
            # On a CPU TPOT grows with context, so total time grows ×28, more than the ×16 of lengths.
            "e2e-grows": "P50 end-to-end went 924 ms -> 26.2 s (×28)",
        },
        "chart_title": "TTFT ×0.98, end-to-end ×28 from 128 to 2,048 tokens",
        "chart_alt": "TTFT 130 ms, 163 ms, 128 ms; end-to-end 924 ms, 5.09 s, 26.2 s.",
        "measures": {"ratio:e2e_s:p50": 28.3},
    },
    "prompt-length-ttft": {
        "findings": [
            ("ttft-rises", True, False, "TTFT rose with prompt length"),
            ("tpot-flat", False, False, "Time per output token changed with prompt length"),
            P99_NOTE,
        ],
        "details": {
            "ttft-rises": "prefill at 1,076 tokens/s with no fixed cost visible",
            "tpot-flat": "(16: 5.16 ms, 256: 5.56 ms, 1,024: 12.5 ms, 2,048: 15.0 ms) varies by ×2.9",
        },
        "chart_title": "Prefill ≈ 1,076 tokens/s; TPOT on the right",
        "chart_alt": "fit: 1,076 prefill tokens/s, no fixed cost visible, r² = 0.98",
        "units": ["P50 TPOT (ms)"],
        "measures": {"ratio:tpot_s:p50": 2.9},
    },
    "decode-speed-of-light": {
        "findings": [
            ("decode-efficiency", True, False, "Decode reached 33% of the bandwidth bound"),
            P99_NOTE,
        ],
        "details": {"decode-efficiency": "Measured 159 tokens/s (P50 TPOT 6.27 ms) against a bound of 478 tokens/s"},
        "chart_title": "Decode at batch 1: 33% of the bandwidth bound",
        "chart_alt": "Measured decode speed 159 tok/s against a bandwidth bound of 478 tok/s: 33% efficiency.",
        "measures": {"decode_tokens_per_s": 159},
    },
    "batching-almost-free": {
        "findings": [
            ("aggregate-rises", True, False, "Aggregate throughput rose with concurrency"),
            ("tpot-slower-than-concurrency", True, False, "Each request slowed far less than the batch grew"),
            ("knee", True, False, "The knee is at about 4 concurrent requests"),
            P99_NOTE,
        ],
        "details": {
            "aggregate-rises": "143 tokens/s -> 335 tokens/s (×2.3) from concurrency 1 to 4, its peak,",
            "tpot-slower-than-concurrency": "From concurrency 1 to 4 (×4), P50 TPOT went 6.26 ms -> 11.2 ms (×1.8)",
            "knee": "while concurrency 2 reached 201 tokens/s (60%)",
        },
        "chart_title": "Batching pays until about 4 concurrent requests",
        "chart_alt": "aggregate 143 tok/s, 201 tok/s, 335 tok/s, 335 tok/s, 298 tok/s; knee at about 4.",
        "units": ["P50 TPOT per request (ms)", "aggregate output tokens/s", "knee ≈ 4"],
        "measures": {"ratio:output_tokens_per_s:p50": 2.09},
    },
    "continuous-batching": {
        "findings": [
            ("ttft-p95-under-load", False, False, "Requests waited behind others (head-of-line blocking)"),
            P99_NOTE,
        ],
        "details": {
            "ttft-p95-under-load": "P95 TTFT went 100 ms at concurrency=1 -> 5.37 s at concurrency=4 (×54)",
        },
        "chart_title": "P95 TTFT ×54 from the first to the last step",
        "chart_alt": "P95 TTFT 100 ms, 1.86 s, 5.37 s",
        "measures": {"ratio:ttft_s:p95": 53.7},
    },
    "prefix-caching": {
        "findings": [
            ("prefix-cache-speedup", True, False, "Cache hits cut TTFT by 76%"),
            P99_NOTE,
        ],
        "details": {"prefix-cache-speedup": "P50 TTFT 293 ms with a shared prefix against 1.20 s with unique prompts"},
        "chart_title": "TTFT with a shared prefix is ×0.24 of unique prompts",
        "chart_alt": "unique prompts: 1.20 s (P95 1.25 s); shared prefix: 293 ms (P95 315 ms).",
        "measures": {"prefix_ratio": 0.244},
    },
    "open-loop-slo": {
        "findings": [
            ("saturation", True, False, "Saturation at about 90 requests per minute"),
            P99_NOTE,
        ],
        "details": {"saturation": "Goodput fell below 90% at 90/min (55%) after 100% at 60/min"},
        "chart_title": "Saturates at about 90 requests per minute",
        "chart_alt": "goodput 100%, 100%, 55%, 20%; P95 TTFT 160 ms, 160 ms, 1.60 s, 4.49 s",
        "units": ["requests within the SLO (%)", "offered rate (requests per minute)"],
        "measures": {"saturation_rpm": 90},
    },
    "quantization": {
        "findings": [
            ("fewer-bits-faster", True, False, "Fewer bits decoded faster"),
            P99_NOTE,
        ],
        "details": {
            "fewer-bits-faster": "prefill-60m-q8_0 (8 bits): 375 tokens/s, P50 TTFT 318 ms",
        },
        "chart_title": "The same model at several precisions",
        "chart_alt": "prefill-60m-f16: 139 tok/s, TTFT 308 ms; prefill-60m-q8_0: 375 tok/s",
        "units": ["decode tokens/s per request (1 / P50 TPOT)", "P50 TTFT"],
        "measures": {"bits_speedup": 3.28},
    },
}


def test_every_lab_has_a_golden_run():
    assert set(GOLDEN) == set(RUNS) and len(RUNS) == 8


@pytest.mark.parametrize("slug", sorted(GOLDEN))
def test_what_the_learner_reads(slug):
    golden = GOLDEN[slug]
    summary = RUNS[slug]()
    findings = evaluate(lab_slug=slug, summary=summary, bound=BOUND_CPU)
    assert [(f.id, f.ok, f.note, f.title) for f in findings] == golden["findings"]
    details = {f.id: f.detail for f in findings}
    for finding_id, text in golden["details"].items():
        assert text in details[finding_id], details[finding_id]
    for detail in details.values():
        # Every number reaches the learner formatted: no missing value or raw float leaks through.
        assert "None" not in detail and "nan" not in detail.lower().split() and "e-0" not in detail
    root = parse(charts.main_chart_svg(lab_slug=slug, summary=summary, bound=BOUND_CPU))
    text = texts_of(root)
    assert golden["chart_title"] in text
    assert golden["chart_alt"] in title_of(root)
    for unit in golden.get("units", []):
        assert unit in text
    for measure, value in golden["measures"].items():
        assert measured_quantity(measure=measure, summary=summary) == pytest.approx(value, rel=0.02)
