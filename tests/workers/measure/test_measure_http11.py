"""The streaming HTTP/1.1 reader: framing split at every byte, bodies, errors, stamps."""

from __future__ import annotations

import asyncio

import pytest

from workers.measure.errors import HeaderTimeout, StallTimeout, StreamCut
from workers.measure.http11 import Connection, DroppedBeforeResponse, Exchange, Streams


class FakeTransport(asyncio.Transport):
    def __init__(self) -> None:
        super().__init__()
        self.written = b""
        self.aborted = False

    def write(self, data: bytes) -> None:
        self.written += data

    def abort(self) -> None:
        self.aborted = True

    def is_closing(self) -> bool:
        return self.aborted


CHUNKED = (
    b"HTTP/1.1 100 Continue\r\n\r\n"
    b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Type: text/event-stream\r\n\r\n"
    b"6;ext=1\r\nhello \r\n5\r\nworld\r\n0\r\nx-trailer: 1\r\n\r\n"
)


async def _exchange(pieces: list[bytes], *, read_timeout: float = 5.0, eof: bool = False):
    loop = asyncio.get_running_loop()
    conn = Connection(loop, read_timeout)
    transport = FakeTransport()
    conn.connection_made(transport)
    body: list[tuple[bytes, int]] = []
    exchange = Exchange(lambda data, ts: body.append((data, ts)), loop.create_future())
    conn.send(b"POST / HTTP/1.1\r\n\r\n", exchange)
    for piece in pieces:
        conn.data_received(piece)
        await asyncio.sleep(0)
    if eof:
        conn.eof_received()
    await asyncio.wait_for(exchange.future, 2)
    return conn, exchange, body


@pytest.mark.parametrize("size", [1, 2, 3, 5, 11, 1000])
def test_chunked_body_decodes_whatever_the_split(size: int) -> None:
    pieces = [CHUNKED[i : i + size] for i in range(0, len(CHUNKED), size)]
    conn, exchange, body = asyncio.run(_exchange(pieces))
    assert b"".join(data for data, _ in body) == b"hello world"
    assert exchange.status == 200
    assert exchange.headers["content-type"] == "text/event-stream"
    assert conn.usable  # keep-alive: the connection can carry the next request


def test_each_body_piece_carries_the_arrival_time_of_its_segment() -> None:
    pieces = [CHUNKED[:120], CHUNKED[120:]]
    _, exchange, body = asyncio.run(_exchange(pieces))
    assert exchange.sent_ns <= exchange.headers_ns <= body[0][1] <= body[-1][1]
    assert len({ts for _, ts in body}) == len(body)


def test_content_length_and_close_delimited_bodies() -> None:
    fixed = b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nabcde"
    _, _, body = asyncio.run(_exchange([fixed]))
    assert b"".join(d for d, _ in body) == b"abcde"
    until_close = b"HTTP/1.0 200 OK\r\n\r\nstream until the end"
    conn, _, body = asyncio.run(_exchange([until_close], eof=True))
    assert b"".join(d for d, _ in body) == b"stream until the end"
    assert not conn.usable


def test_error_status_collects_the_body_instead_of_streaming_it() -> None:
    response = b'HTTP/1.1 400 Bad Request\r\nContent-Length: 16\r\n\r\n{"error":"nope"}'
    _, exchange, body = asyncio.run(_exchange([response]))
    assert exchange.status == 400
    assert body == []
    assert bytes(exchange.error_body) == b'{"error":"nope"}'


@pytest.mark.parametrize(
    ("pieces", "error", "match"),
    [
        ([], DroppedBeforeResponse, "before answering"),
        ([b"HTTP/1.1 200 OK\r\nTransfer-"], StreamCut, "middle of the response headers"),
        ([CHUNKED[:140]], StreamCut, "before the end of the response body"),
        ([b"SSH-2.0-OpenSSH\r\n\r\n"], StreamCut, "not an HTTP/1.x response"),
        ([b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n"], StreamCut, "chunk"),
    ],
)
def test_broken_responses_raise_typed_errors(pieces, error, match) -> None:
    with pytest.raises(error, match=match):
        asyncio.run(_exchange(pieces, eof=True))


def test_silence_is_a_header_timeout_before_headers_and_a_stall_after() -> None:
    with pytest.raises(HeaderTimeout):
        asyncio.run(_exchange([], read_timeout=0.05))
    with pytest.raises(StallTimeout):
        asyncio.run(_exchange([CHUNKED[:140]], read_timeout=0.05))


def test_bytes_on_an_idle_connection_make_it_unusable() -> None:
    async def run():
        conn, _, _ = await _exchange([CHUNKED])
        assert conn.usable
        conn.data_received(b"HTTP/1.1 408 Request Timeout\r\n\r\n")
        await asyncio.sleep(0)
        return conn.usable

    assert asyncio.run(run()) is False


def test_many_streams_defer_parsing_so_all_are_stamped_first() -> None:
    async def run():
        loop = asyncio.get_running_loop()
        streams = Streams()
        streams.active = Streams.INLINE_MAX + 1
        conn = Connection(loop, 5.0, streams)
        conn.connection_made(FakeTransport())
        body: list[bytes] = []
        conn.send(b"POST / HTTP/1.1\r\n\r\n", Exchange(lambda d, ts: body.append(d), loop.create_future()))
        conn.data_received(CHUNKED)
        parsed_at_once = list(body)
        await asyncio.sleep(0)
        return parsed_at_once, body

    at_once, later = asyncio.run(run())
    assert at_once == [] and b"".join(later) == b"hello world"
