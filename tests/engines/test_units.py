"""Fast checks of the engine package's pure parts: no build, no server."""

from pathlib import Path

import numpy as np
import pytest

from engines import hwprobe
from engines.llamacpp import build, models
from engines.local import EngineConfig, server_command, write_preset


def test_missing_compiler_gives_one_line_install_hint(monkeypatch, tmp_path):
    monkeypatch.setenv("PREFILL_ENGINE_CACHE", str(tmp_path))
    monkeypatch.setattr(build.shutil, "which", lambda name: None)
    with pytest.raises(build.BuildError) as caught:
        build.ensure_llama_server(version="0.0.0-test")
    message = str(caught.value)
    assert "\n" not in message
    assert "cmake" in message
    assert "apt-get install cmake g++" in message


def test_cache_root_follows_env_and_keys_by_version(monkeypatch, tmp_path):
    monkeypatch.setenv("PREFILL_ENGINE_CACHE", str(tmp_path))
    assert build.binary_path(version="9.9.9") == tmp_path / "9.9.9" / "bin" / "llama-server"
    monkeypatch.delenv("PREFILL_ENGINE_CACHE")
    assert build.cache_root() == Path.home() / ".cache" / "prefill" / "llama.cpp"


def test_cached_binary_needs_matching_flags_and_cpu(monkeypatch, tmp_path):
    monkeypatch.setenv("PREFILL_ENGINE_CACHE", str(tmp_path))
    root = tmp_path / "1.0"
    (root / "bin").mkdir(parents=True)
    (root / "bin" / "llama-server").write_text("binary")
    flags = build.cmake_flags(native=True)
    stamp = root / "build.json"
    stamp.write_text(f'{{"cmake_flags": {flags!r}, "cpu": "{build.cpu_signature()}"}}'
                     .replace("'", '"'))
    assert build.ensure_llama_server(version="1.0").built_now is False
    stamp.write_text('{"cmake_flags": [], "cpu": "another-machine"}')
    monkeypatch.setattr(build.shutil, "which", lambda name: None)
    with pytest.raises(build.BuildError):
        build.ensure_llama_server(version="1.0")


SAPPHIRE_RAPIDS_IN_A_VM = {
    "sse4_2", "avx", "avx2", "fma", "f16c", "bmi2", "avx_vnni", "avx512f", "avx512cd", "avx512vl",
    "avx512dq", "avx512bw", "avx512vbmi", "avx512_vnni", "avx512_bf16", "amx_tile", "amx_int8",
    "amx_bf16", "hypervisor",
}


def test_tuned_build_uses_this_cpus_features_but_never_amx(monkeypatch):
    monkeypatch.setattr(build.platform, "machine", lambda: "x86_64")
    flags = build.cmake_flags(native=True, flags=SAPPHIRE_RAPIDS_IN_A_VM)
    assert "-DGGML_AVX512=ON" in flags
    assert "-DGGML_AVX512_BF16=ON" in flags
    assert {"-DGGML_AMX_TILE=OFF", "-DGGML_AMX_INT8=OFF", "-DGGML_AMX_BF16=OFF"} <= set(flags)
    assert "-DLLAMA_USE_PREBUILT_UI=OFF" in flags
    assert "-DBUILD_SHARED_LIBS=OFF" in flags
    older = build.cmake_flags(native=True, flags={"sse4_2", "avx", "avx2", "fma", "f16c"})
    assert "-DGGML_AVX512=OFF" in older
    assert "-DGGML_BMI2=OFF" in older


def test_portable_build_spells_out_every_option(monkeypatch):
    monkeypatch.setattr(build.platform, "machine", lambda: "x86_64")
    portable = build.cmake_flags(native=False)
    tuned = build.cmake_flags(native=True, flags=SAPPHIRE_RAPIDS_IN_A_VM)
    # A reused build tree keeps options that are not passed, so both lists name the same ones.
    assert [f.split("=")[0] for f in portable] == [f.split("=")[0] for f in tuned]
    assert "-DGGML_AVX2=ON" in portable
    assert "-DGGML_AVX512=OFF" in portable


def test_arm_builds_tune_natively(monkeypatch):
    monkeypatch.setattr(build.platform, "machine", lambda: "aarch64")
    assert "-DGGML_NATIVE=ON" in build.cmake_flags(native=True, flags={"asimd", "fp"})


BANNED = np.array([0, 1, 2, 3, 100])


@pytest.mark.parametrize("name", ["token_embd.weight", "output.weight", "blk.0.attn_q.weight",
                                  "blk.0.attn_output.weight", "blk.3.ffn_down.weight"])
def test_sentinel_dimension_is_never_touched_by_layers(name):
    spec = models.SPECS["60m"]
    shape = dict(models.tensor_shapes(spec=spec, vocab_size=200))[name]
    values = models.make_tensor(name=name, shape=shape, spec=spec, banned_ids=BANNED)
    if name == "token_embd.weight":
        assert np.all(values[:, 0] == models.SENTINEL)
    elif name == "output.weight":
        assert np.all(values[BANNED, 0] == -models.BAN_WEIGHT)
        allowed = np.setdiff1d(np.arange(200), BANNED)
        assert np.all(values[allowed, 0] == 0.0)
    elif name.endswith(("attn_output.weight", "ffn_down.weight")):
        assert np.all(values[0, :] == 0.0)
        assert np.any(values[1, :] != 0.0)
    else:
        assert np.all(values[:, 0] == 0.0)
        assert np.any(values[:, 1] != 0.0)


