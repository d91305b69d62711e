"""``python -m workers.measure`` and ``manage.py measure``: same flags, table, JSON, exit codes."""

from __future__ import annotations

import io
import json
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from workers.measure.cli import main
from workers.measure.result import SCHEMA_VERSION
from workers.measure.scripted_engine import EngineConfig, run_in_thread, spawn

ROOT = Path(__file__).resolve().parents[3]


def _args(url: str, *extra: str) -> list[str]:
    return [
        "--base-url",
        url,
        "--api",
        "openai-chat",
        "--model",
        "scripted-model",
        "--prompt-tokens",
        "64",
        "--max-tokens",
        "8",
        "--requests",
        "6",
        *extra,
    ]


def test_cli_prints_the_summary_table_and_writes_the_json(tmp_path, capsys):
    out = tmp_path / "result.json"
    with run_in_thread(EngineConfig(flavor="vllm", ttft_ms=10.0, gap_ms=2.0)) as engine:
        code = main(
            _args(
                engine.base_url,
                "--concurrency",
                "3",
                "--warmup",
                "1",
                "--ignore-eos",
                "--slo-ttft-ms",
                "500",
                "--json-out",
                str(out),
            )
        )
    printed = capsys.readouterr().out
    assert code == 0
    assert "(vllm 0.0.0-scripted)" in printed
    assert "closed loop, concurrency 3, 6 requests (+1 warm-up)" in printed
    for row in ("TTFT (ms)", "TPOT (ms)", "ITL (ms)", "E2E (ms)", "output tokens"):
        assert row in printed
    assert "Goodput     6/6 requests meet TTFT <= 500 ms (100%)" in printed
    data = json.loads(out.read_text())
    assert data["schema_version"] == SCHEMA_VERSION
    assert data["engine"]["engine"] == "vllm"
    assert len(data["requests"]) == 7 and data["summary"]["requests"]["succeeded"] == 6
    assert all(r["output_tokens"] == 8 for r in data["requests"])


def test_cli_sweep_shows_ttft_rising_with_prompt_length(capsys):
    config = EngineConfig(ttft_ms=5.0, ttft_per_prompt_token_ms=0.1, gap_ms=1.0)
    with run_in_thread(config) as engine:
        code = main(_args(engine.base_url, "--requests", "2", "--sweep", "prompt_tokens=16,512", "--quiet"))
    assert code == 0
    rows = [line.split() for line in capsys.readouterr().out.splitlines()]
    table = {row[0]: float(row[1]) for row in rows if row and row[0] in ("16", "512")}
    assert table["512"] - table["16"] == pytest.approx(49.6, abs=5)


def test_cli_bad_input_and_unreachable_target_exit_codes(capsys):
    assert main(_args("http://127.0.0.1:9", "--sweep", "temperature=1,2", "--engine", "vllm")) == 2
    assert "sweep parameter must be one of" in capsys.readouterr().err
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()
    assert main(_args(f"http://127.0.0.1:{port}")) == 1
    assert "not reachable" in capsys.readouterr().err


def test_manage_py_measure_has_the_same_flags():
    stdout, stderr = io.StringIO(), io.StringIO()
    with run_in_thread(EngineConfig(ttft_ms=5.0, gap_ms=1.0)) as engine:
        call_command(
            "measure",
            *_args(engine.base_url, "--engine", "openai-compatible"),
            stdout=stdout,
            stderr=stderr,
        )
        assert "TTFT (ms)" in stdout.getvalue()
        broken_engine = run_in_thread(EngineConfig(fault="http_error", error_status=503))
        with broken_engine as broken, pytest.raises(CommandError) as failure:
            call_command(
                "measure",
                *_args(broken.base_url, "--engine", "vllm"),
                stdout=io.StringIO(),
                stderr=io.StringIO(),
            )
    assert failure.value.returncode == 1


def test_python_dash_m_runs_against_a_subprocess_engine(tmp_path):
    out = tmp_path / "r.json"
    with spawn(EngineConfig(ttft_ms=5.0, gap_ms=1.0, flavor="llamacpp")) as url:
        done = subprocess.run(
            [sys.executable, "-m", "workers.measure", *_args(url, "--json-out", str(out))],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
    assert done.returncode == 0, done.stderr
    result = json.loads(out.read_text())
    assert result["target"]["capabilities"]["fresh_connection_per_stream"] is True
    assert result["summary"]["requests"]["succeeded"] == 6


def test_each_run_draws_a_fresh_seed_prints_it_and_seed_repeats_the_prompts(tmp_path, capsys):
    config = EngineConfig(flavor="vllm", ttft_ms=2.0, gap_ms=1.0, prefix_cache=True)
    results = []
    with run_in_thread(config) as engine:
        for n, extra in enumerate(((), (), ("--seed", "41"), ("--seed", "41"))):
            out = tmp_path / f"{n}.json"
            assert main(_args(engine.base_url, "--quiet", "--json-out", str(out), *extra)) == 0
            results.append((capsys.readouterr().out, json.loads(out.read_text())))
    seeds = [result["spec"]["seed"] for _, result in results]
    assert seeds[0] != seeds[1] and seeds[2:] == [41, 41]
    for printed, result in results:
        assert f"Seed     {result['spec']['seed']}  (--seed {result['spec']['seed']} repeats these prompts" in printed
    # Fresh seeds share nothing with any earlier run; the repeated seed is served from the cache.
    assert [r["summary"]["prefix_cache"]["beyond_template_tokens"] for _, r in results[:3]] == [0, 0, 0]
    assert results[3][1]["summary"]["prefix_cache"]["hit_rate"] > 0.5
    assert "Prefix cache 0% of" in results[0][0]
