import json

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError

from labs.models import InferenceTarget
from labs.targets import hardware_from_catalogue, probe_and_record, upsert_target, weight_bytes_from_catalogue


class Command(BaseCommand):
    help = "Register, list and probe inference targets (staff only: learners never see URLs)."

    def add_arguments(self, parser) -> None:
        sub = parser.add_subparsers(dest="action", required=True)
        add = sub.add_parser("add", help="Add or update a target")
        add.add_argument("--name", required=True)
        add.add_argument("--kind", required=True, choices=InferenceTarget.Kind.values)
        add.add_argument("--base-url", required=True)
        add.add_argument("--model", action="append", required=True, help="Repeat for several models")
        add.add_argument("--api", choices=InferenceTarget.Api.values)
        add.add_argument("--hardware", help="A slug of the hardware catalogue, e.g. h100-sxm")
        add.add_argument(
            "--weights-from",
            metavar="SLUG:PRECISION",
            help="Catalogue model and precision of the first --model, e.g. llama-3.2-1b:bf16, so labs can show "
            "the decode speed-of-light bound (weight bytes / memory bandwidth)",
        )
        add.add_argument(
            "--hardware-group",
            help="Name shared by targets on one machine (e.g. vLLM and Ollama on one GPU): their runs never overlap",
        )
        add.add_argument("--api-key", default="")
        add.add_argument(
            "--synthetic-text", action="store_true", help="Generated model: real timings, meaningless words"
        )
        add.add_argument("--probe", action="store_true", help="Probe it right after adding")
        sub.add_parser("list", help="List targets").add_argument("--json", action="store_true")
        probe = sub.add_parser("probe", help="Probe a target and record its capabilities")
        probe.add_argument("name")

    def handle(self, *args, action: str, **options) -> None:
        if action == "add":
            self._add(options)
        elif action == "list":
            self._list(as_json=options["json"])
        else:
            self._probe(options["name"])

    def _add(self, options: dict) -> None:
        try:
            hardware = hardware_from_catalogue(slug=options["hardware"]) if options["hardware"] else None
            model_bytes = (
                {options["model"][0]: weight_bytes_from_catalogue(spec=options["weights_from"])}
                if options["weights_from"]
                else None
            )
            target = upsert_target(
                name=options["name"],
                kind=options["kind"],
                base_url=options["base_url"],
                models=options["model"],
                api=options["api"],
                hardware=hardware,
                api_key=options["api_key"],
                synthetic_text=options["synthetic_text"],
                model_bytes=model_bytes,
                hardware_group=options["hardware_group"],
            )
        except ValidationError as error:
            raise CommandError("; ".join(error.messages)) from None
        self.stdout.write(self.style.SUCCESS(f"Target '{target.name}' saved (queue {target.queue_name})."))
        if options["probe"]:
            self._probe(target.name)

    def _list(self, *, as_json: bool) -> None:
        rows = [
            {
                "name": t.name,
                "kind": t.kind,
                "api": t.api,
                "base_url": t.base_url,
                "models": t.model_names,
                "hardware": t.hardware_name,
                "queue": t.queue_name,
                "enabled": t.enabled,
                "engine_version": t.engine_version,
                "probed_at": t.probed_at.isoformat() if t.probed_at else None,
            }
            for t in InferenceTarget.objects.order_by("name")
        ]
        if as_json:
            self.stdout.write(json.dumps(rows, indent=2))
            return
        if not rows:
            self.stdout.write(
                "No targets. Add one with: manage.py target add --name NAME --kind KIND --base-url URL --model MODEL"
            )
        for row in rows:
            state = "enabled" if row["enabled"] else "disabled"
            self.stdout.write(
                f"{row['name']:<40} {row['kind']:<18} {row['base_url']:<32} {', '.join(row['models'])} [{state}]"
            )

    def _probe(self, name: str) -> None:
        target = InferenceTarget.objects.filter(name=name).first()
        if target is None:
            raise CommandError(f"No target named '{name}'. See: manage.py target list")
        target = probe_and_record(target_id=target.pk)
        if target.probe_error:
            raise CommandError(f"{target.name} did not answer: {target.probe_error}")
        self.stdout.write(self.style.SUCCESS(f"{target.name}: {target.engine_version or 'engine'} reachable"))
        self.stdout.write(json.dumps(target.capabilities, indent=2))
