"""The local CPU engine end to end: build (or reuse) llama-server, serve a generated model.

Needs the binary: the first run builds it (5-9 minutes on 2 cores), later runs reuse the cache
and take seconds. A machine without cmake or a compiler fails here, loudly, by design: the
labs cannot run without this engine.
"""

import statistics
import time

import httpx
import pytest

from engines.check import (
    concurrent_streams,
    free_url,
    prompt_tokens,
    shared_prefix,
    stream_completion,
)
from engines.llamacpp.build import BuildError, ensure_llama_server
from engines.llamacpp.models import DEFAULT_MODEL, ensure_models
from engines.local import model_states, start_local_engines
from tests.core.test_run_command import _alive, _children_of

pytestmark = pytest.mark.slow

OTHER_MODEL = "prefill-60m-q4_0"
# Timing claims get this many tries: the CPU may be shared with other work.
ATTEMPTS = 3


@pytest.fixture(scope="module")
def engines(tmp_path_factory):
    try:
        ensure_llama_server()
    except BuildError as error:
        pytest.fail(f"llama-server is needed for the local labs and could not be built: {error}")
    ensure_models(sizes=("60m",), precisions=("f16", "q4_0"))
    # One thread per server: on a CPU shared with other jobs (CI runners, the other tests) two
    # spinning threads stall whenever one is descheduled (gaps of 100x the median measured
    # here), while one thread keeps gaps within 3x. Nothing asserted below depends on it.
    local = start_local_engines(
        serial_url=free_url(), batched_url=free_url(), sizes=("60m",),
        precisions=("f16", "q4_0"), threads=1, log_dir=tmp_path_factory.mktemp("engine-logs"),
    )
    yield local
    local.stop()


def test_both_targets_are_healthy_with_the_default_model_loaded(engines):
    for handle in engines.handles:
        assert httpx.get(f"{handle.url}/health", timeout=5).status_code == 200
        assert model_states(url=handle.url)[DEFAULT_MODEL] == "loaded"


def test_ignore_eos_streams_exactly_the_tokens_asked_with_usage_in_the_last_chunk(engines):
    for handle in engines.handles:
        result = stream_completion(url=handle.url, max_tokens=40,
                                   prompt=prompt_tokens(length=32, seed=time.time_ns()))
        assert result.output_tokens == 40
        assert result.usage["prompt_tokens"] == 32
        assert "usage" in result.final_chunk
        assert "timings" in result.final_chunk
        assert result.timings["predicted_n"] == 40


def test_no_held_back_tokens_and_regular_gaps(engines):
    """Every token arrives as its own chunk (no byte tokens) and no gap is a stall.

    A stall caused by the model (held-back bytes) recurs on every stream; one caused by another
    process taking the CPU does not, so timing claims get a few attempts.
    """
    ratios = []
    for _ in range(ATTEMPTS):
        result = stream_completion(url=engines.serial.url, max_tokens=120,
                                   prompt=prompt_tokens(length=16, seed=time.time_ns()))
        assert len(result.chunk_times) == result.output_tokens == 120
        assert "\ufffd" not in result.text
        ratios.append(max(result.gaps_s) / statistics.median(result.gaps_s))
        if ratios[-1] < 10:
            break
    assert min(ratios) < 10, f"max gap / median gap in every attempt: {ratios}"


def test_batched_target_beats_serial_on_four_concurrent_streams(engines):
    attempts = []
    for _ in range(ATTEMPTS):
        seed = time.time_ns() % 2**32
        serial = concurrent_streams(url=engines.serial.url, model=DEFAULT_MODEL, streams=4,
                                    prompt_length=32, max_tokens=48, seed=seed)
        batched = concurrent_streams(url=engines.batched.url, model=DEFAULT_MODEL, streams=4,
                                     prompt_length=32, max_tokens=48, seed=seed + 100)
        assert serial["output_tokens"] == batched["output_tokens"] == 4 * 48
        attempts.append((serial, batched))
        # One at a time, the last of four waits for the other three to finish; batched, all
        # four start together. Throughput gains less on two busy cores: a clean-clone CI here
        # measured 1.26-1.29x in all three attempts (last TTFT 7x sooner), so the bar is 1.2x.
        if (batched["tokens_per_s"] > 1.2 * serial["tokens_per_s"]
                and serial["ttft_ms"][-1] > 2 * batched["ttft_ms"][-1]):
            return
    pytest.fail(f"batched never beat serial clearly: {attempts}")


@pytest.mark.parametrize("target", ["serial", "batched"])
def test_shared_prefix_cuts_ttft(engines, target):
    url = getattr(engines, target).url
    attempts = []
    for _ in range(ATTEMPTS):
        result = shared_prefix(url=url, model=DEFAULT_MODEL, prefix_length=768, suffix_length=8,
                               max_tokens=4, seed=time.time_ns() % 2**32)
        # The server itself says the prefix came from the cache: only the suffix was computed.
        assert result["warm_server_prompt_tokens"] <= 16
        attempts.append(result)
        if result["warm_ttft_ms"] < 0.4 * result["cold_ttft_ms"]:
            return
    pytest.fail(f"a cached prefix did not cut TTFT: {attempts}")


def test_other_precisions_are_reached_by_model_name(engines):
    result = stream_completion(url=engines.batched.url, model=OTHER_MODEL, max_tokens=8,
                               prompt=prompt_tokens(length=8, seed=time.time_ns()))
    assert result.output_tokens == 8
    assert model_states(url=engines.batched.url)[OTHER_MODEL] == "loaded"


def test_stop_leaves_nothing_running(tmp_path):
    serial_url, batched_url = free_url(), free_url()
    local = start_local_engines(serial_url=serial_url, batched_url=batched_url,
                                sizes=("60m",), precisions=("f16",), log_dir=tmp_path)
    started = {handle.pid for handle in local.handles}
    for handle in local.handles:
        started |= _children_of(handle.pid)
    # Each router runs at least one model server of its own.
    assert len(started) >= 4
    local.stop()
    assert not [pid for pid in started if _alive(pid)]
    for url in (serial_url, batched_url):
        with pytest.raises(httpx.ConnectError):
            httpx.get(f"{url}/health", timeout=2)


REAL_MODEL = "smollm2-135m-instruct-q4_1"
QUESTION = [{"role": "user", "content": "What is the capital of France? One sentence."}]


def test_the_real_model_answers_in_english_and_stops_on_its_own(engines):
    """Chat turns use the model's own template (ChatML from its GGUF): the answer is English and
    ends with the model's end-of-sequence token long before max_tokens."""
    answer = httpx.post(f"{engines.serial.url}/v1/chat/completions", timeout=120, json={
        "model": REAL_MODEL, "messages": QUESTION, "max_tokens": 200, "temperature": 0,
    }).json()
    assert answer["choices"][0]["finish_reason"] == "stop"
    assert answer["usage"]["completion_tokens"] < 200
    assert "Paris" in answer["choices"][0]["message"]["content"]


def test_the_real_model_decodes_exactly_max_tokens_when_forced(engines):
    answer = httpx.post(f"{engines.batched.url}/v1/chat/completions", timeout=120, json={
        "model": REAL_MODEL, "messages": QUESTION, "max_tokens": 48, "temperature": 0, "ignore_eos": True,
    }).json()
    assert answer["choices"][0]["finish_reason"] == "length"
    assert answer["usage"]["completion_tokens"] == 48
