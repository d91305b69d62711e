"""Wire formats: request bodies and incremental stream parsers.

Two families are spoken. OpenAI-compatible servers (vLLM, llama.cpp, most proxies) stream
Server-Sent Events: ``data: {json}`` blocks separated by a blank line, ended by
``data: [DONE]``. Ollama's native API streams NDJSON: one JSON object per line, the last with
``"done": true`` and the server-side timings.

The parsers are incremental because bytes arrive in arbitrary pieces: an event may be split
across TCP segments, or several may share one. They only ever see bytes, so they are the same
whatever HTTP client feeds them, and cheap enough for hundreds of concurrent streams (one
``json.loads`` per event, no per-byte Python loop).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from workers.measure.errors import MalformedStream


class Api(StrEnum):
    OPENAI_CHAT = "openai-chat"
    OPENAI_COMPLETIONS = "openai-completions"
    OLLAMA_GENERATE = "ollama-generate"
    OLLAMA_CHAT = "ollama-chat"

    @property
    def path(self) -> str:
        return _PATHS[self]

    @property
    def is_chat(self) -> bool:
        return self in (Api.OPENAI_CHAT, Api.OLLAMA_CHAT)

    @property
    def is_ollama(self) -> bool:
        return self in (Api.OLLAMA_GENERATE, Api.OLLAMA_CHAT)


_PATHS = {
    Api.OPENAI_CHAT: "/v1/chat/completions",
    Api.OPENAI_COMPLETIONS: "/v1/completions",
    Api.OLLAMA_GENERATE: "/api/generate",
    Api.OLLAMA_CHAT: "/api/chat",
}


def build_body(
    *,
    api: Api,
    model: str,
    prompt: str,
    max_tokens: int,
    ignore_eos: bool,
    include_usage: bool,
    cache_prompt: bool | None = None,
    extra: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The JSON body of one streamed generation request.

    ``ignore_eos``/``min_tokens``, ``stream_options`` and ``cache_prompt`` are sent only when asked, because
    strict OpenAI-compatible servers reject fields they do not know; whether a target accepts
    them is a capability found by the probe.
    """
    body: dict[str, Any]
    if api.is_ollama:
        body = {"model": model, "stream": True, "options": {"num_predict": max_tokens}}
        if api is Api.OLLAMA_CHAT:
            body["messages"] = [{"role": "user", "content": prompt}]
        else:
            body["prompt"] = prompt
    else:
        body = {"model": model, "stream": True, "max_tokens": max_tokens}
        if api is Api.OPENAI_CHAT:
            body["messages"] = [{"role": "user", "content": prompt}]
        else:
            body["prompt"] = prompt
        if include_usage:
            body["stream_options"] = {"include_usage": True}
        if ignore_eos:
            # vLLM and llama.cpp both honour ignore_eos; min_tokens is vLLM's belt-and-braces
            # so the output length is what was asked even if a stop string would fire.
            body["ignore_eos"] = True
            body["min_tokens"] = max_tokens
        if cache_prompt is not None:
            # llama.cpp reuses the longest prefix its slot still holds unless told not to.
            body["cache_prompt"] = cache_prompt
    if extra:
        body.update(extra)
    return body


@dataclass(slots=True)
class StreamEvent:
    """What one SSE event or NDJSON line said, reduced to what measurement needs."""

    text: str = ""
    done: bool = False
    finish_reason: str | None = None
    prompt_tokens: int | None = None
    output_tokens: int | None = None
    # Where output_tokens came from: "usage" (OpenAI usage), "timings" (llama.cpp),
    # "ollama" (eval_count).
    tokens_source: str | None = None
    server: dict[str, Any] | None = None
    error: str | None = None


