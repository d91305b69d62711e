"""Inference measurement: TTFT, ITL, TPOT, E2E and throughput of a streaming LLM engine.

A library with no Django imports, used by the Celery tasks, ``manage.py measure`` and
``python -m workers.measure``. Metric definitions are in DESIGN.md and
:mod:`workers.measure.metrics`; the result format in :mod:`workers.measure.result`.

    target = TargetSpec(base_url="http://127.0.0.1:8011", api="openai-completions", model="m",
                        capabilities=Capabilities.for_engine("llamacpp"))
    result = measure(target=target, spec=RunSpec(requests=20, concurrency=4))
    print(result.summary["ttft_s"]["p50"])
"""

from workers.measure.errors import MeasureError
from workers.measure.metrics import SLO, RequestRecord
from workers.measure.probe import ProbeResult, probe, probe_sync
from workers.measure.protocols import Api
from workers.measure.result import SCHEMA_VERSION, RunResult
from workers.measure.runner import Progress, measure, run_measurement
from workers.measure.spec import Capabilities, RunSpec, Sweep, TargetSpec, fresh_seed

__all__ = [
    "SCHEMA_VERSION",
    "SLO",
    "Api",
    "Capabilities",
    "MeasureError",
    "ProbeResult",
    "Progress",
    "RequestRecord",
    "RunResult",
    "RunSpec",
    "Sweep",
    "TargetSpec",
    "fresh_seed",
    "measure",
    "probe",
    "probe_sync",
    "run_measurement",
]
