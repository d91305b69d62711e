"""Odd framing real servers produce must not change what is measured."""

from __future__ import annotations

import pytest

from workers.measure import Api, RunSpec, measure
from workers.measure.scripted_engine import EngineConfig, run_in_thread

TTFT_MS, GAP_MS, TOKENS = 15.0, 4.0, 12
# Long enough that counting the trailing usage chunk as a token could not hide in load noise.
USAGE_DELAY_MS = 150.0


def _run(make_target, api: Api, **framing):
    config = EngineConfig(ttft_ms=TTFT_MS, gap_ms=GAP_MS, **framing)
    with run_in_thread(config) as engine:
        target = make_target(engine.base_url, api)
        spec = RunSpec(requests=2, max_tokens=TOKENS, prompt_tokens=8, ignore_eos=True,
                       server_metrics=False)  # fmt: skip
        return measure(target=target, spec=spec)


@pytest.mark.parametrize("api", list(Api))
@pytest.mark.parametrize(
    "framing",
    [
        {"split_events": True},
        {"empty_chunks": True},
        {"role_chunk": True, "usage_delay_ms": USAGE_DELAY_MS},
        {"split_events": True, "empty_chunks": True, "usage_delay_ms": USAGE_DELAY_MS},
    ],
    ids=["split-across-writes", "empty-content-chunks", "role-and-late-usage", "all-at-once"],
)
def test_framing_changes_nothing_measured(make_target, api, framing):
    result = _run(make_target, api, **framing)
    for r in result.measured:
        assert r.ok, r.error
        assert r.output_tokens == TOKENS and r.content_chunks == TOKENS
        # Never before the first token is due (a role-only chunk comes at once).
        assert r.ttft_s * 1000 >= TTFT_MS
        assert r.ttft_s * 1000 < TTFT_MS + 50
        assert r.tpot_s * 1000 == pytest.approx(GAP_MS, abs=2.0)
        # E2E ends at the last token, never at the trailing usage chunk.
        assert r.e2e_s * 1000 < TTFT_MS + (TOKENS - 1) * GAP_MS + USAGE_DELAY_MS / 2


@pytest.mark.parametrize("api", [Api.OPENAI_COMPLETIONS, Api.OLLAMA_CHAT])
def test_several_events_per_write_are_counted_one_by_one(make_target, api):
    result = _run(make_target, api, events_per_write=4)
    for r in result.measured:
        assert r.ok, r.error
        assert r.output_tokens == TOKENS and r.content_chunks == TOKENS
        # Tokens 1-4 arrive together (when the 4th is due), and so on: inside a write the
        # gaps are zero, between writes they are four token gaps.
        assert r.ttft_s * 1000 >= TTFT_MS + 3 * GAP_MS
        # One write lands in one read, so at least the nine gaps inside writes are zero.
        assert sum(1 for gap in r.itl_s if gap < 0.0005) >= 9
        # First to last token spans the two four-token steps between the three writes.
        assert (r.e2e_s - r.ttft_s) * 1000 == pytest.approx(8 * GAP_MS, abs=15.0)
