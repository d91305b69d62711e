"""Every fault becomes a typed, counted error carrying the engine's message; the run goes on.

Each test drives a real scripted engine over HTTP with one fault switched on for every other
request (or all of them), with short timeouts, and checks three things: the failing requests
carry the right error kind and message, the healthy ones are measured normally, and nothing
hangs (each run is timed).
"""

from __future__ import annotations

import contextlib
import socket
import threading
import time

import pytest

from workers.measure import Api, RunSpec, measure
from workers.measure.scripted_engine import EngineConfig, run_in_thread

FAST = {"ttft_ms": 5.0, "gap_ms": 2.0}


def _run(make_target, config: EngineConfig, *, api=Api.OPENAI_CHAT, url=None, requests=4, **spec_kw):
    spec_kw = {
        "requests": requests,
        "max_tokens": 8,
        "prompt_tokens": 16,
        "read_timeout_s": 0.4,
        "timeout_s": 3.0,
        "connect_timeout_s": 1.0,
        "server_metrics": False,
        "retries_before_first_byte": 1,
        **spec_kw,
    }
    with run_in_thread(config) as engine:
        target = make_target(url or engine.base_url, api, tokenize="vllm")
        started = time.monotonic()
        result = measure(target=target, spec=RunSpec(**spec_kw))
        return result, time.monotonic() - started


def _errors(result):
    return [r.error for r in result.measured if r.error]


@pytest.mark.parametrize(
    ("fault", "kind", "text"),
    [
        ("cut", "stream_cut", "before the end of the response body (after 3 content"),
        ("truncate", "stream_cut", "without its end marker"),
        ("stall", "stall_timeout", "silent"),
        ("endless", "overrun", "ignores the limit"),
        ("malformed", "malformed", "not JSON"),
        ("error_event", "engine_error", "scripted engine failure"),
        ("slow_headers", "header_timeout", "no response headers"),
    ],
)
@pytest.mark.parametrize("api", [Api.OPENAI_CHAT, Api.OLLAMA_GENERATE])
def test_mid_stream_faults_are_typed_and_the_run_goes_on(make_target, api, fault, kind, text):
    config = EngineConfig(**FAST, fault=fault, fault_every=2, slow_headers_ms=1500.0)
    result, elapsed = _run(make_target, config, api=api)
    errors = _errors(result)
    assert [e["kind"] for e in errors] == [kind, kind], errors
    assert all(text in e["message"] for e in errors), errors
    assert result.summary["errors_by_kind"] == {kind: 2}
    ok = [r for r in result.measured if r.ok]
    assert len(ok) == 2 and all(r.output_tokens == 8 for r in ok)
    assert result.status == "succeeded"
    assert elapsed < 3.0


@pytest.mark.parametrize(("status", "kind"), [(400, "http_4xx"), (429, "http_4xx"), (503, "http_5xx")])
@pytest.mark.parametrize("api", [Api.OPENAI_COMPLETIONS, Api.OLLAMA_CHAT])
def test_http_errors_carry_status_and_the_engines_message(make_target, api, status, kind):
    config = EngineConfig(
        **FAST,
        fault="http_error",
        fault_every=2,
        error_status=status,
        error_message="KV cache is full",
    )
    result, _ = _run(make_target, config, api=api)
    errors = _errors(result)
    assert [(e["kind"], e["status"]) for e in errors] == [(kind, status)] * 2
    assert all(e["message"] == f"HTTP {status}: KV cache is full" for e in errors)


def test_a_stream_that_never_ends_is_stopped_by_the_total_timeout(make_target):
    config = EngineConfig(ttft_ms=5.0, gap_ms=50.0)
    result, elapsed = _run(make_target, config, requests=1, max_tokens=200, timeout_s=0.5)
    (error,) = _errors(result)
    assert error["kind"] == "total_timeout"
    assert "0.5 s limit" in error["message"]
    assert elapsed < 2.0


