"""A small HTTP/1.1 client for streamed responses, built on asyncio's Protocol.

Why not httpx for the measured requests: measured here, httpx/httpcore/h11 spend about 100 us
of CPU per streamed chunk (several coroutine layers and a state machine per chunk); at 64
streams with a 4 ms token gap that is more than one core, the event loop falls behind and
timestamps come out tens of milliseconds late. This module does the same job for the one
request shape a measurement sends (POST, JSON body, streamed response) at a fraction of the
cost, and it stamps every received segment with ``perf_counter_ns()`` in ``data_received``,
the earliest point Python sees the bytes. Parsing is deferred with ``call_soon`` so that when
many sockets are readable at once they are all stamped before any of them is parsed.
httpx is still used for everything that is not timed (probe, tokenize, metrics scrapes).

Connections are kept alive and pooled; a connection the server closed while idle is noticed
and never reused, and the caller may retry a request that got no response byte at all.
"""

from __future__ import annotations

import asyncio
import socket
import ssl
import time
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

from workers.measure.errors import (
    ClientError,
    ConnectTimeout,
    DNSFailure,
    HeaderTimeout,
    MeasureError,
    StallTimeout,
    StreamCut,
    TLSFailure,
    Unreachable,
)

_now_ns = time.perf_counter_ns
_MAX_HEAD = 64 * 1024
_MAX_ERROR_BODY = 64 * 1024

# Body framing.
_CHUNKED, _LENGTH, _UNTIL_CLOSE, _NONE = range(4)
# Chunked decoder states.
_SIZE, _DATA, _DATA_END, _TRAILER = range(4)


class DroppedBeforeResponse(MeasureError):
    """The connection closed before a single response byte: safe to retry elsewhere."""

    kind = "disconnected"


class Exchange:
    """One request and its streamed response on one connection.

    ``on_body(data, arrived_ns)`` receives decoded body bytes with the arrival time of the
    segment that carried them; it may raise a :class:`MeasureError` to abandon the response.
    """

    __slots__ = (
        "body_mode",
        "chunk_left",
        "chunk_state",
        "error_body",
        "future",
        "got_bytes",
        "headers",
        "headers_ns",
        "keep_alive",
        "last_rx_ns",
        "on_body",
        "remaining",
        "sent_ns",
        "status",
    )

    def __init__(self, on_body: Callable[[bytes, int], None], future: asyncio.Future[None]) -> None:
        self.on_body = on_body
        self.future = future
        self.sent_ns = 0
        self.headers_ns = 0
        self.last_rx_ns = 0
        self.got_bytes = False
        self.status = 0
        self.headers: dict[str, str] = {}
        self.keep_alive = True
        self.body_mode = _NONE
        self.remaining = 0
        self.chunk_state = _SIZE
        self.chunk_left = 0
        self.error_body = bytearray()


class Streams:
    """How many exchanges are in flight over all of a pool's connections."""

    # Up to this many streams, parsing right away in data_received costs the others at most a
    # few tens of microseconds; above it, parsing is deferred so every socket that became
    # readable in the same instant is stamped before any of them is parsed.
    INLINE_MAX = 4

    def __init__(self) -> None:
        self.active = 0


