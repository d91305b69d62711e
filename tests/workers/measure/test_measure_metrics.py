"""Metric definitions, summaries and the versioned result format."""

from __future__ import annotations

import json

import pytest

from workers.measure.metrics import (
    SLO,
    RequestRecord,
    describe,
    peak_concurrency,
    percentile,
    summarize,
    tpot,
)
from workers.measure.result import SCHEMA_VERSION, RunResult, SchemaVersionError


def _ok(index: int, *, send: float, ttft: float, e2e: float, tokens: int, **kw) -> RequestRecord:
    return RequestRecord(
        index=index,
        max_tokens=tokens,
        send_s=send,
        end_s=send + e2e,
        ttft_s=ttft,
        e2e_s=e2e,
        output_tokens=tokens,
        output_tokens_source="usage",
        tpot_s=tpot(e2e_s=e2e, ttft_s=ttft, output_tokens=tokens),
        itl_s=[(e2e - ttft) / (tokens - 1)] * (tokens - 1),
        **kw,
    )


def test_percentile_interpolates_linearly_like_numpy() -> None:
    values = [1.0, 2.0, 3.0, 4.0]
    assert percentile(values, 50) == pytest.approx(2.5)
    assert percentile(values, 90) == pytest.approx(3.7)
    assert percentile(values, 99) == pytest.approx(3.97)
    assert percentile([5.0], 99) == 5.0


def test_describe_reports_every_statistic_with_n() -> None:
    stats = describe([3.0, 1.0, 2.0, 4.0])
    assert stats == {
        "p50": 2.5,
        "p90": pytest.approx(3.7),
        "p95": pytest.approx(3.85),
        "p99": pytest.approx(3.97),
        "mean": 2.5,
        "std": pytest.approx(1.118034, rel=1e-6),
        "min": 1.0,
        "max": 4.0,
        "n": 4,
    }
    assert describe([]) is None


def test_tpot_excludes_first_token_and_needs_two() -> None:
    assert tpot(e2e_s=1.1, ttft_s=0.1, output_tokens=11) == pytest.approx(0.1)
    assert tpot(e2e_s=0.5, ttft_s=0.5, output_tokens=1) is None


def test_summary_throughput_over_measured_window_excludes_warmup_and_failures() -> None:
    records = [
        _ok(0, send=0.0, ttft=0.1, e2e=0.5, tokens=10, warmup=True),
        _ok(1, send=1.0, ttft=0.1, e2e=1.0, tokens=10),
        _ok(2, send=1.0, ttft=0.3, e2e=1.0, tokens=10),
        RequestRecord(
            index=3,
            max_tokens=10,
            send_s=1.5,
            end_s=1.6,
            error={"kind": "stream_cut", "message": "x", "status": None},
        ),
        RequestRecord(
            index=4,
            max_tokens=10,
            send_s=1.5,
            end_s=1.7,
            error={"kind": "cancelled", "message": "x", "status": None},
        ),
    ]
    s = summarize(records, window_start_s=1.0, slo=SLO(ttft_s=0.2))
    assert s["requests"] == {"total": 4, "succeeded": 2, "failed": 1, "cancelled": 1, "warmup": 1}
    assert s["duration_s"] == pytest.approx(1.0)
    assert s["output_tokens_total"] == 20
    assert s["output_tokens_per_s"] == pytest.approx(20.0)
    assert s["requests_per_s"] == pytest.approx(2.0)
    assert s["ttft_s"]["n"] == 2 and s["ttft_s"]["p50"] == pytest.approx(0.2)
    assert s["itl_s"]["n"] == 18
    assert s["errors_by_kind"] == {"stream_cut": 1}
    assert s["goodput"]["requests"] == 1
    assert s["goodput"]["fraction"] == pytest.approx(0.25)
    assert s["peak_concurrency"] == 4
    assert summarize(records, window_start_s=1.0, include_itl=False)["itl_s"] is None


def test_goodput_tpot_limit_does_not_fail_single_token_answers() -> None:
    one = _ok(0, send=0.0, ttft=0.1, e2e=0.1, tokens=2)
    one.tpot_s = None
    assert SLO(tpot_s=0.01).met_by(one)
    assert not SLO(e2e_s=0.05).met_by(one)


def test_peak_concurrency_back_to_back_requests_do_not_overlap() -> None:
    a = RequestRecord(index=0, max_tokens=1, send_s=0.0, end_s=1.0)
    b = RequestRecord(index=1, max_tokens=1, send_s=1.0, end_s=2.0)
    c = RequestRecord(index=2, max_tokens=1, send_s=0.5, end_s=1.5)
    assert peak_concurrency([a, b]) == 1
    assert peak_concurrency([a, b, c]) == 2


def test_result_round_trips_through_json_with_schema_version() -> None:
    record = _ok(0, send=0.0, ttft=0.1234567891, e2e=0.5, tokens=5)
    result = RunResult(
        status="succeeded",
        started_at="2025-01-01T00:00:00+00:00",
        finished_at="2025-01-01T00:00:01+00:00",
        target={"base_url": "http://x"},
        spec={},
        requests=[record],
        summary=summarize([record], window_start_s=0.0),
    )
    data = json.loads(result.to_json())
    assert data["schema_version"] == SCHEMA_VERSION
    assert set(data["requests"][0]) >= {
        "ttft_s",
        "tpot_s",
        "itl_s",
        "e2e_s",
        "queue_s",
        "output_tokens",
        "prompt_tokens",
        "error",
    }
    assert data["requests"][0]["ttft_s"] == pytest.approx(0.1234568)  # rounded to 0.1 us
    assert set(data["summary"]["ttft_s"]) == {
        "p50",
        "p90",
        "p95",
        "p99",
        "mean",
        "std",
        "min",
        "max",
        "n",
    }
    again = RunResult.from_json(result.to_json())
    assert again.requests[0].output_tokens == 5
    assert again.summary == data["summary"]
    with pytest.raises(SchemaVersionError):
        RunResult.from_dict({**data, "schema_version": SCHEMA_VERSION + 1})
