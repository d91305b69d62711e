"""Prompt lengths: exact with a tokenize endpoint, calibrated without; unique openings."""

from __future__ import annotations

import asyncio

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
    assert plain != asyncio.run(build(2, 0))
    # No shared prefix: requests differ from their very first word, so no cache can help.
    assert len({p.split()[:2][1] for p in plain}) == 3
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
