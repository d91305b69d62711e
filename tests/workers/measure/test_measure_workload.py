"""Prompt lengths: exact with a tokenize endpoint, calibrated without; unique openings."""

from __future__ import annotations

import asyncio
from dataclasses import replace

import pytest

from workers.measure import Api, RunSpec, measure
from workers.measure.scripted_engine import EngineConfig, count_tokens, run_in_thread
from workers.measure.workload import PromptFactory


def _local_factory(seed: int = 0) -> PromptFactory:
    async def count(text: str) -> int:
        return len(count_tokens(text))

    return PromptFactory(seed=seed, count=count, server_count=None)


@pytest.mark.parametrize("tokens", [8, 100, 1000, 3000])
def test_tokenize_gives_exact_lengths(tokens: int) -> None:
    async def build():
        factory = _local_factory()
        await factory.calibrate(chat=False)
        return [await factory.build(index=i, tokens=tokens) for i in range(5)]

    prompts = asyncio.run(build())
    assert [counted for _, counted in prompts] == [tokens] * 5
    assert all(len(count_tokens(text)) == tokens for text, _ in prompts)


def test_prompts_are_seeded_unique_per_request_and_share_only_the_asked_prefix() -> None:
    async def build(seed: int, shared: int):
        factory = _local_factory(seed)
        await factory.calibrate(chat=False)
        return [(await factory.build(index=i, tokens=300, shared_prefix_tokens=shared))[0] for i in range(3)]

    plain = asyncio.run(build(1, 0))
    assert plain == asyncio.run(build(1, 0))
    other_run = asyncio.run(build(2, 0))
    # Every prompt opens with its run's nonce: the same within a run, another in another run, so
    # no run's prompts share a first block (what a prefix cache keys on) with another run's.
    assert len({" ".join(p.split()[:2]) for p in plain}) == 1
    assert {p.split()[1] for p in plain}.isdisjoint({p.split()[1] for p in other_run})
    # No shared prefix: right after the nonce each request differs from the others.
    assert len({p.split()[3] for p in plain}) == 3
    shared = asyncio.run(build(1, 128))
    tokens = [count_tokens(p) for p in shared]
    assert tokens[0][:128] == tokens[1][:128] == tokens[2][:128]
    assert tokens[0][:140] != tokens[1][:140]


def test_without_tokenize_lengths_are_calibrated_from_server_usage(make_target) -> None:
    # The strict "openai" flavour has no /tokenize, rejects unknown fields, sends no usage.
    with run_in_thread(EngineConfig(flavor="openai", ttft_ms=1.0, gap_ms=1.0)) as engine:
        for api in (Api.OPENAI_COMPLETIONS, Api.OPENAI_CHAT):
            target = make_target(engine.base_url, api, include_usage=False, ignore_eos=False)
            spec = RunSpec(requests=4, prompt_tokens=500, max_tokens=2, server_metrics=False)
            result = measure(target=target, spec=spec)
            assert result.workload["prompt_length_method"] == "calibrated"
            assert result.workload["calibration_requests"] == 2
            for r in result.measured:
                assert r.ok, r.error
                assert r.prompt_tokens_source == "calibrated"
            # What the engine itself counted for the four measured requests.
            actual = [entry.prompt_tokens for entry in list(engine.log)[-4:]]
            assert all(abs(a - 500) <= 15 for a in actual), actual
            estimated = [r.prompt_tokens for r in result.measured]
            assert all(abs(e - a) <= 15 for e, a in zip(estimated, actual, strict=True))
            assert all(r.output_tokens_source == "chunks" for r in result.measured)


def test_chat_template_overhead_is_learned_so_totals_hit_the_target(make_target) -> None:
    with run_in_thread(EngineConfig(ttft_ms=1.0, gap_ms=1.0)) as engine:
        target = make_target(engine.base_url, Api.OPENAI_CHAT, tokenize="vllm")
        result = measure(
            target=target,
            spec=RunSpec(requests=3, prompt_tokens=256, max_tokens=2, server_metrics=False),
        )
    assert result.workload["template_overhead_tokens"] == 6
    assert [r.prompt_tokens for r in result.measured] == [256, 256, 256]


def test_a_repeated_seed_is_served_from_cache_and_a_fresh_one_shares_nothing(make_target) -> None:
    """The threat is real (the same prompts twice are a cached prefill), and the nonce removes it:
    neither the calibration request nor the warm-up leaves anything the measured requests hit."""
    config = EngineConfig(flavor="vllm", ttft_ms=2.0, ttft_per_prompt_token_ms=0.1, gap_ms=1.0, prefix_cache=True)
    with run_in_thread(config) as engine:
        target = make_target(engine.base_url, Api.OPENAI_CHAT, tokenize="vllm", metrics="vllm")
        spec = RunSpec(requests=4, prompt_tokens=512, max_tokens=2, warmup=1, seed=11)
        first = measure(target=target, spec=spec)
        repeat = measure(target=target, spec=spec)
        fresh = measure(target=target, spec=replace(spec, seed=12))
    assert first.workload["nonce"] != fresh.workload["nonce"]
    assert first.workload["nonce"] != first.workload["warmup_nonce"]
    assert first.summary["prefix_cache"]["beyond_template_tokens"] == 0
    assert repeat.summary["prefix_cache"]["hit_rate"] > 0.8
    assert repeat.summary["ttft_s"]["p50"] < 0.5 * first.summary["ttft_s"]["p50"]
    assert fresh.summary["prefix_cache"]["beyond_template_tokens"] == 0


def test_the_warm_up_never_warms_the_shared_prefix_and_llamacpp_caches_only_when_asked(make_target) -> None:
    config = EngineConfig(flavor="llamacpp", ttft_ms=2.0, gap_ms=1.0, prefix_cache=True)
    with run_in_thread(config) as engine:
        target = make_target(engine.base_url, tokenize="llamacpp", cache_prompt=True)
        spec = RunSpec(requests=3, prompt_tokens=300, shared_prefix_tokens=256, max_tokens=2, warmup=1, seed=3)
        cached = measure(target=target, spec=replace(spec, prompt_cache=True))
        uncached = measure(target=target, spec=replace(spec, seed=4))
    hits = [r.server["cached_prompt_tokens"] for r in cached.measured]
    # The first measured request computes the prefix (the warm-up had its own nonce); the others reuse it.
    assert hits[0] == 0 and all(h >= 240 for h in hits[1:]), hits
    assert [r.server["cached_prompt_tokens"] for r in uncached.measured] == [0, 0, 0]
    assert uncached.summary["prefix_cache"]["hit_rate"] == 0.0