class Connection(asyncio.Protocol):
    """One TCP (or TLS) connection carrying one exchange at a time."""

    def __init__(self, loop: asyncio.AbstractEventLoop, read_timeout_s: float, streams: Streams | None = None) -> None:
        self.loop = loop
        self.streams = streams or Streams()
        self.read_timeout_ns = int(read_timeout_s * 1e9)
        self.transport: asyncio.Transport | None = None
        self.pending: list[tuple[bytes, int]] = []
        self.scheduled = False
        self.closed = False
        self.eof = False
        self.stray = False
        self.exchange: Exchange | None = None
        self.buf = b""
        self.requests = 0
        self.connect_s = 0.0
        self._watchdog: asyncio.TimerHandle | None = None

    # -- asyncio callbacks: keep them tiny, stamping is what matters here ----------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        self.pending.append((data, _now_ns()))
        if self.scheduled:
            return
        if self.streams.active <= Streams.INLINE_MAX:
            # Few streams: parsing now saves a trip round the event loop per chunk.
            self._process()
        else:
            self.scheduled = True
            self.loop.call_soon(self._process)

    def eof_received(self) -> bool:
        self.eof = True
        if not self.scheduled:
            self.scheduled = True
            self.loop.call_soon(self._process)
        return False

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        self.eof = True
        if not self.scheduled:
            self.scheduled = True
            self.loop.call_soon(self._process)

    # -- requests ------------------------------------------------------------------------------

    @property
    def usable(self) -> bool:
        return not (self.closed or self.eof or self.stray or self.pending or self.buf) and self.exchange is None

    def send(self, payload: bytes, exchange: Exchange) -> None:
        assert self.transport is not None and self.exchange is None
        self.exchange = exchange
        self.streams.active += 1
        self.requests += 1
        self.buf = b""
        exchange.last_rx_ns = exchange.sent_ns = _now_ns()
        self.transport.write(payload)
        self._arm(self.read_timeout_ns)

    def abandon(self) -> None:
        """Give up on the current exchange (cancelled or timed out) and drop the connection."""
        ex, self.exchange = self.exchange, None
        if ex is not None:
            self.streams.active -= 1
            if not ex.future.done():
                ex.future.cancel()
        self.abort()

    def abort(self) -> None:
        self.closed = True
        if self.transport is not None:
            self.transport.abort()
        self._disarm()

    def _arm(self, delay_ns: int) -> None:
        self._watchdog = self.loop.call_later(delay_ns / 1e9, self._check_idle)

    def _disarm(self) -> None:
        if self._watchdog is not None:
            self._watchdog.cancel()
            self._watchdog = None

    def _check_idle(self) -> None:
        ex = self.exchange
        if ex is None or ex.future.done():
            return
        idle = _now_ns() - ex.last_rx_ns
        if idle < self.read_timeout_ns:
            # Re-arming only when the timer fires keeps the per-chunk path free of timer work.
            self._arm(self.read_timeout_ns - idle)
            return
        seconds = self.read_timeout_ns / 1e9
        if ex.status == 0:
            self._fail(HeaderTimeout(f"no response headers within {seconds:g} s"))
        else:
            self._fail(StallTimeout(f"the stream went silent for {seconds:g} s"))

    # -- parsing -------------------------------------------------------------------------------

    def _process(self) -> None:
        self.scheduled = False
        pending, self.pending = self.pending, []
        ex = self.exchange
        if ex is None:
            # Bytes on an idle connection answer no request of ours: never reuse it.
            self.stray = self.stray or bool(pending)
            return
        try:
            for data, arrived in pending:
                ex.got_bytes = True
                ex.last_rx_ns = arrived
                self._feed(ex, data, arrived)
                if ex.future.done():
                    return
            if self.eof and not ex.future.done():
                self._at_eof(ex)
        except MeasureError as exc:
            self._fail(exc)
        except Exception as exc:  # a bug here must fail one request, not hang it
            self._fail(ClientError(f"{type(exc).__name__} while reading the response: {exc}"))

    def _feed(self, ex: Exchange, data: bytes, arrived: int) -> None:
        buf = self.buf + data if self.buf else data
        if ex.status == 0:
            buf = self._parse_head(ex, buf, arrived)
            if ex.status == 0:
                self.buf = buf
                return
        self.buf = b""
        if buf:
            self._body(ex, buf, arrived)

    def _parse_head(self, ex: Exchange, buf: bytes, arrived: int) -> bytes:
        while True:
            end = buf.find(b"\r\n\r\n")
            if end < 0:
                if len(buf) > _MAX_HEAD:
                    raise StreamCut("response headers larger than 64 KiB")
                return buf
            head, buf = buf[:end], buf[end + 4 :]
            lines = head.decode("latin-1").split("\r\n")
            version, _, rest = lines[0].partition(" ")
            code = rest[:3]
            if not version.startswith("HTTP/1.") or not code.isdigit():
                raise StreamCut(f"not an HTTP/1.x response: {lines[0][:80]!r}")
            status = int(code)
            if 100 <= status < 200:
                continue  # interim responses (100 Continue, 103 Early Hints) carry no body
            headers: dict[str, str] = {}
            for line in lines[1:]:
                name, _, value = line.partition(":")
                headers[name.strip().lower()] = value.strip()
            ex.status = status
            ex.headers = headers
            ex.headers_ns = arrived
            connection = headers.get("connection", "").lower()
            ex.keep_alive = ex.keep_alive and (
                "close" not in connection and (version == "HTTP/1.1" or "keep-alive" in connection)
            )
            if status in (204, 304):
                ex.body_mode = _NONE
                self._complete(ex, arrived)
            elif "chunked" in headers.get("transfer-encoding", "").lower():
                ex.body_mode = _CHUNKED
            elif "content-length" in headers:
                ex.body_mode = _LENGTH
                ex.remaining = int(headers["content-length"])
                if ex.remaining == 0:
                    self._complete(ex, arrived)
            else:
                ex.body_mode = _UNTIL_CLOSE
                ex.keep_alive = False
            return buf

    def _body(self, ex: Exchange, buf: bytes, arrived: int) -> None:
        if ex.future.done():
            return
        mode = ex.body_mode
        if mode == _LENGTH:
            part = buf[: ex.remaining]
            ex.remaining -= len(part)
            self._deliver(ex, part, arrived)
            if ex.remaining == 0:
                self._complete(ex, arrived)
        elif mode == _UNTIL_CLOSE:
            self._deliver(ex, buf, arrived)
        elif mode == _CHUNKED:
            self._chunked(ex, buf, arrived)

    def _chunked(self, ex: Exchange, buf: bytes, arrived: int) -> None:
        pos = 0
        size = len(buf)
        parts: list[bytes] = []
        state = ex.chunk_state
        while pos < size:
            if state == _DATA:
                take = min(ex.chunk_left, size - pos)
                parts.append(buf[pos : pos + take])
                pos += take
                ex.chunk_left -= take
                if ex.chunk_left == 0:
                    state = _DATA_END
            elif state == _SIZE:
                eol = buf.find(b"\r\n", pos)
                if eol < 0:
                    break
                field = buf[pos:eol].split(b";", 1)[0].strip()
                try:
                    ex.chunk_left = int(field, 16)
                except ValueError:
                    raise StreamCut(f"bad chunk size {field[:20]!r} in the response") from None
                pos = eol + 2
                state = _DATA if ex.chunk_left else _TRAILER
            elif state == _DATA_END:
                if size - pos < 2:
                    break
                pos += 2
                state = _SIZE
            else:  # _TRAILER: header lines until an empty one ends the message
                eol = buf.find(b"\r\n", pos)
                if eol < 0:
                    break
                if eol == pos:
                    ex.chunk_state = state
                    if parts:
                        self._deliver(ex, b"".join(parts), arrived)
                    self._complete(ex, arrived)
                    return
                pos = eol + 2
        ex.chunk_state = state
        self.buf = buf[pos:]
        if parts:
            self._deliver(ex, parts[0] if len(parts) == 1 else b"".join(parts), arrived)

    def _deliver(self, ex: Exchange, data: bytes, arrived: int) -> None:
        if not data:
            return
        if ex.status >= 400:
            if len(ex.error_body) < _MAX_ERROR_BODY:
                ex.error_body += data
            return
        ex.on_body(data, arrived)

    def _at_eof(self, ex: Exchange) -> None:
        if ex.body_mode == _UNTIL_CLOSE and ex.status:
            self._complete(ex, ex.last_rx_ns)
        elif not ex.got_bytes:
            self._fail(DroppedBeforeResponse("the server closed the connection before answering"))
        elif ex.status == 0:
            self._fail(StreamCut("the connection closed in the middle of the response headers"))
        else:
            self._fail(StreamCut("the connection closed before the end of the response body"))

    def _complete(self, ex: Exchange, arrived: int) -> None:
        self._disarm()
        self.exchange = None
        self.streams.active -= 1
        if not ex.keep_alive:
            self.abort()
        if not ex.future.done():
            ex.future.set_result(None)

    def _fail(self, exc: MeasureError) -> None:
        ex = self.exchange
        self.exchange = None
        self.abort()
        if ex is not None:
            self.streams.active -= 1
            if not ex.future.done():
                ex.future.set_exception(exc)