def test_missing_usage_is_counted_and_tokens_fall_back_to_chunks(make_target):
    config = EngineConfig(**FAST, fault="no_usage", fault_every=2)
    result, _ = _run(make_target, config)
    sources = sorted(r.output_tokens_source for r in result.measured)
    assert sources == ["chunks", "chunks", "usage", "usage"]
    assert all(r.output_tokens == 8 for r in result.measured)
    assert result.summary["warnings_by_kind"] == {"usage_missing": 2}
    assert result.summary["output_tokens_source"] == {"usage": 2, "chunks": 2}
    assert any("counted from streamed chunks" in note for note in result.notes)


def test_a_connection_dropped_before_any_response_is_retried_then_reported(make_target):
    always = EngineConfig(**FAST, fault="drop")
    result, elapsed = _run(make_target, always, requests=2)
    errors = _errors(result)
    assert [e["kind"] for e in errors] == ["disconnected", "disconnected"]
    assert "2 tries" in errors[0]["message"]
    assert elapsed < 3.0
    # Every second request dropped: the retry on a new connection measures it after all.
    flaky, _ = _run(make_target, EngineConfig(**FAST, fault="drop", fault_every=2), requests=3)
    assert all(r.ok for r in flaky.measured)
    assert sum(r.retries for r in flaky.measured) >= 1


def test_unreachable_target_is_typed_per_request(make_target):
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()  # nothing listens there now
    with run_in_thread(EngineConfig(**FAST)):
        target = make_target(f"http://127.0.0.1:{port}", Api.OPENAI_COMPLETIONS)
        result = measure(target=target, spec=RunSpec(requests=3, max_tokens=4, server_metrics=False))
    assert [e["kind"] for e in _errors(result)] == ["unreachable"] * 3
    assert "Connect call failed" in _errors(result)[0]["message"] or "refused" in (
        _errors(result)[0]["message"].lower()
    )
    assert result.status == "failed"


def test_dns_failure_is_typed(make_target, monkeypatch):
    def no_such_host(*args, **kwargs):
        raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")

    # Resolution is faked so the test sends no DNS query anywhere.
    monkeypatch.setattr(socket, "getaddrinfo", no_such_host)
    target = make_target("http://no-such-host.invalid:8000", Api.OPENAI_CHAT)
    result = measure(target=target, spec=RunSpec(requests=1, max_tokens=4, server_metrics=False))
    (error,) = _errors(result)
    assert error["kind"] == "dns"
    assert "no-such-host.invalid" in error["message"]


def test_tls_failure_is_typed(make_target):
    # A plain-HTTP server answering the TLS ClientHello with a plaintext 400, as uvicorn or
    # nginx would: the client's handshake fails at once.
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    server.settimeout(5)

    def answer_plaintext() -> None:
        with contextlib.suppress(OSError):
            while True:
                conn, _ = server.accept()
                conn.recv(4096)
                conn.sendall(b"HTTP/1.1 400 Bad Request\r\ncontent-length: 0\r\n\r\n")
                conn.close()

    thread = threading.Thread(target=answer_plaintext, daemon=True)
    thread.start()
    try:
        target = make_target(f"https://127.0.0.1:{server.getsockname()[1]}", Api.OPENAI_CHAT)
        started = time.monotonic()
        result = measure(target=target, spec=RunSpec(requests=1, max_tokens=4, server_metrics=False))
    finally:
        server.close()
    (error,) = _errors(result)
    assert error["kind"] == "tls"
    assert time.monotonic() - started < 5


def test_error_budget_stops_the_run(make_target):
    config = EngineConfig(**FAST, fault="http_error", error_status=500)
    result, _ = _run(make_target, config, requests=30, max_errors=3)
    assert result.status == "failed"
    assert result.stop_reason == "error budget reached: 3 failed requests"
    assert result.summary["errors_by_kind"] == {"http_5xx": 3}
    assert result.summary["requests"]["total"] == 3