def test_banned_tokens_lose_by_hundreds_of_nats_through_the_final_norm():
    """Through RMSNorm the sentinel dominates, so banned logits sit far below every other."""
    spec = models.SPECS["60m"]
    vocab = 400
    shapes = dict(models.tensor_shapes(spec=spec, vocab_size=vocab))
    embd = models.make_tensor(name="token_embd.weight", shape=shapes["token_embd.weight"],
                              spec=spec, banned_ids=BANNED)
    out = models.make_tensor(name="output.weight", shape=shapes["output.weight"], spec=spec,
                             banned_ids=BANNED)
    rng = np.random.default_rng(0)
    # A residual stream that layers have disturbed a lot (everything but dimension 0).
    hidden = embd[rng.integers(0, vocab, size=16)].copy()
    hidden[:, 1:] += rng.standard_normal((16, spec.hidden - 1)).astype(np.float32)
    normed = hidden / np.sqrt(np.mean(hidden**2, axis=1, keepdims=True) + models.RMS_EPS)
    logits = normed @ out.T
    allowed = np.setdiff1d(np.arange(vocab), BANNED)
    assert (logits[:, allowed].min(axis=1) - logits[:, BANNED].max(axis=1)).min() > 300


def test_weights_are_deterministic_and_shared_across_precisions():
    spec = models.SPECS["60m"]
    kwargs = {"name": "blk.1.ffn_up.weight", "shape": (spec.ffn, spec.hidden), "spec": spec,
              "banned_ids": BANNED}
    np.testing.assert_array_equal(models.make_tensor(**kwargs), models.make_tensor(**kwargs))


def test_quantised_sizes_match_ggml_block_layout():
    shape = (64, 512)
    q4 = models.PRECISIONS["q4_0"]
    values = np.ones(shape, dtype=np.float32)
    assert models.encode(values=values, precision=q4).nbytes == models.encoded_nbytes(
        shape=shape, precision=q4) == 64 * 512 // 32 * 18
    f16 = models.PRECISIONS["f16"]
    assert models.encoded_nbytes(shape=shape, precision=f16) == 64 * 512 * 2


def test_model_sizes_are_about_60m_and_250m():
    params = {
        size: sum(int(np.prod(s)) for _, s in models.tensor_shapes(spec=spec, vocab_size=32000))
        for size, spec in models.SPECS.items()
    }
    assert 50e6 < params["60m"] < 70e6
    assert 230e6 < params["250m"] < 270e6


def test_batched_server_uses_unified_kv_sized_per_slot(tmp_path):
    serial = EngineConfig(name="serial", url="http://127.0.0.1:8011", parallel=1, threads=2,
                          ctx_per_slot=4096, default_model="m")
    batched = EngineConfig(name="batched", url="http://127.0.0.1:8012/", parallel=4, threads=2,
                           ctx_per_slot=4096, default_model="m")
    serial_cmd = server_command(binary=tmp_path / "s", config=serial, preset=tmp_path / "p",
                                models_max=6)
    batched_cmd = server_command(binary=tmp_path / "s", config=batched, preset=tmp_path / "p",
                                 models_max=6)
    assert serial_cmd[serial_cmd.index("--parallel") + 1] == "1"
    assert serial_cmd[serial_cmd.index("--ctx-size") + 1] == "4096"
    assert "--kv-unified" not in serial_cmd
    assert batched_cmd[batched_cmd.index("--parallel") + 1] == "4"
    assert "--kv-unified" in batched_cmd
    assert batched_cmd[batched_cmd.index("--kv-unified-per-slot") + 1] == "4096"
    assert batched_cmd[batched_cmd.index("--port") + 1] == "8012"
    assert "--metrics" in batched_cmd


def test_preset_lists_every_model_and_loads_only_the_default(tmp_path):
    infos = [
        models.ModelInfo(name=n, file=f"{n}.gguf", size="60m", precision=p, params=1,
                         file_bytes=1, weight_bytes_per_token=1, kv_bytes_per_token=1, layers=1,
                         hidden=1, heads=1, kv_heads=1, head_dim=1, ffn=1, vocab=1,
                         context_length=1, recipe="r")
        for n, p in (("prefill-60m-f16", "f16"), ("prefill-60m-q4_0", "q4_0"))
    ]
    text = write_preset(path=tmp_path / "m.ini", models=infos, directory=tmp_path,
                        default_model="prefill-60m-q4_0").read_text()
    assert f"model = {tmp_path.resolve() / 'prefill-60m-f16.gguf'}" in text
    sections = text.split("[")[1:]
    loaded = [s.split("]")[0] for s in sections if "load-on-startup = true" in s]
    assert loaded == ["prefill-60m-q4_0"]


def test_hwprobe_counts_read_and_write_bytes(monkeypatch):
    src = np.ones(1_000_000)
    dst = np.zeros_like(src)
    ticks = iter([0.0, 1.0])
    monkeypatch.setattr(hwprobe.time, "perf_counter", lambda: next(ticks))
    assert hwprobe.copy_bandwidth(src=src, dst=dst, threads=1, repeats=1) == 2 * src.nbytes
    assert np.all(dst == 1.0)


def test_hwprobe_reports_this_machine():
    probe = hwprobe.probe_hardware(buffer_bytes=32 * hwprobe.MIB, repeats=2)
    assert probe.usable_cpus >= 1
    assert probe.physical_cores >= 1
    assert probe.cpu_model
    # Any machine that can run the labs copies more than 100 MB/s.
    assert probe.memory_bandwidth_bytes_per_s > 1e8
    assert probe.as_dict()["memory_bandwidth_gb_s"] == round(probe.memory_bandwidth_gb_s, 2)