class SSEDecoder:
    """Incremental Server-Sent Events decoder yielding each event's joined ``data`` payload."""

    __slots__ = ("_buf", "_event_type", "_pending_cr")

    def __init__(self) -> None:
        self._buf = b""
        self._pending_cr = False
        self._event_type = b""

    def feed(self, data: bytes) -> list[tuple[bytes, bytes]]:
        """Return complete events as ``(event_type, data)``; keep any partial tail."""
        if self._pending_cr:
            data = b"\r" + data
            self._pending_cr = False
        if b"\r" in data:
            # A CR at the very end may be the first half of a CRLF split across reads.
            if data.endswith(b"\r"):
                data = data[:-1]
                self._pending_cr = True
            data = data.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
        buf = self._buf + data if self._buf else data
        out: list[tuple[bytes, bytes]] = []
        start = 0
        while True:
            end = buf.find(b"\n\n", start)
            if end < 0:
                break
            self._dispatch(buf[start:end], out)
            start = end + 2
        self._buf = buf[start:]
        return out

    def close(self) -> list[tuple[bytes, bytes]]:
        """Flush at end of stream: a last event without its blank line still counts."""
        out: list[tuple[bytes, bytes]] = []
        tail = self._buf.strip(b"\n")
        self._buf = b""
        if tail:
            self._dispatch(tail, out)
        return out

    def _dispatch(self, block: bytes, out: list[tuple[bytes, bytes]]) -> None:
        if block[:6] == b"data: " and b"\n" not in block:
            # The shape of nearly every event from every server: one data line.
            out.append((b"", block[6:]))
            return
        data_lines: list[bytes] = []
        event_type = b""
        for line in block.split(b"\n"):
            if not line or line[0] == 0x3A:  # ":" starts a comment (keep-alive pings)
                continue
            field, sep, value = line.partition(b":")
            if not sep:
                continue
            if value[:1] == b" ":
                value = value[1:]
            if field == b"data":
                data_lines.append(value)
            elif field == b"event":
                event_type = value
        if data_lines:
            out.append((event_type, b"\n".join(data_lines)))


class NDJSONDecoder:
    """Incremental newline-delimited JSON decoder yielding each non-empty line."""

    __slots__ = ("_buf",)

    def __init__(self) -> None:
        self._buf = b""

    def feed(self, data: bytes) -> list[bytes]:
        buf = self._buf + data if self._buf else data
        if b"\n" not in buf:
            self._buf = buf
            return []
        *lines, self._buf = buf.split(b"\n")
        return [line for line in (raw.strip() for raw in lines) if line]

    def close(self) -> list[bytes]:
        tail = self._buf.strip()
        self._buf = b""
        return [tail] if tail else []


_decode = json.JSONDecoder().decode


def _loads(payload: bytes) -> dict[str, Any]:
    try:
        # Decoding to str first skips json.loads' encoding sniffing on every event.
        obj = _decode(payload.decode("utf-8"))
    except (ValueError, UnicodeDecodeError) as exc:
        snippet = payload[:120].decode("utf-8", "replace")
        raise MalformedStream(f"not JSON: {snippet!r} ({exc})") from None
    if not isinstance(obj, dict):
        raise MalformedStream(f"expected a JSON object, got {type(obj).__name__}")
    return obj


def _error_text(error: Any) -> str:
    if isinstance(error, dict):
        return str(error.get("message") or error.get("msg") or json.dumps(error))
    return str(error)


def _openai_event(obj: dict[str, Any], *, chat: bool) -> StreamEvent:
    event = StreamEvent()
    error = obj.get("error")
    if error:
        event.error = _error_text(error)
        return event
    choices = obj.get("choices")
    if choices:
        choice = choices[0]
        if not isinstance(choice, dict):
            raise MalformedStream("a choice is not a JSON object")
        if chat:
            delta = choice.get("delta") or {}
            # Reasoning models stream their thinking under another key; those are generated
            # tokens too, so they count for TTFT and ITL.
            event.text = (
                (delta.get("content") or "") + (delta.get("reasoning_content") or "") + (delta.get("reasoning") or "")
            )
        else:
            event.text = choice.get("text") or ""
        event.finish_reason = choice.get("finish_reason")
    usage = obj.get("usage")
    if isinstance(usage, dict):
        event.prompt_tokens = usage.get("prompt_tokens")
        event.output_tokens = usage.get("completion_tokens")
        event.tokens_source = "usage"
    timings = obj.get("timings")
    if isinstance(timings, dict):
        event.server = llamacpp_server_split(timings)
        if event.output_tokens is None and timings.get("predicted_n") is not None:
            event.output_tokens = int(timings["predicted_n"])
            event.prompt_tokens = timings.get("prompt_n")
            event.tokens_source = "timings"
    return event


