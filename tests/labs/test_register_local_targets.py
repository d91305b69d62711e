"""register_local_targets: each local target says how many requests its engine runs at once."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest
from django.core.management import call_command

from engines.vllm.server import MAX_NUM_SEQS, VLLM_CPU_FLAGS
from labs.management.commands import register_local_targets as command
from labs.models import InferenceTarget

pytestmark = pytest.mark.django_db


@pytest.fixture
def local_machine(monkeypatch, tmp_path: Path, settings):
    """One generated model, no real model, a recorded hardware probe, a converted vLLM model."""
    settings.VAR_DIR = tmp_path
    (tmp_path / "hardware.json").write_text(json.dumps({
        "cpu_model": "Test CPU", "usable_cpus": 2, "memory_bandwidth_gb_s": 20.0,
        "memory_bandwidth_bytes_per_s": 2.0e10, "total_memory_bytes": 2.4e10,
    }))
    generated = SimpleNamespace(name=command.DEFAULT_MODEL, weight_bytes_per_token=50_000_000)
    monkeypatch.setattr(command, "read_manifest", lambda: [generated])
    monkeypatch.setattr(command, "read_real_models", lambda: [])
    vllm_model = tmp_path / "vllm-model"
    vllm_model.mkdir()
    (vllm_model / "model.safetensors").write_bytes(b"\0" * 1024)
    monkeypatch.setattr("engines.vllm.server.model_dir", lambda: vllm_model)


def test_every_local_target_states_its_server_slots(local_machine):
    call_command("register_local_targets", "--vllm")

    slots = {t.name: t.server_slots for t in InferenceTarget.objects.all()}
    assert slots == {
        command.SERIAL_NAME: 1,
        command.BATCHED_NAME: command.BATCHED_SLOTS,
        command.VLLM_NAME: MAX_NUM_SEQS,
    }
    vllm = InferenceTarget.objects.get(name=command.VLLM_NAME)
    # The slots the page states are the ones the server is started with.
    flags = list(VLLM_CPU_FLAGS)
    assert flags[flags.index("--max-num-seqs") + 1] == str(vllm.server_slots)
    assert f"up to {MAX_NUM_SEQS} sequences" in vllm.description
    assert vllm.hardware_group == "local-cpu"
