"""Measured requests: one streamed generation request in, one :class:`RequestRecord` out.

Timing comes from :mod:`workers.measure.http11`: "request sent" is the moment the request's
bytes are handed to the socket and every chunk carries the arrival time of the segment that
completed it, so connection set-up, pool waits and parsing never count as TTFT or ITL.
Side calls that are not timed (probe, tokenize, metrics) use httpx via :func:`make_http_client`.
"""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

import httpx

from workers.measure.errors import (
    LENGTH_MISMATCH,
    RETRIED,
    USAGE_MISSING,
    Cancelled,
    ClientError,
    Disconnected,
    EngineError,
    Finding,
    HTTPStatusError,
    MeasureError,
    NoOutput,
    Overrun,
    StreamCut,
    TotalTimeout,
)
from workers.measure.http11 import Connection, DroppedBeforeResponse, Exchange, Pool
from workers.measure.metrics import RequestRecord, tpot
from workers.measure.protocols import (
    StreamEvent,
    StreamParser,
    build_body,
    error_message_from_body,
)
from workers.measure.spec import RunSpec, TargetSpec

_now_ns = time.perf_counter_ns
# Chunks never outnumber tokens, so more content chunks than max_tokens (plus slack for servers
# that split a multi-byte character) means the engine ignores the limit.
_OVERRUN_SLACK = 16


def make_http_client(
    *, target: TargetSpec, timeout_s: float = 30.0, connect_timeout_s: float = 10.0
) -> httpx.AsyncClient:
    """An httpx client for the untimed side calls (probe, tokenize, metrics scrapes)."""
    return httpx.AsyncClient(
        timeout=httpx.Timeout(timeout_s, connect=connect_timeout_s),
        headers=target.request_headers(),
        # Loading the CA bundle costs ~80 ms of CPU per client; plain HTTP never needs it.
        verify=target.verify_tls if target.base_url.startswith("https:") else False,
    )


@dataclass(slots=True)
class RequestPlan:
    """A request as prepared before the run (prompt built and counted, body encoded)."""

    index: int
    prompt: str
    max_tokens: int
    prompt_tokens_target: int | None = None
    prompt_tokens_counted: int | None = None
    prompt_tokens_source: str | None = None
    warmup: bool = False
    params: dict[str, Any] = field(default_factory=dict)


class _StreamState:
    """What one response has said so far; ``consume`` is the per-chunk hot path."""

    __slots__ = (
        "chunks",
        "done",
        "finish",
        "first",
        "itl",
        "last",
        "limit",
        "max_tokens",
        "out_tokens",
        "prompt_tokens",
        "server",
        "tokens_source",
    )

    def __init__(self, *, limit: int, max_tokens: int) -> None:
        self.limit = limit
        self.max_tokens = max_tokens
        self.first = 0
        self.last = 0
        self.chunks = 0
        self.itl: list[float] = []
        self.done = False
        self.finish: str | None = None
        self.out_tokens: int | None = None
        self.tokens_source: str | None = None
        self.prompt_tokens: int | None = None
        self.server: dict[str, Any] | None = None

    def consume(self, events: list[StreamEvent], arrived: int) -> None:
        for event in events:
            if event.error is not None:
                raise EngineError(f"the engine reported an error mid-stream: {event.error}")
            if event.text:
                if self.chunks == 0:
                    self.first = arrived
                else:
                    self.itl.append((arrived - self.last) / 1e9)
                self.last = arrived
                self.chunks += 1
                if self.chunks > self.limit:
                    raise Overrun(
                        f"more than {self.limit} content chunks for max_tokens="
                        f"{self.max_tokens}: the engine ignores the limit"
                    )
            if event.output_tokens is not None:
                self.out_tokens = event.output_tokens
                self.tokens_source = event.tokens_source
            if event.prompt_tokens is not None:
                self.prompt_tokens = event.prompt_tokens
            if event.server is not None:
                self.server = event.server
            if event.finish_reason:
                self.finish = event.finish_reason
            if event.done:
                self.done = True


