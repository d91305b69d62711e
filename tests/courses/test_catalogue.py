# Multiplication and minus signs in learner-facing text and worked arithmetic are intended.
"""The GPU and model catalogues: datasheet and config.json values pinned, and the loader's errors.

Each pinned number was checked against the source named in the row (vendor datasheet or the
model's config.json on Hugging Face); dense figures are half the "with sparsity" headline.
"""

from pathlib import Path

import pytest

from courses.inference.specs import (
    GPUS_FILE,
    MODELS_FILE,
    CatalogueError,
    UnknownSlugError,
    architecture_param_count,
    get_gpu,
    get_model,
    gpus,
    load_gpus,
    load_models,
    models,
)

REQUIRED_GPUS = [
    "l4",
    "a10g",
    "rtx-4090",
    "l40s",
    "a100-40gb",
    "a100-80gb",
    "h100-sxm",
    "h100-pcie",
    "h200",
    "mi300x",
    "b200",
]
REQUIRED_MODELS = [
    "llama-3.2-1b",
    "llama-3.2-3b",
    "llama-3.1-8b",
    "llama-3.1-70b",
    "qwen2.5-7b",
    "qwen2.5-72b",
    "mistral-7b",
    "mixtral-8x7b",
    "deepseek-v3",
    "qwen3-30b-a3b",
    "gpt-oss-120b",
]


def test_catalogues_hold_the_slugs_lessons_use():
    assert set(REQUIRED_GPUS) <= set(gpus())
    assert set(REQUIRED_MODELS) <= set(models())


# (slug, memory bytes, bandwidth B/s, dense 16-bit FLOP/s, dense FP8, dense INT8)
DATASHEET = [
    # L4: 24 GB, 300 GB/s; FP16 242 / FP8 485 / INT8 485 "with sparsity" -> 121 / 242.5 / 242.5.
    ("l4", 24e9, 300e9, 121e12, 242.5e12, 242.5e12),
    # A10G: 24 GB, 600 GB/s, 70 TFLOPS FP16 tensor; no FP8, no published INT8.
    ("a10g", 24e9, 600e9, 70e12, None, None),
    # RTX 4090: 24 GB, 1,008 GB/s; FP16 with FP32 accumulate 165.2, FP8 330.3, INT8 660.6 (dense).
    ("rtx-4090", 24e9, 1008e9, 165.2e12, 330.3e12, 660.6e12),
    # L40S: 48 GB, 864 GB/s; 362.05 | 733 FP8 | 733 INT8 dense.
    ("l40s", 48e9, 864e9, 362.05e12, 733e12, 733e12),
    # A100: 312 dense BF16 (624 sparse), INT8 624 dense, 1,555 / 2,039 GB/s, no FP8.
    ("a100-40gb", 40e9, 1555e9, 312e12, None, 624e12),
    ("a100-80gb", 80e9, 2039e9, 312e12, None, 624e12),
    # H100 SXM: 80 GB HBM3, 3.35 TB/s, 989.4 dense BF16 (1,979 sparse), FP8 1,978.9 dense.
    ("h100-sxm", 80e9, 3.35e12, 989.4e12, 1978.9e12, 1978.9e12),
    # H100 PCIe: 80 GB HBM2e, 2 TB/s, 1,513 / 3,026 sparse -> 756.5 / 1,513 dense.
    ("h100-pcie", 80e9, 2.0e12, 756.5e12, 1513e12, 1513e12),
    # H200: 141 GB HBM3e, 4.8 TB/s, H100 SXM compute.
    ("h200", 141e9, 4.8e12, 989.4e12, 1978.9e12, 1978.9e12),
    # MI300X: 192 GB HBM3, 5.3 TB/s, 1,307.4 FP16 dense, 2,614.9 FP8 dense.
    ("mi300x", 192e9, 5.3e12, 1307.4e12, 2614.9e12, 2614.9e12),
]


@pytest.mark.parametrize(("slug", "memory", "bandwidth", "sixteen", "fp8", "int8"), DATASHEET)
def test_gpu_datasheet_numbers(slug, memory, bandwidth, sixteen, fp8, int8):
    gpu = get_gpu(slug=slug)
    assert gpu.memory_bytes == memory
    assert gpu.memory_bandwidth_bytes_per_s == bandwidth
    assert gpu.peak_16bit_flops == sixteen
    assert gpu.peak_fp8_flops == fp8
    assert gpu.peak_int8_ops == int8
    assert gpu.source.startswith("https://")
    assert gpu.memory_label.startswith(f"{memory / 1e9:g} GB")


