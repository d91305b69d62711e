"""The llama.cpp keep-alive pitfall: streams sent back to back on a reused connection were
dropped by the server ("Server disconnected"). No request may be lost or mis-timed.

The scripted engine reproduces it deterministically: it closes a kept-alive connection, with no
response, when a request arrives on it for the Nth time. Two defences are checked: a retry on a
new connection when nothing at all was received (the default), and a fresh connection per
stream (what the probe picks for llama.cpp), whose connect time stays out of TTFT.
"""

from __future__ import annotations

import pytest

from workers.measure import Api, RunSpec, measure
from workers.measure.scripted_engine import EngineConfig, run_in_thread

TTFT_MS, GAP_MS, TOKENS = 20.0, 3.0, 6


def _check_timed_right(result, requests: int) -> None:
    assert result.status == "succeeded"
    assert [r.index for r in result.measured] == list(range(requests))  # none lost
    for r in result.measured:
        assert r.ok, r.error
        assert r.output_tokens == TOKENS
        # TTFT runs from the write that the engine answered, not from a dropped attempt.
        assert 0 <= r.ttft_s * 1000 - TTFT_MS < 25.0
        assert r.tpot_s * 1000 == pytest.approx(GAP_MS, abs=2.0)


@pytest.mark.parametrize("drop_every", [1, 2])
def test_dropped_reused_connections_are_retried_and_timed_from_the_answered_attempt(make_target, drop_every):
    config = EngineConfig(ttft_ms=TTFT_MS, gap_ms=GAP_MS, drop_keepalive_every=drop_every)
    with run_in_thread(config) as engine:
        target = make_target(engine.base_url, Api.OPENAI_COMPLETIONS)
        spec = RunSpec(
            requests=24,
            concurrency=2,
            max_tokens=TOKENS,
            prompt_tokens=8,
            ignore_eos=True,
            server_metrics=False,
        )
        result = measure(target=target, spec=spec)
    _check_timed_right(result, 24)
    retried = [r for r in result.measured if r.retries]
    assert retried, "the engine dropped reused connections, so some requests were retried"
    for r in retried:
        assert r.warnings[0]["kind"] == "retried_before_first_byte"
        # The failed attempt took time between scheduling and the answered send.
        assert r.send_s > r.scheduled_s
    assert result.summary["retries"] == sum(r.retries for r in result.measured)


def test_fresh_connection_per_stream_never_hits_the_drop_and_keeps_connect_out_of_ttft(
    make_target,
):
    config = EngineConfig(ttft_ms=TTFT_MS, gap_ms=GAP_MS, drop_keepalive_every=1)
    with run_in_thread(config) as engine:
        target = make_target(engine.base_url, Api.OPENAI_CHAT, fresh_connection_per_stream=True)
        spec = RunSpec(
            requests=12,
            concurrency=3,
            max_tokens=TOKENS,
            prompt_tokens=8,
            ignore_eos=True,
            server_metrics=False,
        )
        result = measure(target=target, spec=spec)
    _check_timed_right(result, 12)
    assert all(r.retries == 0 for r in result.measured)
    assert result.connections["opened"] >= 12 and result.connections["reused"] == 0
    for r in result.measured:
        # Each request opened its own connection, and was sent only once it was open.
        assert r.connect_s is not None and r.connect_s > 0
        assert r.send_s - r.scheduled_s >= r.connect_s
    assert any("new connection" in note for note in result.notes)
