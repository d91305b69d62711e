"""Capability probe: what a target is, what it serves and which optional fields it accepts.

Strict OpenAI-compatible servers answer 400 to fields they do not know
(``stream_options``, ``ignore_eos``), and engines differ in what they report, so before a run
the probe asks the target itself: models list, which APIs answer, whether a streamed request
with ``stream_options.include_usage`` is accepted and really yields a usage chunk, whether
``ignore_eos`` is accepted (never claimed for Ollama, which accepts it and ignores it), whether
``/tokenize`` works (and in which dialect), whether ``/metrics`` speaks vLLM or llama.cpp, and
the engine's version. Each check costs at most one tiny request; each failure is recorded,
never raised.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import asdict, dataclass, field
from typing import Any

import httpx

from workers.measure.protocols import Api, StreamParser
from workers.measure.spec import Capabilities, TargetSpec


@dataclass
class ProbeResult:
    base_url: str
    reachable: bool = False
    engine: str = "unknown"  # vllm | llamacpp | ollama | openai-compatible | unknown
    engine_version: str | None = None
    models: list[str] = field(default_factory=list)
    apis: list[str] = field(default_factory=list)
    include_usage: bool | None = None
    ignore_eos: bool | None = None
    tokenize: str | None = None
    metrics: str | None = None
    # Requests the engine runs at once, where it says (llama.cpp /props total_slots).
    server_slots: int | None = None
    errors: list[str] = field(default_factory=list)
    elapsed_s: float = 0.0

    def capabilities(self) -> Capabilities:
        return Capabilities(
            include_usage=bool(self.include_usage),
            ignore_eos=bool(self.ignore_eos),
            tokenize=self.tokenize,
            # llama.cpp's server drops back-to-back streams on reused keep-alive connections.
            fresh_connection_per_stream=self.engine == "llamacpp",
            metrics=self.metrics,
            # llama.cpp's server takes ``cache_prompt`` per request.
            cache_prompt=self.engine == "llamacpp",
        )

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


async def _get_json(http: httpx.AsyncClient, url: str) -> Any | None:
    try:
        response = await http.get(url)
        if response.status_code != 200:
            return None
        return response.json()
    except (httpx.HTTPError, ValueError):
        return None


async def _stream_check(
    http: httpx.AsyncClient, *, url: str, api: Api, body: dict[str, Any]
) -> tuple[int | None, bool, str | None]:
    """Send one tiny streamed request: (status, saw a usage chunk, error text)."""
    parser = StreamParser(api)
    saw_usage = False
    try:
        async with http.stream("POST", url, json=body) as response:
            if response.status_code != 200:
                text = (await response.aread()).decode("utf-8", "replace")[:300]
                return response.status_code, False, text
            async for raw in response.aiter_raw():
                for event in parser.feed(raw):
                    if event.tokens_source == "usage":
                        saw_usage = True
            for event in parser.close():
                if event.tokens_source == "usage":
                    saw_usage = True
            return 200, saw_usage, None
    except Exception as exc:  # the probe reports, it never raises
        return None, False, f"{type(exc).__name__}: {exc}"


async def probe(
    *,
    base_url: str,
    api_key: str | None = None,
    model: str | None = None,
    api: Api | str | None = None,
    timeout_s: float = 10.0,
    verify_tls: bool = True,
) -> ProbeResult:
    started = time.perf_counter()
    result = ProbeResult(base_url=base_url.rstrip("/"))
    unprobed_target = TargetSpec(
        base_url=base_url,
        api=Api(api or Api.OPENAI_COMPLETIONS),
        model=model or "probe",
        api_key=api_key,
        verify_tls=verify_tls,
    )
    headers = unprobed_target.request_headers()
    async with httpx.AsyncClient(timeout=timeout_s, headers=headers, verify=verify_tls) as http:
        url = unprobed_target.url
        models, tags, ollama_version, vllm_version, props, metrics = await asyncio.gather(
            _get_json(http, url("/v1/models")),
            _get_json(http, url("/api/tags")),
            _get_json(http, url("/api/version")),
            _get_json(http, url("/version")),
            _get_json(http, url("/props")),
            _metrics_dialect(http, url("/metrics")),
        )
        if isinstance(models, dict) and isinstance(models.get("data"), list):
            result.apis += [Api.OPENAI_CHAT.value, Api.OPENAI_COMPLETIONS.value]
            result.models += [m.get("id") for m in models["data"] if isinstance(m, dict)]
        if isinstance(tags, dict) and isinstance(tags.get("models"), list):
            result.apis += [Api.OLLAMA_GENERATE.value, Api.OLLAMA_CHAT.value]
            for m in tags["models"]:
                name = m.get("name") if isinstance(m, dict) else None
                if name and name not in result.models:
                    result.models.append(name)
        result.metrics = metrics
        if isinstance(ollama_version, dict) and ollama_version.get("version"):
            result.engine, result.engine_version = "ollama", str(ollama_version["version"])
        elif isinstance(props, dict) and ("build_info" in props or "total_slots" in props):
            result.engine = "llamacpp"
            result.engine_version = str(props.get("build_info") or "") or None
            slots = props.get("total_slots")
            result.server_slots = slots if isinstance(slots, int) and slots > 0 else None
        elif isinstance(vllm_version, dict) and vllm_version.get("version"):
            result.engine, result.engine_version = "vllm", str(vllm_version["version"])
        elif metrics == "vllm":
            result.engine = "vllm"
        elif result.apis:
            result.engine = "openai-compatible"
        result.reachable = bool(result.apis) or any(x is not None for x in (ollama_version, vllm_version, props))
        if not result.reachable:
            result.errors.append(await _reachability_error(http, url("/v1/models")))
            result.elapsed_s = time.perf_counter() - started
            return result
        chosen = model or (result.models[0] if result.models else None)
        if chosen is None:
            result.errors.append("the target lists no models; pass one explicitly")
        else:
            target = TargetSpec(
                base_url=base_url,
                api=unprobed_target.api,
                model=chosen,
                api_key=api_key,
                verify_tls=verify_tls,
            )
            result.tokenize = await _tokenize_dialect(http, target)
            if Api.OPENAI_COMPLETIONS.value in result.apis:
                await _check_openai_fields(http, target, result)
    result.elapsed_s = time.perf_counter() - started
    return result


async def _reachability_error(http: httpx.AsyncClient, url: str) -> str:
    try:
        response = await http.get(url)
    except httpx.HTTPError as exc:
        return f"unreachable: {type(exc).__name__}: {exc}"
    return f"{url} answered HTTP {response.status_code}; no known inference API found"


async def _metrics_dialect(http: httpx.AsyncClient, url: str) -> str | None:
    try:
        response = await http.get(url)
    except httpx.HTTPError:
        return None
    if response.status_code != 200:
        return None
    text = response.text
    if "vllm:" in text:
        return "vllm"
    if "llamacpp:" in text:
        return "llamacpp"
    return None


async def _tokenize_dialect(http: httpx.AsyncClient, target: TargetSpec) -> str | None:
    url = target.url("/tokenize")
    for dialect, body in (
        ("vllm", {"model": target.model, "prompt": "hello world"}),
        ("llamacpp", {"content": "hello world"}),
    ):
        try:
            response = await http.post(url, json=body)
            data = response.json() if response.status_code == 200 else None
        except (httpx.HTTPError, ValueError):
            return None
        if not isinstance(data, dict):
            continue
        if dialect == "vllm" and isinstance(data.get("count"), int) and data["count"] > 0:
            return "vllm"
        if dialect == "llamacpp" and isinstance(data.get("tokens"), list) and data["tokens"]:
            return "llamacpp"
    return None


async def _check_openai_fields(http: httpx.AsyncClient, target: TargetSpec, result: ProbeResult) -> None:
    """Does the target accept include_usage (and then send usage) and ignore_eos?"""
    api = Api.OPENAI_CHAT if target.api is Api.OPENAI_CHAT else Api.OPENAI_COMPLETIONS
    url = target.url(api.path)
    base: dict[str, Any] = {"model": target.model, "stream": True, "max_tokens": 2}
    if api is Api.OPENAI_CHAT:
        base["messages"] = [{"role": "user", "content": "hello"}]
    else:
        base["prompt"] = "hello"
    status, saw_usage, error = await _stream_check(
        http, url=url, api=api, body={**base, "stream_options": {"include_usage": True}}
    )
    if status == 200:
        result.include_usage = saw_usage
    elif status is not None and 400 <= status < 500:
        result.include_usage = False
    else:
        result.errors.append(f"include_usage check failed: {error}")
    if result.engine == "ollama":
        # Ollama's /v1 decodes a request into fixed structs and drops every field it does not
        # know, so it answers 200 to ignore_eos and still stops at end-of-sequence; a 200 proves
        # nothing there, and its native API has no such switch either.
        result.ignore_eos = False
        return
    status, _, error = await _stream_check(http, url=url, api=api, body={**base, "ignore_eos": True})
    if status == 200:
        result.ignore_eos = True
    elif status is not None and 400 <= status < 500:
        result.ignore_eos = False
    else:
        result.errors.append(f"ignore_eos check failed: {error}")


def probe_sync(**kwargs: Any) -> ProbeResult:
    """:func:`probe` for synchronous callers (admin actions, Celery tasks, scripts)."""
    return asyncio.run(probe(**kwargs))
