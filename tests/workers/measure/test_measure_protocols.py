"""Wire formats: request bodies and the incremental SSE / NDJSON parsers."""

from __future__ import annotations

import json

import pytest

from workers.measure.errors import MalformedStream
from workers.measure.protocols import (
    Api,
    NDJSONDecoder,
    SSEDecoder,
    StreamParser,
    build_body,
    error_message_from_body,
)

CHAT_STREAM = (
    b'data: {"choices":[{"index":0,"delta":{"role":"assistant","content":""}}]}\n\n'
    b": keep-alive comment\n\n"
    b'data: {"choices":[{"index":0,"delta":{"content":"Hel"}}]}\n\n'
    b'data: {"choices":[{"index":0,"delta":{"content":""}}]}\n\n'
    b'data: {"choices":[{"index":0,"delta":{"content":"lo"},"finish_reason":null}]}\n\n'
    b'data: {"choices":[{"index":0,"delta":{},"finish_reason":"length"}]}\n\n'
    b'data: {"choices":[],"usage":{"prompt_tokens":7,"completion_tokens":2}}\n\n'
    b"data: [DONE]\n\n"
)


def _events(api: Api, pieces: list[bytes]):
    parser = StreamParser(api)
    events = []
    for piece in pieces:
        events += parser.feed(piece)
    return events + parser.close()


def test_chat_stream_reduced_to_text_usage_and_done() -> None:
    events = _events(Api.OPENAI_CHAT, [CHAT_STREAM])
    assert [e.text for e in events if e.text] == ["Hel", "lo"]
    assert events[0].text == ""  # the role-only chunk carries no generated text
    usage = [e for e in events if e.tokens_source == "usage"]
    assert (usage[0].prompt_tokens, usage[0].output_tokens) == (7, 2)
    assert usage[0].text == ""  # a usage-only chunk is not a token
    assert [e.finish_reason for e in events if e.finish_reason] == ["length"]
    assert events[-1].done


@pytest.mark.parametrize("size", [1, 2, 3, 7, 64])
def test_sse_gives_same_events_whatever_the_split(size: int) -> None:
    pieces = [CHAT_STREAM[i : i + size] for i in range(0, len(CHAT_STREAM), size)]
    whole = _events(Api.OPENAI_CHAT, [CHAT_STREAM])
    assert _events(Api.OPENAI_CHAT, pieces) == whole


def test_sse_handles_crlf_split_between_reads_and_multiline_data() -> None:
    decoder = SSEDecoder()
    stream = b'data: {"a":\r\ndata: 1}\r\n\r\nevent: error\r\ndata: boom\r\n\r\n'
    out = []
    for i in range(len(stream)):
        out += decoder.feed(stream[i : i + 1])
    assert out == [(b"", b'{"a":\n1}'), (b"error", b"boom")]


def test_sse_error_event_and_error_object_become_errors() -> None:
    events = _events(
        Api.OPENAI_COMPLETIONS,
        [b"event: error\ndata: overloaded\n\n", b'data: {"error":{"message":"KV full"}}\n\n'],
    )
    assert [e.error for e in events] == ["overloaded", "KV full"]


def test_sse_last_event_without_blank_line_is_kept_at_close() -> None:
    events = _events(Api.OPENAI_COMPLETIONS, [b'data: {"choices":[{"text":"x"}]}\n\ndata: [DONE]'])
    assert events[0].text == "x"
    assert events[-1].done


def test_completions_llamacpp_timings_give_tokens_and_server_split() -> None:
    final = {
        "choices": [{"text": "", "finish_reason": "length"}],
        "timings": {"prompt_n": 12, "prompt_ms": 30.0, "predicted_n": 5, "predicted_ms": 20.0},
    }
    events = _events(Api.OPENAI_COMPLETIONS, [b"data: " + json.dumps(final).encode() + b"\n\n"])
    assert events[0].output_tokens == 5
    assert events[0].tokens_source == "timings"
    assert events[0].server["prefill_s"] == pytest.approx(0.030)
    assert events[0].server["decode_s"] == pytest.approx(0.020)


