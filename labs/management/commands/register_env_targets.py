import os

from django.core.management.base import BaseCommand, CommandError

from labs.env_targets import EnvTargetsError, register_env_targets


class Command(BaseCommand):
    help = (
        "Create or update one inference target per engine named by the environment (VLLM_URL + VLLM_MODEL, "
        "OLLAMA_URL + OLLAMA_MODELS, GPU_HARDWARE, GPU_PRICE_PER_HOUR) and probe it. Idempotent; "
        "docker compose's web service runs it on every start."
    )

    def add_arguments(self, parser) -> None:
        parser.add_argument("--no-probe", action="store_true", help="Register without asking the engines")

    def handle(self, *args, no_probe: bool, **options) -> None:
        try:
            registrations = register_env_targets(environ=os.environ, probe=not no_probe)
        except EnvTargetsError as error:
            raise CommandError(f"Configuration error: {error}") from None
        if not registrations:
            self.stdout.write("No engine in the environment (VLLM_URL and OLLAMA_URL are empty): no target registered.")
            return
        for registration in registrations:
            target, engine = registration.target, registration.engine
            action = "created" if registration.created else "updated"
            if registration.renamed_from:
                action += f" (renamed from '{registration.renamed_from}')"
            self.stdout.write(
                self.style.SUCCESS(f"{engine.label} target '{target.name}' {action}")
                + f": {target.base_url}, {', '.join(target.model_names)}, queue {target.queue_name}"
                + (f", hardware group {target.hardware_group}" if target.hardware_group else "")
            )
            if no_probe:
                self.stdout.write("  probe: skipped (--no-probe)")
            elif target.probe_error:
                self.stdout.write(
                    self.style.WARNING(f"  probe: not answering yet ({target.probe_error}).")
                    + f" Runs on it fail until it does; probe again with: manage.py target probe '{target.name}'"
                )
            else:
                capabilities = target.capabilities
                self.stdout.write(
                    f"  probe: {target.engine_version or 'engine'} answers; forced output length (ignore_eos) "
                    f"{'yes' if capabilities.get('ignore_eos') else 'no'}, usage in streams "
                    f"{'yes' if capabilities.get('include_usage') else 'no'}, "
                    f"/tokenize {capabilities.get('tokenize') or 'no'}, /metrics {capabilities.get('metrics') or 'no'}"
                )
            for warning in registration.warnings:
                self.stdout.write(self.style.WARNING(f"  warning: {warning}"))
        created = [r.target.queue_name for r in registrations if r.created]
        if created:
            self.stdout.write(
                f"New queue(s) {', '.join(created)}: Celery workers started before now do not consume them. "
                "Under docker compose the `worker` service starts after `web` has run this command, so it does; "
                "anywhere else restart the workers (`docker compose restart worker`, or stop and start "
                "`make worker` / `make run`)."
            )
