"""A scripted inference engine: real HTTP, known timings, optional faults.

It speaks the same wire formats as vLLM, llama.cpp and Ollama (OpenAI SSE on ``/v1/...``,
Ollama NDJSON on ``/api/...``, plus ``/v1/models``, ``/tokenize``, ``/metrics``) but instead of
running a model it emits tokens on a schedule: the first token ``ttft_ms +
ttft_per_prompt_token_ms * prompt_tokens`` after the request arrived (or after it got a slot,
when ``max_concurrency`` is set), then one every ``gap_ms``. Tests and benchmarks compare what
the measurement client reports against that schedule, and the labs can use it to show TTFT
rising with prompt length without a GPU.

Every token's due time is computed from the request's start, never from the previous write,
so the schedule does not drift when the event loop is late once.

It is built on raw asyncio streams (no web framework) so that it stays cheap at hundreds of
concurrent streams. Run it in-process (``async with serve(config)`` or
``with run_in_thread(config)``) or as a subprocess::

    python -m workers.measure.scripted_engine --port 8099 --ttft-ms 40 --gap-ms 10
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import json
import math
import os
import selectors
import subprocess
import sys
import threading
import time
import zlib
from collections import deque
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass
from typing import Any

FLAVORS = ("all", "vllm", "llamacpp", "ollama", "openai")
FAULTS = (
    "http_error",  # 4xx/5xx with an error body
    "slow_headers",  # response headers only after slow_headers_ms
    "cut",  # connection closed mid-stream (incomplete chunked body)
    "truncate",  # body ends cleanly but without [DONE] / done:true
    "stall",  # stops sending mid-stream, connection left open
    "endless",  # ignores max_tokens and never stops
    "malformed",  # a line that is not JSON in the middle of the stream
    "error_event",  # an error object inside the stream, then the end (vLLM style)
    "no_usage",  # no usage chunk even when stream_options.include_usage asks for it
    "drop",  # the connection is closed as soon as the request arrives, no response at all
)

_WORDS = (
    "the",
    "model",
    "streams",
    "tokens",
    "while",
    "decode",
    "reads",
    "every",
    "weight",
    "once",
    "per",
    "step",
    "so",
    "memory",
    "bandwidth",
    "sets",
    "the",
    "pace",
)


@dataclass
class EngineConfig:
    """How the engine behaves. Field names double as ``--kebab-case`` command-line flags."""

    model: str = "scripted-model"
    flavor: str = "all"
    ttft_ms: float = 50.0
    ttft_per_prompt_token_ms: float = 0.0
    gap_ms: float = 10.0
    # None: unlimited. 1 mimics an engine that serves one request at a time (Ollama's default,
    # llama.cpp --parallel 1): later requests wait for a slot before their prefill starts.
    max_concurrency: int | None = None
    # Without ignore_eos/min_tokens the scripted "model" stops after this many tokens.
    eos_after: int | None = None
    # Framing quirks real servers exhibit.
    role_chunk: bool = True
    empty_chunks: bool = False
    split_events: bool = False
    events_per_write: int = 1
    usage_delay_ms: float = 0.0
    strict: bool = False
    prefix_cache: bool = False
    # Faults, applied to every ``fault_every``-th generation request (1 = all of them).
    fault: str | None = None
    fault_every: int = 1
    fault_after_tokens: int = 3
    error_status: int = 500
    error_message: str = "scripted engine failure"
    slow_headers_ms: float = 5000.0
    # Close a keep-alive connection when a request arrives on it for the Nth time (0: never),
    # as llama.cpp's server was seen to do with back-to-back streamed requests.
    drop_keepalive_every: int = 0

    def __post_init__(self) -> None:
        if self.flavor not in FLAVORS:
            raise ValueError(f"flavor must be one of {FLAVORS}")
        if self.fault is not None and self.fault not in FAULTS:
            raise ValueError(f"fault must be one of {FAULTS}")
        if self.events_per_write < 1 or self.fault_every < 1:
            raise ValueError("events_per_write and fault_every must be at least 1")
        if self.flavor == "openai":
            self.strict = True

    def ttft_s(self, prompt_tokens: int) -> float:
        return (self.ttft_ms + self.ttft_per_prompt_token_ms * prompt_tokens) / 1000.0

    def to_args(self) -> list[str]:
        """Command-line flags reproducing this configuration in a subprocess."""
        args: list[str] = []
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if value == f.default:
                continue
            flag = "--" + f.name.replace("_", "-")
            if isinstance(value, bool):
                args.append(flag if value else "--no-" + f.name.replace("_", "-"))
            else:
                args.extend([flag, str(value)])
        return args


def token_count(text: str) -> int:
    """``len(count_tokens(text))`` without building the ids (the hot path per request)."""
    return sum((len(word) + 3) // 4 for word in text.split())


def count_tokens(text: str) -> list[int]:
    """The scripted tokenizer: each word is ``ceil(len/4)`` tokens, ids from a stable hash.

    Word-dependent lengths make prompt-length calibration a real search, as with a real
    subword tokenizer, while staying deterministic and free.
    """
    ids: list[int] = []
    for word in text.split():
        pieces = max(1, math.ceil(len(word) / 4))
        for i in range(pieces):
            ids.append(zlib.crc32(word[i * 4 : i * 4 + 4].encode()) % 32000)
    return ids


CHAT_TOKENS_PER_MESSAGE = 4
CHAT_TOKENS_FIXED = 2
PREFIX_BLOCK = 16


@dataclass
class _Counters:
    running: int = 0
    waiting: int = 0
    prompt_tokens: int = 0
    generation_tokens: int = 0
    success: int = 0
    prefix_queries: int = 0
    prefix_hits: int = 0
    queue_time_sum: float = 0.0
    queue_time_count: int = 0
    prompt_seconds: float = 0.0
    predicted_seconds: float = 0.0


@dataclass
class RequestLog:
    """When the engine actually did things, on the shared monotonic clock (perf_counter_ns)."""

    request_id: str
    received_ns: int
    prompt_tokens: int
    scheduled_ttft_s: float
    first_token_ns: int = 0
    last_token_ns: int = 0
    tokens: int = 0


class _Request:
    __slots__ = ("body", "headers", "method", "path", "reader")

    def __init__(
        self,
        method: str,
        path: str,
        headers: dict[str, str],
        body: bytes,
        reader: asyncio.StreamReader,
    ) -> None:
        self.reader = reader
        self.method = method
        self.path = path
        self.headers = headers
        self.body = body


class ClientGone(Exception):
    pass


class _ArrivalProtocol(asyncio.StreamReaderProtocol):
    """Stamps when the first byte of each request arrived, in ``data_received``.

    Stamping in the handler instead would start a request's schedule late whenever the loop
    is busy with other requests, and the scripted truth would no longer be the truth.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._arrived_ns: int | None = None

    def data_received(self, data: bytes) -> None:
        if self._arrived_ns is None:
            self._arrived_ns = time.perf_counter_ns()
        super().data_received(data)

    def take_arrival(self) -> int:
        """The current request's arrival; the next bytes will stamp the next request."""
        arrived = self._arrived_ns if self._arrived_ns is not None else time.perf_counter_ns()
        self._arrived_ns = None
        return arrived