def test_gpu_peaks_are_dense_not_sparse():
    # The headline L4 figure is 242 TFLOPS "with sparsity"; the catalogue must hold half of it.
    assert get_gpu(slug="l4").peak_16bit_flops == 242e12 / 2
    for gpu in gpus().values():
        if gpu.peak_fp8_flops is not None:
            # FP8 is twice 16-bit on every listed architecture (the L40S datasheet rounds to 733 vs
            # 2 × 362.05 = 724.1); one sparse figure in a row would make the ratio 1 or 4.
            assert gpu.peak_fp8_flops == pytest.approx(2 * gpu.peak_16bit_flops, rel=0.02)


# (slug, layers, hidden, heads, kv heads, head dim, intermediate, vocab, tied, max context, params)
CONFIGS = [
    ("llama-3.2-1b", 16, 2048, 32, 8, 64, 8192, 128256, True, 131072, 1_235_814_400),
    ("llama-3.2-3b", 28, 3072, 24, 8, 128, 8192, 128256, True, 131072, 3_212_749_824),
    ("llama-3.1-8b", 32, 4096, 32, 8, 128, 14336, 128256, False, 131072, 8_030_261_248),
    ("llama-3.1-70b", 80, 8192, 64, 8, 128, 28672, 128256, False, 131072, 70_553_706_496),
    ("qwen2.5-7b", 28, 3584, 28, 4, 128, 18944, 152064, False, 32768, 7_615_616_512),
    ("qwen2.5-72b", 80, 8192, 64, 8, 128, 29568, 152064, False, 32768, 72_706_203_648),
    ("mistral-7b", 32, 4096, 32, 8, 128, 14336, 32768, False, 32768, 7_248_023_552),
    ("mixtral-8x7b", 32, 4096, 32, 8, 128, 14336, 32000, False, 32768, 46_702_792_704),
]


@pytest.mark.parametrize(
    (
        "slug",
        "layers",
        "hidden",
        "heads",
        "kv_heads",
        "head_dim",
        "intermediate",
        "vocab",
        "tied",
        "context",
        "params",
    ),
    CONFIGS,
)
def test_model_config_values(
    slug, layers, hidden, heads, kv_heads, head_dim, intermediate, vocab, tied, context, params
):
    model = get_model(slug=slug)
    assert (model.layers, model.hidden_size, model.attention_heads, model.kv_heads) == (
        layers,
        hidden,
        heads,
        kv_heads,
    )
    assert (model.head_dim, model.intermediate_size, model.vocab_size) == (
        head_dim,
        intermediate,
        vocab,
    )
    assert model.tied_embeddings is tied
    assert model.max_context == context
    assert model.params_total == params
    assert model.source.startswith("https://huggingface.co/") and model.source.endswith(
        "/config.json"
    )


def test_parameter_counts_follow_from_the_architecture():
    # Llama 3.1 8B by hand: per layer Q and O 4096 × 4096 each, K and V 4096 × 1024 each
    # (41,943,040), MLP 3 × 4096 × 14336 (176,160,768), two norms (8,192) -> 218,112,000;
    # × 32 = 6,979,584,000; + embeddings and LM head 2 × 128,256 × 4096 (1,050,673,152)
    # + final norm 4,096 = 8,030,261,248.
    assert architecture_param_count(model=get_model(slug="llama-3.1-8b")) == 8_030_261_248
    for model in models().values():
        assert architecture_param_count(model=model) == model.params_total


def test_mixtral_active_parameters():
    # Two of eight experts per token: 12,879,925,248 active of 46,702,792,704.
    mixtral = get_model(slug="mixtral-8x7b")
    assert mixtral.is_moe
    assert (mixtral.experts, mixtral.experts_per_token) == (8, 2)
    assert mixtral.params_active == 12_879_925_248
    assert architecture_param_count(model=mixtral, experts_used=2) == mixtral.params_active
    # One expert's SwiGLU MLP: 3 × 4096 × 14336 = 176,160,768 parameters per layer.
    assert mixtral.params_per_expert == 176_160_768


def test_unknown_slug_lists_the_valid_ones():
    with pytest.raises(UnknownSlugError) as error:
        get_gpu(slug="h100")
    assert str(error.value).startswith("unknown gpu 'h100'; valid gpus: l4, a10g,")
    assert "h100-sxm" in str(error.value)
    with pytest.raises(UnknownSlugError, match=r"valid models: llama-3\.2-1b"):
        get_model(slug="llama-3-8b")


