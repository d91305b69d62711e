"""Register the local llama.cpp engines (engines/local.py) as two inference targets.

The hardware spec is measured on this machine (memory bandwidth by a large copy), so the speed-of-
light bound a lab shows is this machine's real bound; the model bytes come from the generated
models' manifest.
"""

import json
import os
from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from engines.hwprobe import probe_hardware
from engines.llamacpp.models import DEFAULT_MODEL, read_manifest
from engines.local import BATCHED_SLOTS
from labs.targets import Hardware, upsert_target

SERIAL_NAME = "Local CPU - llama.cpp, one at a time"
BATCHED_NAME = "Local CPU - llama.cpp, batched"
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

    def handle(self, *args, reprobe: bool, **options) -> None:
        models = read_manifest()
        if not models:
            raise CommandError("No generated models found; run `python -m engines.llamacpp.models` (make engine does).")
        names = sorted((m.name for m in models), key=lambda name: (name != DEFAULT_MODEL, name))
        hardware = self._hardware(reprobe=reprobe)
        common = {
            "kind": "llamacpp",
            "models": names,
            "hardware": hardware,
            "synthetic_text": True,
            "model_bytes": {m.name: float(m.weight_bytes_per_token) for m in models},
            "limits": CPU_LIMITS,
            # Both servers run on this machine's CPU: a run on one must not overlap a run on the other.
            "hardware_group": "local-cpu",
        }
        serial = upsert_target(
            name=SERIAL_NAME,
            base_url=os.environ.get("LOCAL_ENGINE_URL", "http://127.0.0.1:8011"),
            description=(
                "llama-server on this machine's CPU with --parallel 1: requests wait their turn, like Ollama's default."
            ),
            **common,
        )
        batched = upsert_target(
            name=BATCHED_NAME,
            base_url=os.environ.get("LOCAL_ENGINE_BATCHED_URL", "http://127.0.0.1:8012"),
            description=f"llama-server on this machine's CPU with --parallel {BATCHED_SLOTS} and continuous batching.",
            **common,
        )
        # The slot counts engines/local.py starts the servers with: the lab page states them.
        for target, slots in ((serial, 1), (batched, BATCHED_SLOTS)):
            target.capabilities = {**(target.capabilities or {}), "server_slots": slots}
            target.save(update_fields=["capabilities"])
        for target in (serial, batched):
            self.stdout.write(f"{target.name}: {target.base_url} ({len(names)} models, queue {target.queue_name})")

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