def llamacpp_server_split(timings: dict[str, Any]) -> dict[str, Any]:
    def seconds(key: str) -> float | None:
        value = timings.get(key)
        return float(value) / 1000.0 if value is not None else None

    return {
        "source": "llamacpp_timings",
        "prefill_s": seconds("prompt_ms"),
        "decode_s": seconds("predicted_ms"),
        "prompt_tokens": timings.get("prompt_n"),
        "output_tokens": timings.get("predicted_n"),
        "cached_prompt_tokens": timings.get("cache_n"),
    }


def _ollama_event(obj: dict[str, Any], *, chat: bool) -> StreamEvent:
    event = StreamEvent()
    error = obj.get("error")
    if error:
        event.error = _error_text(error)
        return event
    if chat:
        message = obj.get("message") or {}
        event.text = (message.get("content") or "") + (message.get("thinking") or "")
    else:
        event.text = (obj.get("response") or "") + (obj.get("thinking") or "")
    if obj.get("done") is True:
        event.done = True
        event.finish_reason = obj.get("done_reason")
        if obj.get("eval_count") is not None:
            event.output_tokens = int(obj["eval_count"])
            event.tokens_source = "ollama"
        event.prompt_tokens = obj.get("prompt_eval_count")

        def seconds(key: str) -> float | None:
            value = obj.get(key)
            return float(value) / 1e9 if value is not None else None

        event.server = {
            "source": "ollama",
            "prefill_s": seconds("prompt_eval_duration"),
            "decode_s": seconds("eval_duration"),
            "load_s": seconds("load_duration"),
            "total_s": seconds("total_duration"),
            "prompt_tokens": obj.get("prompt_eval_count"),
            "output_tokens": obj.get("eval_count"),
        }
    return event


class StreamParser:
    """Bytes in, :class:`StreamEvent` out, for one response of one API."""

    __slots__ = ("_chat", "_ndjson", "_sse", "api")

    def __init__(self, api: Api) -> None:
        self.api = api
        self._chat = api.is_chat
        self._sse = None if api.is_ollama else SSEDecoder()
        self._ndjson = NDJSONDecoder() if api.is_ollama else None

    def feed(self, data: bytes) -> list[StreamEvent]:
        if self._sse is not None:
            return self._sse_events(self._sse.feed(data))
        assert self._ndjson is not None
        return [_ollama_event(_loads(line), chat=self._chat) for line in self._ndjson.feed(data)]

    def close(self) -> list[StreamEvent]:
        if self._sse is not None:
            return self._sse_events(self._sse.close())
        assert self._ndjson is not None
        return [_ollama_event(_loads(line), chat=self._chat) for line in self._ndjson.close()]

    def _sse_events(self, raw: list[tuple[bytes, bytes]]) -> list[StreamEvent]:
        events: list[StreamEvent] = []
        for event_type, payload in raw:
            if payload == b"[DONE]":
                events.append(StreamEvent(done=True))
                continue
            if event_type == b"error":
                events.append(StreamEvent(error=payload.decode("utf-8", "replace")))
                continue
            events.append(_openai_event(_loads(payload), chat=self._chat))
        return events


def error_message_from_body(body: bytes) -> str:
    """The human part of an engine's error response, whatever shape its JSON takes."""
    text = body.decode("utf-8", "replace").strip()
    try:
        obj = json.loads(text)
    except ValueError:
        return text[:500] or "(empty body)"
    if isinstance(obj, dict):
        for key in ("error", "detail", "message"):
            if obj.get(key):
                return _error_text(obj[key])[:500]
    return text[:500]
