"""The one definition of each metric, shown in the UI glossary.

The measurement library (workers/measure) implements exactly these; the peers' names are listed
because the same words mean different things in different tools.
"""

from dataclasses import dataclass


@dataclass(frozen=True, kw_only=True)
class MetricDefinition:
    slug: str
    name: str
    definition: str
    unit: str
    vllm_bench: str
    guidellm: str
    llmperf: str


METRICS: tuple[MetricDefinition, ...] = (
    MetricDefinition(
        slug="ttft",
        name="Time to first token (TTFT)",
        definition=(
            "From the moment the request is sent to the first streamed chunk that carries "
            "non-empty generated text. A role-only or empty chunk does not count. Connection "
            "set-up is reported separately and never included."
        ),
        unit="seconds (shown in ms)",
        vllm_bench="TTFT",
        guidellm="time to first token (time_to_first_token_ms)",
        llmperf="ttft_s",
    ),
    MetricDefinition(
        slug="tpot",
        name="Time per output token (TPOT)",
        definition=(
            "(E2E − TTFT) / (output tokens − 1): the average decode step a request saw after "
            "its first token. Undefined for a one-token answer."
        ),
        unit="seconds per token (shown in ms)",
        vllm_bench="TPOT (excl. 1st token)",
        guidellm="inter-token latency (its 'time per output token' includes the first token)",
        llmperf="inter_token_latency_s is E2E / output tokens, so it includes TTFT",
    ),
    MetricDefinition(
        slug="itl",
        name="Inter-token latency (ITL)",
        definition=(
            "Each gap between two successive content chunks of one stream. Reported as a "
            "distribution over all gaps; a chunk that carries several tokens makes one gap."
        ),
        unit="seconds (shown in ms)",
        vllm_bench="ITL",
        guidellm="no per-gap distribution; its inter-token latency is a per-request mean",
        llmperf="no per-gap distribution",
    ),
    MetricDefinition(
        slug="e2e",
        name="End-to-end latency (E2E)",
        definition=(
            "From the request being sent to the last content chunk. A trailing chunk that "
            "carries only usage counts is not a token and does not extend E2E."
        ),
        unit="seconds",
        vllm_bench="E2EL",
        guidellm="request latency",
        llmperf="end_to_end_latency_s",
    ),
    MetricDefinition(
        slug="output-tokens",
        name="Output tokens",
        definition=(
            "The server's own count: usage.completion_tokens (OpenAI API, with "
            "stream_options.include_usage where accepted) or eval_count (Ollama). Where the "
            "server reports none, chunks are counted and the result says so."
        ),
        unit="tokens",
        vllm_bench="output_len (server usage, else re-tokenised text)",
        guidellm="output tokens (server usage where returned)",
        llmperf="number_output_tokens (re-tokenised text)",
    ),
    MetricDefinition(
        slug="queue-time",
        name="Queue time",
        definition=(
            "How long a request waited for a client concurrency slot before it was sent. "
            "Reported on its own so an overloaded client is never mistaken for a slow engine."
        ),
        unit="seconds",
        vllm_bench="not reported (server queue time is in vLLM's /metrics)",
        guidellm="request queued time",
        llmperf="not reported",
    ),
    MetricDefinition(
        slug="throughput",
        name="Throughput",
        definition=(
            "Output tokens per second and requests per second over the measured window, from "
            "the first measured request sent to the last one finished; warm-up requests are "
            "excluded."
        ),
        unit="tokens/s, requests/s",
        vllm_bench="Output token throughput, Request throughput",
        guidellm="output tokens per second, requests per second",
        llmperf="overall_output_throughput, num_completed_requests_per_min",
    ),
    MetricDefinition(
        slug="percentiles",
        name="Percentiles",
        definition=(
            "P50, P90, P95 and P99 of each metric, always shown with n, the number of samples. "
            "A P99 from fewer than 100 samples is an estimate of the worst few requests, not "
            "of the 99th percentile."
        ),
        unit="same as the metric",
        vllm_bench="mean, median, P99 (configurable)",
        guidellm="mean, median, P90, P95, P99 and more",
        llmperf="P25 to P99",
    ),
    MetricDefinition(
        slug="goodput",
        name="Goodput",
        definition=(
            "Requests per second that met every service-level objective set for the run "
            "(TTFT, TPOT, E2E). Errors and requests that missed an objective do not count."
        ),
        unit="requests/s",
        vllm_bench="Request goodput (with --goodput)",
        guidellm="not reported",
        llmperf="not reported",
    ),
)