_REASONS = {
    200: "OK",
    400: "Bad Request",
    404: "Not Found",
    405: "Method Not Allowed",
    408: "Request Timeout",
    411: "Length Required",
    413: "Payload Too Large",
    429: "Too Many Requests",
    500: "Internal Server Error",
    503: "Service Unavailable",
}

_OPENAI_FIELDS = {
    "model",
    "prompt",
    "messages",
    "max_tokens",
    "max_completion_tokens",
    "stream",
    "temperature",
    "top_p",
    "n",
    "stop",
    "seed",
    "presence_penalty",
    "frequency_penalty",
    "logprobs",
    "user",
}


class ScriptedEngine:
    """One engine instance; ``start()`` binds a port, ``close()`` stops it."""

    def __init__(self, config: EngineConfig | None = None) -> None:
        self.config = config or EngineConfig()
        self.counters = _Counters()
        self.log: deque[RequestLog] = deque(maxlen=100_000)
        self.requests_seen = 0
        self._generation_count = 0
        self._server: asyncio.Server | None = None
        self._slots: asyncio.Semaphore | None = None
        self._prefix_blocks: set[int] = set()
        self._created = int(time.time())
        self._writers: set[asyncio.StreamWriter] = set()
        self.host = "127.0.0.1"
        self.port = 0

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}"

    async def start(self, *, host: str = "127.0.0.1", port: int = 0) -> None:
        if self.config.max_concurrency:
            self._slots = asyncio.Semaphore(self.config.max_concurrency)
        loop = asyncio.get_running_loop()

        def protocol() -> _ArrivalProtocol:
            reader = asyncio.StreamReader(limit=1 << 20, loop=loop)
            return _ArrivalProtocol(reader, self._handle_connection, loop=loop)

        self._server = await loop.create_server(protocol, host, port, backlog=1024)
        sock = self._server.sockets[0]
        self.host, self.port = sock.getsockname()[:2]

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
            for writer in list(self._writers):
                writer.transport.abort()
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._server.wait_closed(), 2)
            self._server = None

    # -- connection handling -------------------------------------------------------------------

    async def _handle_connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._writers.add(writer)
        served = 0
        try:
            while True:
                try:
                    head = await reader.readuntil(b"\r\n\r\n")
                except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, ConnectionError):
                    return
                served += 1
                drop_every = self.config.drop_keepalive_every
                if served > 1 and drop_every and (served - 1) % drop_every == 0:
                    # The request is read and then the connection closed with no response.
                    writer.transport.abort()
                    return
                request = await self._read_request(head, reader, writer)
                if request is None:
                    return
                # Taken once the body is read too, so its bytes cannot stamp the next request.
                arrival = writer.transport.get_protocol()
                assert isinstance(arrival, _ArrivalProtocol)
                received_ns = arrival.take_arrival()
                keep_alive = request.headers.get("connection", "").lower() != "close"
                open_after = await self._route(request, writer, received_ns=received_ns)
                if not (keep_alive and open_after):
                    return
        except (ClientGone, ConnectionError):
            return
        finally:
            self._writers.discard(writer)
            writer.close()

    async def _read_request(
        self, head: bytes, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> _Request | None:
        lines = head.decode("latin-1").split("\r\n")
        parts = lines[0].split(" ")
        if len(parts) != 3:
            self._send_json(writer, 400, {"error": "bad request line"}, keep_alive=False)
            return None
        method, target, _version = parts
        headers: dict[str, str] = {}
        for line in lines[1:]:
            if not line:
                continue
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
        if headers.get("transfer-encoding", "").lower() == "chunked":
            self._send_json(writer, 411, {"error": "send Content-Length"}, keep_alive=False)
            return None
        length = int(headers.get("content-length", "0") or 0)
        try:
            body = await reader.readexactly(length) if length else b""
        except asyncio.IncompleteReadError:
            return None
        self.requests_seen += 1
        return _Request(method, target.split("?", 1)[0], headers, body, reader)

    async def _route(self, request: _Request, writer: asyncio.StreamWriter, *, received_ns: int) -> bool:
        flavor = self.config.flavor
        path, method = request.path, request.method
        openai_ok = flavor != "ollama" or path.startswith("/v1/")
        ollama_ok = flavor in ("all", "ollama")
        generation = {
            "/v1/completions": ("openai", False),
            "/v1/chat/completions": ("openai", True),
            "/api/generate": ("ollama", False),
            "/api/chat": ("ollama", True),
        }
        if path in generation and method == "POST":
            family, chat = generation[path]
            if (family == "openai" and openai_ok) or (family == "ollama" and ollama_ok):
                return await self._generate(request, writer, family, chat, received_ns)
        if method == "GET" and path == "/v1/models" and openai_ok:
            data = [
                {
                    "id": self.config.model,
                    "object": "model",
                    "owned_by": "scripted",
                    "created": self._created,
                }
            ]
            return self._send_json(writer, 200, {"object": "list", "data": data})
        if method == "GET" and path == "/api/tags" and ollama_ok:
            return self._send_json(writer, 200, {"models": [{"name": self.config.model, "model": self.config.model}]})
        if method == "GET" and path == "/api/version" and ollama_ok:
            return self._send_json(writer, 200, {"version": "0.0.0-scripted"})
        if method == "GET" and path == "/version" and flavor in ("all", "vllm"):
            return self._send_json(writer, 200, {"version": "0.0.0-scripted"})
        if method == "GET" and path == "/props" and flavor == "llamacpp":
            props = {
                "build_info": "b0-scripted",
                "model_path": self.config.model,
                "total_slots": self.config.max_concurrency or 1,
            }
            return self._send_json(writer, 200, props)
        if method == "GET" and path == "/health":
            return self._send_json(writer, 200, {"status": "ok"})
        if method == "POST" and path == "/tokenize" and flavor in ("all", "vllm", "llamacpp"):
            return self._tokenize(request, writer)
        if method == "GET" and path == "/metrics" and flavor in ("all", "vllm", "llamacpp"):
            return self._send_text(writer, 200, self._metrics_text(), "text/plain; version=0.0.4")
        if method == "GET" and path == "/scripted/log":
            entries = [dataclasses.asdict(entry) for entry in self.log]
            self.log.clear()
            return self._send_json(writer, 200, {"requests": entries})
        return self._send_json(writer, 404, {"error": {"message": f"no route {method} {path}", "code": 404}})

    # -- plain responses -----------------------------------------------------------------------

    def _send(
        self,
        writer: asyncio.StreamWriter,
        status: int,
        body: bytes,
        content_type: str,
        *,
        keep_alive: bool = True,
    ) -> bool:
        head = (
            f"HTTP/1.1 {status} {_REASONS.get(status, 'Status')}\r\n"
            f"content-type: {content_type}\r\ncontent-length: {len(body)}\r\n"
            f"connection: {'keep-alive' if keep_alive else 'close'}\r\n\r\n"
        ).encode()
        writer.write(head + body)
        return keep_alive

    def _send_json(self, writer: asyncio.StreamWriter, status: int, obj: Any, *, keep_alive: bool = True) -> bool:
        return self._send(writer, status, json.dumps(obj).encode(), "application/json", keep_alive=keep_alive)

    def _send_text(self, writer: asyncio.StreamWriter, status: int, text: str, ctype: str) -> bool:
        return self._send(writer, status, text.encode(), ctype)

    def _tokenize(self, request: _Request, writer: asyncio.StreamWriter) -> bool:
        try:
            body = json.loads(request.body or b"{}")
        except ValueError:
            return self._send_json(writer, 400, {"error": {"message": "body is not JSON"}})
        if "messages" in body:
            tokens = self._chat_prompt_tokens(body["messages"])
        else:
            text = body.get("prompt", body.get("content", ""))
            tokens = count_tokens(text if isinstance(text, str) else "")
        if self.config.flavor == "llamacpp":
            return self._send_json(writer, 200, {"tokens": tokens})
        return self._send_json(writer, 200, {"count": len(tokens), "max_model_len": 131072, "tokens": tokens})

    def _chat_prompt_tokens(self, messages: Any) -> list[int]:
        tokens = [1] * CHAT_TOKENS_FIXED
        for message in messages if isinstance(messages, list) else []:
            content = message.get("content", "") if isinstance(message, dict) else ""
            tokens += [2] * CHAT_TOKENS_PER_MESSAGE
            tokens += count_tokens(content if isinstance(content, str) else "")
        return tokens

    def _metrics_text(self) -> str:
        c = self.counters
        model = self.config.model
        if self.config.flavor == "llamacpp":
            rows = [
                ("llamacpp:prompt_tokens_total", "counter", c.prompt_tokens),
                ("llamacpp:prompt_seconds_total", "counter", c.prompt_seconds),
                ("llamacpp:tokens_predicted_total", "counter", c.generation_tokens),
                ("llamacpp:tokens_predicted_seconds_total", "counter", c.predicted_seconds),
                ("llamacpp:requests_processing", "gauge", c.running),
                ("llamacpp:requests_deferred", "gauge", c.waiting),
            ]
            return "".join(f"# TYPE {n} {t}\n{n} {v}\n" for n, t, v in rows)
        label = f'{{model_name="{model}"}}'
        rows = [
            ("vllm:num_requests_running", "gauge", c.running),
            ("vllm:num_requests_waiting", "gauge", c.waiting),
            ("vllm:prompt_tokens_total", "counter", c.prompt_tokens),
            ("vllm:generation_tokens_total", "counter", c.generation_tokens),
            ("vllm:request_success_total", "counter", c.success),
            ("vllm:prefix_cache_queries_total", "counter", c.prefix_queries),
            ("vllm:prefix_cache_hits_total", "counter", c.prefix_hits),
            ("vllm:request_queue_time_seconds_sum", "histogram", c.queue_time_sum),
            ("vllm:request_queue_time_seconds_count", "histogram", c.queue_time_count),
        ]
        return "".join(f"# TYPE {n} {t}\n{n}{label} {v}\n" for n, t, v in rows)

    # -- generation ----------------------------------------------------------------------------

    def _strict_reject(self, body: dict[str, Any]) -> str | None:
        unknown = sorted(set(body) - _OPENAI_FIELDS)
        return f"Unrecognized request argument supplied: {unknown[0]}" if unknown else None

    def _cached_tokens(self, tokens: list[int]) -> int:
        """Length of the longest block-aligned prefix seen before (a prefix-cache hit)."""
        hits = 0
        chain = 0
        still_hitting = True
        new_blocks = []
        for start in range(0, len(tokens) - PREFIX_BLOCK + 1, PREFIX_BLOCK):
            chain = zlib.crc32(bytes(str(tokens[start : start + PREFIX_BLOCK]), "ascii"), chain)
            if still_hitting and chain in self._prefix_blocks:
                hits += PREFIX_BLOCK
            else:
                still_hitting = False
                new_blocks.append(chain)
        if len(self._prefix_blocks) > 200_000:
            self._prefix_blocks.clear()
        self._prefix_blocks.update(new_blocks)
        return hits

    async def _generate(
        self,
        request: _Request,
        writer: asyncio.StreamWriter,
        family: str,
        chat: bool,
        received_ns: int,
    ) -> bool:
        cfg = self.config
        ollama = family == "ollama"
        try:
            body = json.loads(request.body or b"{}")
            if not isinstance(body, dict):
                raise ValueError("not an object")
        except ValueError:
            return self._error(writer, 400, "request body is not a JSON object", ollama)
        if not ollama and cfg.strict and (reason := self._strict_reject(body)):
            return self._error(writer, 400, reason, ollama)
        if body.get("model") not in (cfg.model, None):
            return self._error(writer, 404, f"model '{body.get('model')}' not found", ollama)

        self._generation_count += 1
        fault = cfg.fault if cfg.fault and self._generation_count % cfg.fault_every == 0 else None
        if fault == "drop":
            writer.transport.abort()
            return False
        if fault == "http_error":
            return self._error(writer, cfg.error_status, cfg.error_message, ollama)
        if fault == "slow_headers":
            await asyncio.sleep(cfg.slow_headers_ms / 1000.0)

        if chat:
            texts = [m.get("content") for m in body.get("messages") or [] if isinstance(m, dict)]
            chat_overhead = CHAT_TOKENS_FIXED + CHAT_TOKENS_PER_MESSAGE * len(texts)
        else:
            texts, chat_overhead = [body.get("prompt", "")], 0
        texts = [t if isinstance(t, str) else "" for t in texts]
        prompt_tokens = chat_overhead + sum(token_count(t) for t in texts)
        if ollama:
            max_tokens = int((body.get("options") or {}).get("num_predict", 128))
            forced = False
        else:
            max_tokens = int(body.get("max_tokens") or body.get("max_completion_tokens") or 16)
            # Real Ollama's /v1 accepts ignore_eos and min_tokens and ignores them.
            forced = cfg.flavor != "ollama" and (
                bool(body.get("ignore_eos")) or int(body.get("min_tokens") or 0) >= max_tokens
            )
        n_tokens = max_tokens if forced or cfg.eos_after is None else min(max_tokens, cfg.eos_after)
        finish = "length" if n_tokens == max_tokens else "stop"
        include_usage = bool((body.get("stream_options") or {}).get("include_usage"))
        # Ollama streams unless told not to; OpenAI servers only when asked.
        stream = bool(body.get("stream", True)) if ollama else bool(body.get("stream"))

        if stream:
            # Headers go out at once, as vLLM does; a queued request then waits with an open
            # stream, so its wait shows up as TTFT.
            head = "HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\nconnection: keep-alive\r\n"
            ctype = "application/x-ndjson" if ollama else "text/event-stream"
            writer.write(f"{head}content-type: {ctype}\r\ncache-control: no-cache\r\n\r\n".encode())

        loop = asyncio.get_running_loop()
        self.counters.waiting += 1
        # The schedule starts when the request arrived, or when it got a slot if it had to wait,
        # so request parsing and tokenizing here never shift the scripted truth.
        received_at = loop.time() - (time.perf_counter_ns() - received_ns) / 1e9
        slots = self._slots
        start = received_at
        if slots is not None:
            if slots.locked():
                await slots.acquire()
                start = loop.time()
            else:
                await slots.acquire()
        self.counters.waiting -= 1
        self.counters.running += 1
        self.counters.queue_time_sum += start - received_at
        self.counters.queue_time_count += 1
        cached = 0
        # llama.cpp's per-request switch: cache_prompt false recomputes the whole prompt.
        if cfg.prefix_cache and body.get("cache_prompt", True) is not False:
            ids = [1] * chat_overhead + [i for t in texts for i in count_tokens(t)]
            cached = self._cached_tokens(ids)
        self.counters.prefix_queries += prompt_tokens
        self.counters.prefix_hits += cached
        ttft = cfg.ttft_s(prompt_tokens - cached)
        entry = RequestLog(
            request_id=request.headers.get("x-request-id", str(self.requests_seen)),
            received_ns=received_ns,
            prompt_tokens=prompt_tokens,
            scheduled_ttft_s=ttft,
        )
        self.log.append(entry)
        rid = f"cmpl-{self._generation_count}"
        try:
            if not stream:
                await asyncio.sleep(ttft + cfg.gap_ms / 1000.0 * max(0, n_tokens - 1))
                return self._non_streamed(writer, chat, ollama, rid, prompt_tokens, n_tokens, finish)
            await self._stream_tokens(
                writer,
                loop,
                start=start,
                ttft=ttft,
                rid=rid,
                chat=chat,
                ollama=ollama,
                prompt_tokens=prompt_tokens,
                n_tokens=n_tokens,
                finish=finish,
                include_usage=include_usage,
                fault=fault,
                entry=entry,
                cached=cached,
                reader=request.reader,
            )
            return fault not in ("cut", "stall")
        finally:
            self.counters.running -= 1
            if slots is not None:
                slots.release()

    def _error(self, writer: asyncio.StreamWriter, status: int, message: str, ollama: bool) -> bool:
        if ollama:
            return self._send_json(writer, status, {"error": message})
        kind = "BadRequestError" if status < 500 else "InternalServerError"
        return self._send_json(writer, status, {"error": {"message": message, "type": kind, "code": status}})

    def _non_streamed(
        self,
        writer: asyncio.StreamWriter,
        chat: bool,
        ollama: bool,
        rid: str,
        prompt_tokens: int,
        n_tokens: int,
        finish: str,
    ) -> bool:
        text = "".join(" " + _WORDS[i % len(_WORDS)] for i in range(n_tokens))
        if ollama:
            key = {"message": {"role": "assistant", "content": text}} if chat else {"response": text}
            obj: dict[str, Any] = {
                "model": self.config.model,
                **key,
                "done": True,
                "prompt_eval_count": prompt_tokens,
                "eval_count": n_tokens,
            }
        else:
            choice = {"message": {"role": "assistant", "content": text}} if chat else {"text": text}
            obj = {
                "id": rid,
                "choices": [{"index": 0, **choice, "finish_reason": finish}],
                "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": n_tokens},
            }
        return self._send_json(writer, 200, obj)

    async def _stream_tokens(
        self,
        writer: asyncio.StreamWriter,
        loop: asyncio.AbstractEventLoop,
        *,
        start: float,
        ttft: float,
        rid: str,
        chat: bool,
        ollama: bool,
        prompt_tokens: int,
        n_tokens: int,
        finish: str,
        include_usage: bool,
        fault: str | None,
        entry: RequestLog,
        cached: int,
        reader: asyncio.StreamReader,
    ) -> None:
        cfg = self.config
        gap = cfg.gap_ms / 1000.0
        frames = _Framer(ollama=ollama, chat=chat, model=cfg.model, rid=rid, created=self._created)
        transport = writer.transport

        def emit(payload: bytes) -> None:
            if transport.is_closing():
                raise ClientGone
            writer.write(b"%x\r\n%s\r\n" % (len(payload), payload))

        if chat and not ollama and cfg.role_chunk:
            emit(frames.role())
        total = n_tokens if fault != "endless" else 1 << 62
        mid_stream = fault in ("cut", "stall", "truncate", "malformed", "error_event")
        finished = await self._emit_tokens(
            writer,
            loop,
            emit,
            frames,
            start=start + ttft,
            gap=gap,
            total=total,
            entry=entry,
            stop_at=cfg.fault_after_tokens if mid_stream else None,
        )
        if not finished:
            assert fault is not None
            await self._fault_mid_stream(writer, emit, fault, frames, ollama, reader)
            return
        done_s = loop.time() - start
        self.counters.prompt_tokens += prompt_tokens
        self.counters.generation_tokens += n_tokens
        self.counters.success += 1
        self.counters.prompt_seconds += ttft
        self.counters.predicted_seconds += max(0.0, done_s - ttft)
        usage = {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": n_tokens,
            "total_tokens": prompt_tokens + n_tokens,
        }
        timings = {
            "prompt_n": prompt_tokens - cached,
            "cache_n": cached,
            "prompt_ms": ttft * 1000.0,
            "predicted_n": n_tokens,
            "predicted_ms": max(0.0, done_s - ttft) * 1000.0,
            "predicted_per_token_ms": cfg.gap_ms,
        }
        if cfg.usage_delay_ms:
            await asyncio.sleep(cfg.usage_delay_ms / 1000.0)
        if ollama:
            emit(frames.ollama_done(finish, prompt_tokens, n_tokens, ttft, done_s - ttft))
        else:
            with_timings = cfg.flavor == "llamacpp"
            usage_in_final = with_timings and not chat and fault != "no_usage"
            emit(frames.finish(finish, usage if usage_in_final else None, timings if with_timings else None))
            if include_usage and fault != "no_usage" and not usage_in_final:
                emit(frames.usage(usage))
            emit(b"data: [DONE]\n\n")
        writer.write(b"0\r\n\r\n")

    def _emit_tokens(
        self,
        writer: asyncio.StreamWriter,
        loop: asyncio.AbstractEventLoop,
        emit: Callable[[bytes], None],
        frames: _Framer,
        *,
        start: float,
        gap: float,
        total: int,
        entry: RequestLog,
        stop_at: int | None,
    ) -> asyncio.Future[bool]:
        """Write token ``i`` at ``start + i * gap``; True when all were written, False when
        ``stop_at`` tokens were (a mid-stream fault takes over).

        A chain of ``call_at`` callbacks rather than a sleeping coroutine: one timer per token
        and no task switch, so hundreds of streams stay cheap and on time.
        """
        cfg = self.config
        done: asyncio.Future[bool] = loop.create_future()
        pending: list[bytes] = []
        count = 0
        # A real pause between the halves of a split event, so they land in separate reads.
        split_pause = min(0.001, gap / 2)

        def finish(result: bool) -> None:
            if not done.done():
                done.set_result(result)

        def tick() -> None:
            nonlocal count, pending
            if done.done():
                return
            try:
                if count == stop_at:
                    finish(False)
                    return
                pending.append(frames.token(" " + _WORDS[count % len(_WORDS)]))
                if cfg.empty_chunks and count % 2 == 1:
                    pending.append(frames.token(""))
                count += 1
                last = count >= total
                if len(pending) >= cfg.events_per_write or last:
                    # Stamped before the write: nobody can receive a token before this
                    # instant, so a client reporting a shorter TTFT than the log is wrong.
                    now_ns = time.perf_counter_ns()
                    if cfg.split_events:
                        # Cut the whole write in two, so the halves never interleave.
                        joined = b"".join(b"%x\r\n%s\r\n" % (len(p), p) for p in pending)
                        pending = []
                        writer.write(joined[: len(joined) // 2])
                        entry.first_token_ns = entry.first_token_ns or now_ns
                        entry.last_token_ns, entry.tokens = now_ns, count
                        # The rest goes out after a pause, and only then may the stream go on.
                        loop.call_later(split_pause, second_half, joined[len(joined) // 2 :], last)
                        return
                    if len(pending) == 1:
                        emit(pending[0])
                    else:
                        # Several events in one HTTP chunk and one write, as a busy server
                        # batches them.
                        emit(b"".join(pending))
                    pending = []
                    if entry.first_token_ns == 0:
                        entry.first_token_ns = now_ns
                    entry.last_token_ns = now_ns
                    entry.tokens = count
                if last:
                    finish(True)
                    return
                loop.call_at(start + count * gap, tick)
            except ClientGone as exc:
                done.set_exception(exc)

        def second_half(rest: bytes, last: bool) -> None:
            if done.done():
                return
            if writer.transport.is_closing():
                done.set_exception(ClientGone())
                return
            writer.write(rest)
            if last:
                finish(True)
            else:
                loop.call_at(start + count * gap, tick)

        loop.call_at(start, tick)
        return done

    async def _fault_mid_stream(
        self,
        writer: asyncio.StreamWriter,
        emit: Any,
        fault: str,
        frames: _Framer,
        ollama: bool,
        reader: asyncio.StreamReader,
    ) -> None:
        cfg = self.config
        if fault == "cut":
            await writer.drain()
            writer.transport.abort()
        elif fault == "stall":
            # Hold the connection open and silent until the client gives up.
            while not writer.transport.is_closing() and not reader.at_eof():
                await asyncio.sleep(0.05)
        elif fault == "truncate":
            writer.write(b"0\r\n\r\n")
        elif fault == "malformed":
            emit(b'{"response": "unterminated\n' if ollama else b'data: {"choices": [{"te\n\n')
            await asyncio.sleep(cfg.gap_ms / 1000.0)
            emit(frames.token(" after"))
            writer.write(b"0\r\n\r\n")
        elif fault == "error_event":
            if ollama:
                emit(json.dumps({"error": cfg.error_message}).encode() + b"\n")
            else:
                error = {
                    "error": {
                        "message": cfg.error_message,
                        "type": "InternalServerError",
                        "code": cfg.error_status,
                    }
                }
                emit(b"data: " + json.dumps(error).encode() + b"\n\n")
                emit(b"data: [DONE]\n\n")
            writer.write(b"0\r\n\r\n")


class _Framer:
    """Pre-rendered JSON fragments so each token costs one string format, not a json.dumps."""

    def __init__(self, *, ollama: bool, chat: bool, model: str, rid: str, created: int) -> None:
        self.ollama, self.chat, self.model, self.rid, self.created = (
            ollama,
            chat,
            model,
            rid,
            created,
        )
        m = json.dumps(model)
        if ollama:
            key = '"message":{"role":"assistant","content":%s}' if chat else '"response":%s'
            self._token = '{"model":' + m + ',"created_at":"2025-01-01T00:00:00Z",' + key + ',"done":false}\n'
        elif chat:
            self._token = (
                'data: {"id":"'
                + rid
                + '","object":"chat.completion.chunk","created":'
                + str(created)
                + ',"model":'
                + m
                + ',"choices":[{"index":0,"delta":{"content":%s},"logprobs":null,'
                '"finish_reason":null}]}\n\n'
            )
        else:
            self._token = (
                'data: {"id":"'
                + rid
                + '","object":"text_completion","created":'
                + str(created)
                + ',"model":'
                + m
                + ',"choices":[{"index":0,"text":%s,"logprobs":null,'
                '"finish_reason":null}]}\n\n'
            )

    def token(self, text: str) -> bytes:
        return (self._token % json.dumps(text)).encode()

    def role(self) -> bytes:
        obj = self._base("chat.completion.chunk")
        obj["choices"] = [
            {
                "index": 0,
                "delta": {"role": "assistant", "content": ""},
                "logprobs": None,
                "finish_reason": None,
            }
        ]
        return b"data: " + json.dumps(obj).encode() + b"\n\n"

    def _base(self, kind: str) -> dict[str, Any]:
        return {"id": self.rid, "object": kind, "created": self.created, "model": self.model}

    def finish(self, reason: str, usage: dict[str, int] | None, timings: dict[str, Any] | None) -> bytes:
        obj = self._base("chat.completion.chunk" if self.chat else "text_completion")
        empty = {"delta": {}} if self.chat else {"text": ""}
        obj["choices"] = [{"index": 0, **empty, "logprobs": None, "finish_reason": reason}]
        if usage is not None:
            obj["usage"] = usage
        if timings is not None:
            obj["timings"] = timings
        return b"data: " + json.dumps(obj).encode() + b"\n\n"

    def usage(self, usage: dict[str, int]) -> bytes:
        obj = self._base("chat.completion.chunk" if self.chat else "text_completion")
        obj["choices"] = []
        obj["usage"] = usage
        return b"data: " + json.dumps(obj).encode() + b"\n\n"

    def ollama_done(self, reason: str, prompt_tokens: int, n_tokens: int, prefill_s: float, decode_s: float) -> bytes:
        obj: dict[str, Any] = {"model": self.model, "created_at": "2025-01-01T00:00:00Z"}
        obj.update({"message": {"role": "assistant", "content": ""}} if self.chat else {"response": ""})
        obj.update(
            {
                "done": True,
                "done_reason": reason,
                "total_duration": int((prefill_s + decode_s) * 1e9),
                "load_duration": 1_000_000,
                "prompt_eval_count": prompt_tokens,
                "prompt_eval_duration": int(prefill_s * 1e9),
                "eval_count": n_tokens,
                "eval_duration": int(max(0.0, decode_s) * 1e9),
            }
        )
        return json.dumps(obj).encode() + b"\n"


# -- ways to run it ----------------------------------------------------------------------------


def precise_loop() -> asyncio.AbstractEventLoop:
    """An event loop whose timers fire within about 0.1 ms instead of up to 1 ms late.

    epoll takes its timeout in whole milliseconds (rounded up), so with the default loop every
    token would be written up to 1 ms late and inter-token gaps would jitter by that much;
    select() takes microseconds. Its 1,024-descriptor limit is far above what a test drives.
    """
    return asyncio.SelectorEventLoop(selectors.SelectSelector())


@contextlib.asynccontextmanager
async def serve(
    config: EngineConfig | None = None, *, host: str = "127.0.0.1", port: int = 0
) -> AsyncIterator[ScriptedEngine]:
    """Run the engine on the current event loop for the duration of the block."""
    engine = ScriptedEngine(config)
    await engine.start(host=host, port=port)
    try:
        yield engine
    finally:
        await engine.close()


@contextlib.contextmanager
def run_in_thread(config: EngineConfig | None = None, *, port: int = 0) -> Iterator[ScriptedEngine]:
    """Run the engine on its own event loop in a daemon thread; yields it once it listens."""
    engine = ScriptedEngine(config)
    loop = precise_loop()
    ready = threading.Event()
    failure: list[BaseException] = []

    def main() -> None:
        asyncio.set_event_loop(loop)
        try:
            loop.run_until_complete(engine.start(port=port))
        except BaseException as exc:  # reported to the caller below
            failure.append(exc)
            ready.set()
            return
        ready.set()
        loop.run_forever()
        loop.run_until_complete(engine.close())
        loop.close()

    thread = threading.Thread(target=main, name="scripted-engine", daemon=True)
    thread.start()
    ready.wait(10)
    if failure:
        raise failure[0]
    try:
        yield engine
    finally:
        loop.call_soon_threadsafe(loop.stop)
        thread.join(5)


@contextlib.contextmanager
def spawn(config: EngineConfig | None = None, *, port: int = 0) -> Iterator[str]:
    """Run the engine in a child process (its own interpreter and core); yields its base URL."""
    config = config or EngineConfig()
    cmd = [
        sys.executable,
        "-m",
        "workers.measure.scripted_engine",
        "--port",
        str(port),
        *config.to_args(),
    ]
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env = {**os.environ, "PYTHONPATH": root + os.pathsep + os.environ.get("PYTHONPATH", "")}
    # The child watches its stdin: if this process dies without cleaning up, the pipe closes
    # and the engine exits instead of lingering on its port.
    cmd.append("--exit-on-stdin-eof")
    proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env)
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline().strip()
        if not line.startswith("listening on "):
            raise RuntimeError(f"scripted engine did not start: {line!r}")
        yield line.removeprefix("listening on ")
    finally:
        proc.terminate()
        try:
            proc.wait(5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        for pipe in (proc.stdin, proc.stdout):
            if pipe is not None:
                pipe.close()


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m workers.measure.scripted_engine",
        description="Serve a scripted inference engine with known timings and optional faults.",
    )
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8099, help="0 picks a free port")
    parser.add_argument("--exit-on-stdin-eof", action="store_true", help="stop when stdin closes (the parent is gone)")
    for f in dataclasses.fields(EngineConfig):
        flag = "--" + f.name.replace("_", "-")
        if f.type in ("bool", bool):
            parser.add_argument(flag, dest=f.name, action=argparse.BooleanOptionalAction, default=f.default)
            continue
        kind = {"float": float, "int": int, "int | None": int}.get(str(f.type), str)
        choices = FLAVORS if f.name == "flavor" else FAULTS if f.name == "fault" else None
        parser.add_argument(flag, dest=f.name, type=kind, default=f.default, choices=choices)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    values = {f.name: getattr(args, f.name) for f in dataclasses.fields(EngineConfig)}
    config = EngineConfig(**values)

    async def run() -> None:
        engine = ScriptedEngine(config)
        await engine.start(host=args.host, port=args.port)
        print(f"listening on {engine.base_url}", flush=True)
        stop = asyncio.Event()
        if args.exit_on_stdin_eof:
            loop = asyncio.get_running_loop()
            stdin = sys.stdin.fileno()

            def on_stdin() -> None:
                if not os.read(stdin, 4096):
                    loop.remove_reader(stdin)
                    stop.set()

            loop.add_reader(stdin, on_stdin)
        try:
            await stop.wait()
        finally:
            await engine.close()

    with (
        contextlib.suppress(KeyboardInterrupt),
        asyncio.Runner(loop_factory=precise_loop) as runner,
    ):
        runner.run(run())
    return 0


if __name__ == "__main__":
    sys.exit(main())
