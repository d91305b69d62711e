"""`manage.py speedoflight`: memory budget and decode/prefill speed-of-light bounds."""

import json

from django.core.management.base import BaseCommand, CommandError, CommandParser

from courses.inference.math import KV_PRECISIONS, WEIGHT_PRECISIONS
from courses.inference.report import (
    MAX_GPUS,
    TENSOR_PARALLEL_CAVEAT,
    InputError,
    default_kv_precision,
    speed_of_light,
    summary_rows,
)
from courses.inference.specs import UnknownSlugError

# argparse's own usage errors also exit with 2, so every input mistake has one exit code.
USAGE_ERROR = 2


class Command(BaseCommand):
    # Pure arithmetic over the catalogues: it must work even while the project's URLs or models
    # are broken, so Django's system checks are skipped.
    requires_system_checks: list[str] = []
    help = (
        "Print the memory budget and the speed-of-light decode and prefill bounds for a model on a "
        "GPU (catalogues in courses/inference/catalogue/)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--gpu", required=True, help="GPU slug, e.g. h100-sxm")
        parser.add_argument("--model", required=True, help="model slug, e.g. llama-3.1-8b")
        parser.add_argument(
            "--precision", required=True, help=f"weights: {'|'.join(WEIGHT_PRECISIONS)}"
        )
        parser.add_argument(
            "--kv-precision",
            help=f"KV cache: {'|'.join(KV_PRECISIONS)} (default: fp16 for fp16 weights, otherwise "
            "bf16)",
        )
        parser.add_argument("--batch", type=int, default=1, help="concurrent sequences (default 1)")
        parser.add_argument(
            "--context",
            type=int,
            default=4096,
            help="tokens in each sequence's KV cache (default 4096)",
        )
        parser.add_argument(
            "--prompt-tokens",
            type=int,
            help="prompt length for the prefill bound (default min(1024, context))",
        )
        parser.add_argument(
            "--gpus",
            type=int,
            default=1,
            help=f"tensor parallel over N of the GPU, 1 to {MAX_GPUS} (default 1): memory, "
            "bandwidth and FLOP/s add up; all-reduce time is not counted",
        )
        parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
        parser.add_argument(
            "--explain", action="store_true", help="also print the arithmetic step by step"
        )

    def handle(self, *args: object, **options: object) -> None:
        precision = str(options["precision"])
        context = int(options["context"])  # type: ignore[arg-type]
        prompt = options["prompt_tokens"]
        try:
            result = speed_of_light(
                gpu_slug=str(options["gpu"]),
                model_slug=str(options["model"]),
                precision=precision,
                kv_precision=str(
                    options["kv_precision"] or default_kv_precision(precision=precision)
                ),
                batch=int(options["batch"]),  # type: ignore[arg-type]
                context=context,
                prompt_tokens=int(prompt) if prompt is not None else min(1024, context),  # type: ignore[arg-type]
                gpus=int(options["gpus"]),  # type: ignore[arg-type]
            )
        except (UnknownSlugError, InputError) as error:
            raise CommandError(str(error), returncode=USAGE_ERROR) from None

        if options["json"]:
            payload = result.as_dict()
            if options["explain"]:
                payload["steps"] = result.steps
            if result.gpus > 1:
                payload["leaves_out"] = TENSOR_PARALLEL_CAVEAT
            self.stdout.write(json.dumps(payload, indent=2))
            return
        self.stdout.write(
            f"{result.model.name} on {result.gpu.name}: weights {result.precision}, KV "
            f"{result.kv_precision}, "
            f"batch {result.batch:,}, context {result.context:,}, prompt {result.prompt_tokens:,} "
            "tokens"
        )
        rows = summary_rows(result=result)
        width = max(len(key) for key, _ in rows)
        for key, value in rows:
            self.stdout.write(f"  {key.ljust(width)}  {value}")
        self.stdout.write("Bounds are speeds of light: no real engine reaches them.")
        if result.gpus > 1:
            self.stdout.write(f"Tensor parallel: {TENSOR_PARALLEL_CAVEAT}.")
        if options["explain"]:
            self.stdout.write("")
            for number, step in enumerate(result.steps, start=1):
                self.stdout.write(f"{number:>2}. {step}")
