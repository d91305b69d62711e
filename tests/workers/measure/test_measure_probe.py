"""The capability probe and the /metrics scrape, against each engine flavour."""

from __future__ import annotations

import asyncio
import socket

import pytest

from workers.measure import Api, RunSpec, measure, probe
from workers.measure.scripted_engine import EngineConfig, run_in_thread
from workers.measure.server_metrics import parse_prometheus


@pytest.mark.parametrize(
    ("flavor", "engine", "tokenize", "metrics", "usage", "fresh"),
    [
        ("vllm", "vllm", "vllm", "vllm", True, False),
        ("llamacpp", "llamacpp", "llamacpp", "llamacpp", True, True),
        ("ollama", "ollama", None, None, True, False),
        ("openai", "openai-compatible", None, None, False, False),
    ],
)
def test_probe_finds_engine_and_capabilities(flavor, engine, tokenize, metrics, usage, fresh):
    with run_in_thread(EngineConfig(flavor=flavor, ttft_ms=1.0, gap_ms=1.0)) as server:
        found = asyncio.run(probe(base_url=server.base_url))
    assert found.reachable and not found.errors
    assert found.engine == engine
    assert found.models == ["scripted-model"]
    assert found.tokenize == tokenize
    assert found.metrics == metrics
    assert found.include_usage is usage
    # The strict server rejects both unknown fields; Ollama accepts ignore_eos and ignores it, so
    # the probe must not claim forced output lengths there.
    assert found.ignore_eos is (usage and flavor != "ollama")
    assert ("ollama-generate" in found.apis) is (flavor == "ollama")
    caps = found.capabilities()
    assert caps.ignore_eos is found.ignore_eos
    assert caps.fresh_connection_per_stream is fresh
    assert caps.include_usage is usage
    if engine != "openai-compatible":
        assert found.engine_version


def test_probe_of_nothing_listening_reports_instead_of_raising():
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()
    found = asyncio.run(probe(base_url=f"http://127.0.0.1:{port}", timeout_s=2))
    assert not found.reachable
    assert found.errors and "unreachable" in found.errors[0]


def test_prometheus_text_is_parsed_and_summed_over_labels():
    text = (
        "# HELP vllm:x help\n# TYPE vllm:x counter\n"
        'vllm:request_success_total{finished_reason="stop",model_name="m"} 3\n'
        'vllm:request_success_total{finished_reason="length",model_name="m"} 4.0\n'
        "llamacpp:requests_processing 2\n"
        "bad line\nvllm:nan_metric NaN\n"
    )
    assert parse_prometheus(text) == {
        "vllm:request_success_total": 7.0,
        "llamacpp:requests_processing": 2.0,
    }


def test_server_metrics_deltas_show_prefix_cache_hits_for_a_shared_prefix(make_target):
    config = EngineConfig(flavor="vllm", ttft_ms=2.0, ttft_per_prompt_token_ms=0.05, gap_ms=1.0, prefix_cache=True)
    with run_in_thread(config) as server:
        target = make_target(server.base_url, Api.OPENAI_COMPLETIONS, tokenize="vllm", metrics="vllm")
        shared = measure(
            target=target,
            spec=RunSpec(requests=6, prompt_tokens=600, shared_prefix_tokens=512, max_tokens=2),
        )
        unique = measure(target=target, spec=RunSpec(requests=6, prompt_tokens=600, max_tokens=2, seed=9))
    report = shared.server_metrics
    assert report["available"] and report["dialect"] == "vllm"
    assert report["deltas"]["prompt_tokens"] == 6 * 600
    assert report["derived"]["prefix_cache_hit_rate"] > 0.6
    assert unique.server_metrics["derived"]["prefix_cache_hit_rate"] == 0.0
    # A cached prefix skips most of the prefill, so TTFT drops.
    assert shared.summary["ttft_s"]["p50"] < unique.summary["ttft_s"]["p50"] - 0.015


def test_probe_reads_the_llamacpp_slot_count_and_no_other_engine_invents_one():
    with run_in_thread(EngineConfig(flavor="llamacpp", ttft_ms=1.0, gap_ms=1.0, max_concurrency=4)) as server:
        assert asyncio.run(probe(base_url=server.base_url)).server_slots == 4
    with run_in_thread(EngineConfig(flavor="vllm", ttft_ms=1.0, gap_ms=1.0, max_concurrency=4)) as server:
        assert asyncio.run(probe(base_url=server.base_url)).server_slots is None