def test_reasoning_text_counts_as_generated_text() -> None:
    chunk = b'data: {"choices":[{"delta":{"reasoning_content":"hmm"}}]}\n\n'
    assert _events(Api.OPENAI_CHAT, [chunk])[0].text == "hmm"


def test_malformed_sse_payload_raises_typed_error() -> None:
    with pytest.raises(MalformedStream, match="not JSON"):
        _events(Api.OPENAI_CHAT, [b'data: {"choices": [\n\n'])
    with pytest.raises(MalformedStream, match="JSON object"):
        _events(Api.OPENAI_CHAT, [b"data: [1, 2]\n\n"])


def test_ollama_ndjson_split_anywhere_with_final_server_split() -> None:
    lines = [
        {"model": "m", "response": "Hi", "done": False},
        {"model": "m", "response": " there", "done": False},
        {
            "model": "m",
            "response": "",
            "done": True,
            "done_reason": "length",
            "prompt_eval_count": 9,
            "prompt_eval_duration": 40_000_000,
            "eval_count": 2,
            "eval_duration": 10_000_000,
            "load_duration": 1_000_000,
        },
    ]
    raw = b"".join(json.dumps(line).encode() + b"\n" for line in lines)
    for size in (1, 5, len(raw)):
        events = _events(Api.OLLAMA_GENERATE, [raw[i : i + size] for i in range(0, len(raw), size)])
        assert [e.text for e in events] == ["Hi", " there", ""]
        final = events[-1]
        assert final.done and final.output_tokens == 2 and final.prompt_tokens == 9
        assert final.server["prefill_s"] == pytest.approx(0.040)
        assert final.server["decode_s"] == pytest.approx(0.010)
        assert final.server["load_s"] == pytest.approx(0.001)


def test_ollama_chat_and_error_line() -> None:
    raw = b'{"message":{"role":"assistant","content":"ok"},"done":false}\r\n{"error":"no model"}\n'
    events = _events(Api.OLLAMA_CHAT, [raw])
    assert events[0].text == "ok"
    assert events[1].error == "no model"


def test_ndjson_decoder_skips_blank_lines() -> None:
    decoder = NDJSONDecoder()
    assert decoder.feed(b'{"a":1}\n\n  \n{"b"') == [b'{"a":1}']
    assert decoder.close() == [b'{"b"']


def test_bodies_send_optional_fields_only_when_supported() -> None:
    plain = build_body(
        api=Api.OPENAI_CHAT,
        model="m",
        prompt="p",
        max_tokens=8,
        ignore_eos=False,
        include_usage=False,
    )
    assert plain == {
        "model": "m",
        "stream": True,
        "max_tokens": 8,
        "messages": [{"role": "user", "content": "p"}],
    }
    full = build_body(
        api=Api.OPENAI_COMPLETIONS,
        model="m",
        prompt="p",
        max_tokens=8,
        ignore_eos=True,
        include_usage=True,
    )
    assert full["prompt"] == "p"
    assert full["stream_options"] == {"include_usage": True}
    assert full["ignore_eos"] is True and full["min_tokens"] == 8
    ollama = build_body(
        api=Api.OLLAMA_GENERATE,
        model="m",
        prompt="p",
        max_tokens=8,
        ignore_eos=True,
        include_usage=True,
    )
    assert ollama == {"model": "m", "stream": True, "options": {"num_predict": 8}, "prompt": "p"}


def test_error_message_from_various_bodies() -> None:
    assert error_message_from_body(b'{"error":{"message":"too long"}}') == "too long"
    assert error_message_from_body(b'{"error":"model not found"}') == "model not found"
    assert error_message_from_body(b'{"detail":"Not authenticated"}') == "Not authenticated"
    assert error_message_from_body(b"Bad Gateway") == "Bad Gateway"
    assert error_message_from_body(b"") == "(empty body)"