def _write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def _gpu_row(**overrides: str) -> str:
    row = {
        "name": '"Test GPU"',
        "vendor": '"NVIDIA"',
        "memory_bytes": "24_000_000_000",
        "memory_label": '"24 GB GDDR6"',
        "memory_bandwidth_bytes_per_s": "300e9",
        "peak_16bit_flops": "121e12",
        "source": '"https://example.com/datasheet"',
        "notes": '"test row"',
    }
    row.update(overrides)
    return (
        "[test-gpu]\n"
        + "\n".join(f"{key} = {value}" for key, value in row.items() if value is not None)
        + "\n"
    )


def test_a_valid_gpu_row_loads(tmp_path):
    loaded = load_gpus(path=_write(tmp_path, "gpus.toml", _gpu_row()))
    assert loaded["test-gpu"].peak_fp8_flops is None
    assert loaded["test-gpu"].memory_bandwidth_bytes_per_s == 300e9


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        (
            {"memory_bandwidth_bytes_per_s": "-1"},
            r"gpus.toml: \[test-gpu\] memory_bandwidth_bytes_per_s: must be a positive number",
        ),
        (
            {"memory_bytes": "24.5"},
            r"gpus.toml: \[test-gpu\] memory_bytes: must be a positive integer",
        ),
        ({"peak_16bit_flops": None}, r"gpus.toml: \[test-gpu\] peak_16bit_flops: missing"),
        ({"peak_fp16_flops": "1e12"}, r"gpus.toml: \[test-gpu\] peak_fp16_flops: unknown key"),
        (
            {"source": '"http://example.com"'},
            r"gpus.toml: \[test-gpu\] source: must be an https:// URL",
        ),
        (
            {"peak_fp8_flops": '"fast"'},
            r"gpus.toml: \[test-gpu\] peak_fp8_flops: must be a positive number",
        ),
    ],
)
def test_a_bad_gpu_row_names_file_row_and_key(tmp_path, overrides, message):
    with pytest.raises(CatalogueError, match=message):
        load_gpus(path=_write(tmp_path, "gpus.toml", _gpu_row(**overrides)))


def test_malformed_toml_names_the_file(tmp_path):
    with pytest.raises(CatalogueError, match=r"gpus\.toml: not valid TOML"):
        load_gpus(path=_write(tmp_path, "gpus.toml", "[l4\nname = 1"))


def test_bad_slug_is_refused(tmp_path):
    with pytest.raises(CatalogueError, match=r"\[Big_GPU\]: slug must be lowercase"):
        load_gpus(path=_write(tmp_path, "gpus.toml", _gpu_row().replace("[test-gpu]", "[Big_GPU]")))


def _model_text(**overrides: str) -> str:
    text = MODELS_FILE.read_text()
    start = text.index('["llama-3.1-8b"]')
    end = text.index('["llama-3.1-70b"]')
    row = text[start:end]
    for key, value in overrides.items():
        lines = [line for line in row.splitlines() if not line.startswith(f"{key} =")]
        row = "\n".join(lines) + (f"\n{key} = {value}\n" if value is not None else "\n")
    return row


def test_the_shipped_model_row_loads_from_a_copy(tmp_path):
    loaded = load_models(path=_write(tmp_path, "models.toml", _model_text()))
    assert loaded["llama-3.1-8b"].params_total == 8_030_261_248


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        # A mistyped hidden size moves the parameter count far beyond 0.1 %.
        (
            {"hidden_size": "4069"},
            r"models.toml: \[llama-3.1-8b\] params_total: 8,030,261,248 disagrees",
        ),
        ({"kv_heads": "5"}, r"models.toml: \[llama-3.1-8b\] kv_heads: must divide attention_heads"),
        (
            {"tied_embeddings": '"no"'},
            r"models.toml: \[llama-3.1-8b\] tied_embeddings: must be true or false",
        ),
        (
            {"params_active": "8_000_000_000"},
            r"params_active: must equal params_total for a dense model",
        ),
        ({"layers": None}, r"models.toml: \[llama-3.1-8b\] layers: missing"),
        ({"experts_per_token": "2"}, r"experts_per_token: must not exceed experts"),
    ],
)
def test_a_bad_model_row_names_file_row_and_key(tmp_path, overrides, message):
    with pytest.raises(CatalogueError, match=message):
        load_models(path=_write(tmp_path, "models.toml", _model_text(**overrides)))


def test_shipped_files_are_the_ones_loaded():
    assert load_gpus(path=GPUS_FILE) == gpus()
    assert load_models(path=MODELS_FILE) == models()