class MeasureClient:
    """Sends the measured requests of one run over one keep-alive connection pool."""

    def __init__(self, *, target: TargetSpec, spec: RunSpec, origin_ns: int) -> None:
        self.target = target
        self.spec = spec
        self.origin_ns = origin_ns
        self.pool = Pool(
            base_url=target.base_url,
            verify_tls=target.verify_tls,
            connect_timeout_s=spec.connect_timeout_s,
            read_timeout_s=spec.read_timeout_s,
        )
        url = urlsplit(target.url(target.api.path))
        self._path = url.path + (f"?{url.query}" if url.query else "")
        caps = target.capabilities
        self._fresh = caps.fresh_connection_per_stream
        self._headers = target.request_headers()
        if self._fresh:
            self._headers["connection"] = "close"
        self._include_usage = caps.include_usage and not target.api.is_ollama
        self._ignore_eos = spec.ignore_eos and caps.ignore_eos and not target.api.is_ollama
        self._cache_prompt = spec.prompt_cache if caps.cache_prompt and not target.api.is_ollama else None
        # Ollama always reports eval_count; OpenAI servers only when include_usage is sent.
        self._usage_expected = target.api.is_ollama or self._include_usage
        self.cancelled: list[RequestRecord] = []
        self.run_id = uuid.uuid4().hex[:12]

    def close(self) -> None:
        self.pool.close()

    def request_id(self, index: int) -> str:
        return f"measure-{self.run_id}-{index}"

    async def preconnect(self, count: int) -> None:
        """Open connections ahead of the measured phase so no measured request pays for one.

        Skipped for targets that need a fresh connection per stream. A failure here is not an
        error: the requests that follow will report it with their own records.
        """
        if self._fresh or count < 1:
            return
        results = await asyncio.gather(*(self.pool.connect() for _ in range(count)), return_exceptions=True)
        for conn in results:
            if isinstance(conn, Connection):
                self.pool.add_idle(conn)

    def encode(self, plan: RequestPlan) -> bytes:
        """The whole request (head and JSON body), built before the clock starts."""
        body = json.dumps(
            build_body(
                api=self.target.api,
                model=self.target.model,
                prompt=plan.prompt,
                max_tokens=plan.max_tokens,
                ignore_eos=self._ignore_eos,
                include_usage=self._include_usage,
                cache_prompt=self._cache_prompt,
                extra=self.spec.extra_body,
            )
        ).encode()
        # vLLM and most proxies log X-Request-Id, so a record can be matched to server logs.
        headers = {**self._headers, "x-request-id": self.request_id(plan.index)}
        head = self.pool.request_head(path=self._path, headers=headers, body_len=len(body))
        return head + body

    async def measure(
        self, plan: RequestPlan, *, payload: bytes, scheduled_ns: int | None, slot_ns: int
    ) -> RequestRecord:
        """Run one request to completion. Failures are recorded on the returned record; only
        cancellation of the caller propagates (after the record is marked cancelled)."""
        record = RequestRecord(
            index=plan.index,
            request_id=self.request_id(plan.index),
            max_tokens=plan.max_tokens,
            warmup=plan.warmup,
            params=plan.params,
            prompt_tokens_target=plan.prompt_tokens_target,
        )
        if scheduled_ns is not None:
            record.scheduled_s = (scheduled_ns - self.origin_ns) / 1e9
            record.queue_s = max(0, slot_ns - scheduled_ns) / 1e9
        state = _StreamState(limit=plan.max_tokens + _OVERRUN_SLACK, max_tokens=plan.max_tokens)
        try:
            async with asyncio.timeout(self.spec.timeout_s):
                await self._attempt(plan, payload, record, state)
        except TimeoutError:
            record.error = TotalTimeout(
                f"request still running after its {self.spec.timeout_s:g} s limit "
                f"({state.chunks} content chunks received)"
            ).to_dict()
        except MeasureError as exc:
            record.error = exc.to_dict()
            if exc.kind in ("stream_cut", "stall_timeout"):
                record.error["message"] += f" (after {state.chunks} content chunks)"
        except asyncio.CancelledError:
            record.error = Cancelled("the run stopped while this request was in flight").to_dict()
            record.end_s = (_now_ns() - self.origin_ns) / 1e9
            record.content_chunks = state.chunks
            # Cancellation must propagate, so the record is left here for the run to collect.
            self.cancelled.append(record)
            raise
        except Exception as exc:  # any surprise is reported on the request, never a traceback
            record.error = ClientError(f"{type(exc).__name__}: {exc}").to_dict()
        record.content_chunks = state.chunks
        if record.end_s is None:
            record.end_s = (_now_ns() - self.origin_ns) / 1e9
        return record

    async def _attempt(self, plan: RequestPlan, payload: bytes, record: RequestRecord, state: _StreamState) -> None:
        loop = asyncio.get_running_loop()
        retries = self.spec.retries_before_first_byte
        for attempt in range(retries + 1):
            # After a drop, never trust another pooled connection: it may be just as stale.
            conn, opened = await self.pool.acquire(fresh=self._fresh or attempt > 0)
            parser = StreamParser(self.target.api)

            def on_body(data: bytes, arrived: int, parser: StreamParser = parser) -> None:
                state.consume(parser.feed(data), arrived)

            exchange = Exchange(on_body, loop.create_future())
            exchange.keep_alive = not self._fresh
            conn.send(payload, exchange)
            try:
                await exchange.future
            except DroppedBeforeResponse as exc:
                # Nothing was received, so nothing was measured: trying again on a new
                # connection loses nothing and mis-times nothing (llama.cpp keep-alive drops).
                if attempt < retries:
                    record.retries += 1
                    continue
                raise Disconnected(
                    f"the engine closed the connection without answering ({attempt + 1} tries): {exc.message}"
                ) from None
            finally:
                # Still the connection's exchange: cancelled or timed out mid-response (the
                # cancellation has already cancelled the future). The connection is unusable.
                if conn.exchange is exchange:
                    conn.abandon()
            self.pool.release(conn)
            self._finish(plan, record, state, parser, exchange, conn if opened else None)
            return

    def _finish(
        self,
        plan: RequestPlan,
        record: RequestRecord,
        state: _StreamState,
        parser: StreamParser,
        exchange: Exchange,
        opened: Connection | None,
    ) -> None:
        send_ns = exchange.sent_ns
        record.send_s = (send_ns - self.origin_ns) / 1e9
        record.headers_s = (exchange.headers_ns - send_ns) / 1e9
        record.end_s = (exchange.last_rx_ns - self.origin_ns) / 1e9
        if opened is not None:
            record.connect_s = opened.connect_s
        if record.retries:
            record.warnings.append(
                Finding(
                    RETRIED,
                    "the engine dropped the connection before answering; "
                    f"retried {record.retries} time(s) on a new connection",
                ).to_dict()
            )
        if exchange.status >= 400:
            message = error_message_from_body(bytes(exchange.error_body))
            raise HTTPStatusError(f"HTTP {exchange.status}: {message}", status=exchange.status)
        state.consume(parser.close(), exchange.last_rx_ns)
        if not state.done and state.finish is None:
            marker = "done: true" if self.target.api.is_ollama else "data: [DONE]"
            raise StreamCut(f"the stream ended after {state.chunks} content chunks without its end marker ({marker})")
        if state.chunks == 0:
            raise NoOutput(f"the stream finished (finish_reason={state.finish}) without any text")

        record.ttft_s = (state.first - send_ns) / 1e9
        record.e2e_s = (state.last - send_ns) / 1e9
        record.itl_s = state.itl
        record.finish_reason = state.finish
        record.server = state.server
        out_tokens, source = state.out_tokens, state.tokens_source
        if out_tokens is None:
            out_tokens, source = state.chunks, "chunks"
            if self._usage_expected:
                record.warnings.append(
                    Finding(
                        USAGE_MISSING,
                        "the engine sent no token usage; output tokens are counted chunks",
                    ).to_dict()
                )
        record.output_tokens = out_tokens
        record.output_tokens_source = source
        record.tpot_s = tpot(e2e_s=record.e2e_s, ttft_s=record.ttft_s, output_tokens=out_tokens)
        if state.prompt_tokens is not None:
            record.prompt_tokens, record.prompt_tokens_source = state.prompt_tokens, "usage"
        elif plan.prompt_tokens_counted is not None:
            record.prompt_tokens = plan.prompt_tokens_counted
            record.prompt_tokens_source = plan.prompt_tokens_source
        if self._ignore_eos and out_tokens != plan.max_tokens:
            record.warnings.append(
                Finding(
                    LENGTH_MISMATCH,
                    f"asked for exactly {plan.max_tokens} tokens, got {out_tokens}",
                ).to_dict()
            )