class Pool:
    """Keep-alive connections to one origin, most recently used first."""

    def __init__(self, *, base_url: str, verify_tls: bool, connect_timeout_s: float, read_timeout_s: float) -> None:
        parts = urlsplit(base_url)
        self.host = parts.hostname or "127.0.0.1"
        self.tls = parts.scheme == "https"
        self.port = parts.port or (443 if self.tls else 80)
        self.host_header = parts.netloc.rpartition("@")[2]
        self.connect_timeout_s = connect_timeout_s
        self.read_timeout_s = read_timeout_s
        self._ssl: ssl.SSLContext | None = None
        if self.tls:
            self._ssl = ssl.create_default_context()
            if not verify_tls:
                self._ssl.check_hostname = False
                self._ssl.verify_mode = ssl.CERT_NONE
        self._idle: list[Connection] = []
        self.streams = Streams()
        self.opened = 0
        self.reused = 0
        self.connect_times_s: list[float] = []

    async def connect(self) -> Connection:
        loop = asyncio.get_running_loop()
        started = _now_ns()
        kwargs: dict[str, Any] = {}
        if self._ssl is not None:
            kwargs = {"ssl": self._ssl, "server_hostname": self.host}
        try:
            async with asyncio.timeout(self.connect_timeout_s):
                _, conn = await loop.create_connection(
                    lambda: Connection(loop, self.read_timeout_s, self.streams), self.host, self.port, **kwargs
                )
        except TimeoutError:
            raise ConnectTimeout(
                f"no connection to {self.host}:{self.port} within {self.connect_timeout_s:g} s"
            ) from None
        except socket.gaierror as exc:
            raise DNSFailure(f"cannot resolve {self.host!r}: {exc.strerror or exc}") from None
        except ssl.SSLError as exc:
            raise TLSFailure(f"TLS with {self.host}:{self.port} failed: {exc}") from None
        except OSError as exc:
            raise Unreachable(f"cannot connect to {self.host}:{self.port}: {exc}") from None
        conn.connect_s = (_now_ns() - started) / 1e9
        self.opened += 1
        self.connect_times_s.append(conn.connect_s)
        return conn

    async def acquire(self, *, fresh: bool) -> tuple[Connection, bool]:
        """A connection for one request, and whether it was opened just for it."""
        while self._idle and not fresh:
            conn = self._idle.pop()
            if conn.usable:
                self.reused += 1
                return conn, False
            conn.abort()
        return await self.connect(), True

    def release(self, conn: Connection) -> None:
        if conn.usable:
            self._idle.append(conn)
        else:
            conn.abort()

    def add_idle(self, conn: Connection) -> None:
        self._idle.append(conn)

    def close(self) -> None:
        for conn in self._idle:
            conn.abort()
        self._idle.clear()

    def request_head(self, *, path: str, headers: dict[str, str], body_len: int) -> bytes:
        lines = [f"POST {path} HTTP/1.1", f"host: {self.host_header}"]
        lines += [f"{name}: {value}" for name, value in headers.items()]
        lines += [f"content-length: {body_len}", "accept-encoding: identity", "", ""]
        return "\r\n".join(lines).encode("latin-1")
