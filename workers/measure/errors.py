"""Typed failures of one measured request.

Every way a request can go wrong maps to one class with a stable ``kind`` string, which is what
the run summary counts (``errors_by_kind``) and what the UI shows next to the engine's own
message. Nothing escapes a request as a bare exception: the client converts whatever it caught
into one of these, so a run reports failures instead of dying with a traceback.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


class MeasureError(Exception):
    """A request failed; ``kind`` is what the summary counts, ``message`` is for people."""

    kind: str = "client_error"

    def __init__(self, message: str, *, status: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.status = status

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "message": self.message, "status": self.status}


class Unreachable(MeasureError):
    """Nothing accepted the TCP connection (refused, no route, network down)."""

    kind = "unreachable"


class DNSFailure(MeasureError):
    kind = "dns"


class TLSFailure(MeasureError):
    kind = "tls"


class ConnectTimeout(MeasureError):
    kind = "connect_timeout"


class HeaderTimeout(MeasureError):
    """The engine accepted the request but sent no response headers in time."""

    kind = "header_timeout"


class StallTimeout(MeasureError):
    """The stream started, then went silent for longer than the read timeout."""

    kind = "stall_timeout"


class TotalTimeout(MeasureError):
    """The request ran past its total time limit (for example a stream that never ends)."""

    kind = "total_timeout"


class HTTPStatusError(MeasureError):
    """The engine answered 4xx/5xx; ``message`` is the error text from its body."""

    def __init__(self, message: str, *, status: int | None = None) -> None:
        super().__init__(message, status=status)
        self.kind = "http_4xx" if status is not None and status < 500 else "http_5xx"


class Disconnected(MeasureError):
    """The engine closed the connection before sending any response, even after retrying."""

    kind = "disconnected"


class StreamCut(MeasureError):
    """The connection ended before the stream's terminator ([DONE] / ``done: true``)."""

    kind = "stream_cut"


class MalformedStream(MeasureError):
    """A line of the SSE or NDJSON stream could not be understood."""

    kind = "malformed"


class EngineError(MeasureError):
    """The engine reported an error inside an otherwise well-formed stream."""

    kind = "engine_error"


class NoOutput(MeasureError):
    """The stream finished without a single chunk of generated text, so TTFT is undefined."""

    kind = "no_output"


class Overrun(MeasureError):
    """The engine kept generating far past ``max_tokens`` (it ignores the limit)."""

    kind = "overrun"


class Cancelled(MeasureError):
    """The run was cancelled or hit its wall-clock cap while this request was in flight."""

    kind = "cancelled"


class ClientError(MeasureError):
    """A failure inside this library; reported like any other so the run still finishes."""

    kind = "client_error"


@dataclass(frozen=True, slots=True)
class Finding:
    """A non-fatal finding about a request whose timings are still valid."""

    kind: str
    message: str

    def to_dict(self) -> dict[str, str]:
        return {"kind": self.kind, "message": self.message}


# Non-fatal finding kinds, named once so the summary and the UI agree on them.
USAGE_MISSING = "usage_missing"
LENGTH_MISMATCH = "length_mismatch"
RETRIED = "retried_before_first_byte"


class InvalidSpec(ValueError):
    """The run was asked for something impossible (bad URL, negative counts...)."""
