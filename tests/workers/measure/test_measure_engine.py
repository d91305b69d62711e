"""The scripted engine's own behaviour: serial serving, early stops, its command line."""

from __future__ import annotations

import asyncio
import dataclasses

import pytest

from workers.measure import Api, RunSpec, measure, probe_sync, run_measurement
from workers.measure.scripted_engine import EngineConfig, _parser, run_in_thread, serve


def test_serial_engine_makes_later_requests_wait_for_a_slot(make_target):
    # One request at a time, like Ollama's default or llama.cpp --parallel 1: with three
    # sent together, the second waits for the first to finish, the third for both.
    ttft_ms, gap_ms, tokens = 10.0, 2.0, 10
    per_request_ms = ttft_ms + (tokens - 1) * gap_ms
    with run_in_thread(EngineConfig(ttft_ms=ttft_ms, gap_ms=gap_ms, max_concurrency=1)) as eng:
        target = make_target(eng.base_url, Api.OPENAI_COMPLETIONS)
        spec = RunSpec(requests=3, concurrency=3, max_tokens=tokens, ignore_eos=True,
                       server_metrics=False)  # fmt: skip
        result = measure(target=target, spec=spec)
    ttft = sorted(r.ttft_s * 1000 for r in result.measured)
    for position, measured in enumerate(ttft):
        assert measured == pytest.approx(ttft_ms + position * per_request_ms, abs=15.0)
    # Decode speed is unchanged: serial serving costs waiting time, not per-token time.
    assert all(r.tpot_s * 1000 == pytest.approx(gap_ms, abs=1.0) for r in result.measured)


def test_without_ignore_eos_outputs_stop_early_and_the_result_says_why(make_target):
    config = EngineConfig(ttft_ms=2.0, gap_ms=1.0, eos_after=5)
    with run_in_thread(config) as engine:
        forced = measure(target=make_target(engine.base_url, Api.OPENAI_CHAT),
                         spec=RunSpec(requests=2, max_tokens=12, ignore_eos=True,
                                      server_metrics=False))  # fmt: skip
        unable = measure(target=make_target(engine.base_url, Api.OPENAI_CHAT, ignore_eos=False),
                         spec=RunSpec(requests=2, max_tokens=12, ignore_eos=True,
                                      server_metrics=False))  # fmt: skip
    assert [r.output_tokens for r in forced.measured] == [12, 12]
    assert [r.finish_reason for r in forced.measured] == ["length", "length"]
    assert [r.output_tokens for r in unable.measured] == [5, 5]
    assert [r.finish_reason for r in unable.measured] == ["stop", "stop"]
    assert any("ignore end-of-sequence" in note for note in unable.notes)


def test_engine_runs_on_the_callers_loop_as_an_async_context_manager(make_target):
    async def run():
        async with serve(EngineConfig(ttft_ms=2.0, gap_ms=1.0)) as engine:
            target = make_target(engine.base_url, Api.OLLAMA_CHAT)
            spec = RunSpec(requests=2, max_tokens=3, server_metrics=False)
            return await run_measurement(target=target, spec=spec), engine.requests_seen

    result, seen = asyncio.run(run())
    assert [r.output_tokens for r in result.measured] == [3, 3]
    assert seen >= 2


def test_probe_sync_for_synchronous_callers():
    with run_in_thread(EngineConfig(flavor="vllm")) as engine:
        found = probe_sync(base_url=engine.base_url)
    assert found.engine == "vllm" and found.capabilities().tokenize == "vllm"


def test_config_survives_the_command_line_round_trip():
    config = EngineConfig(flavor="llamacpp", ttft_ms=12.5, max_concurrency=2, role_chunk=False,
                          fault="cut", fault_every=3, prefix_cache=True)  # fmt: skip
    args = _parser().parse_args(["--port", "0", *config.to_args()])
    again = EngineConfig(**{f.name: getattr(args, f.name) for f in dataclasses.fields(config)})
    assert again == config


def test_config_rejects_unknown_flavours_and_faults():
    with pytest.raises(ValueError, match="flavor"):
        EngineConfig(flavor="tgi")
    with pytest.raises(ValueError, match="fault"):
        EngineConfig(fault="meltdown")
