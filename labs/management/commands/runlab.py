import json
import time
from dataclasses import asdict

from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError

from labs.forms import RunForm
from labs.models import InferenceTarget, Lab, LabRun
from labs.selectors import findings_for
from labs.services import submit_run


class Command(BaseCommand):
    help = "Submit a lab run through the same service and Celery path as the web page."

    def add_arguments(self, parser) -> None:
        parser.add_argument("lab")
        parser.add_argument("--target", required=True, help="Target name")
        parser.add_argument("--user", required=True, help="Username the run belongs to")
        parser.add_argument("--param", action="append", default=[], help="key=value, repeatable; lists as 128,512")
        parser.add_argument("--prediction", default="Submitted from the command line.")
        parser.add_argument("--wait", action="store_true", help="Wait until the run finishes")
        parser.add_argument("--timeout", type=float, default=1800.0)
        parser.add_argument("--json", action="store_true")

    def handle(self, *args, **options) -> None:
        lab = Lab.objects.live().filter(slug=options["lab"]).first()
        if lab is None:
            raise CommandError(
                f"No lab '{options['lab']}'. Labs: {', '.join(Lab.objects.live().values_list('slug', flat=True))}"
            )
        target = InferenceTarget.objects.filter(name=options["target"]).first()
        if target is None:
            raise CommandError(f"No target named '{options['target']}'. See: manage.py target list")
        user = get_user_model().objects.filter(username=options["user"]).first()
        if user is None:
            raise CommandError(f"No user '{options['user']}'.")
        data = {"target": str(target.pk), "prediction": options["prediction"]}
        form = RunForm(data=data, lab=lab)
        for param in form.param_specs:
            default = param["default"]
            data[f"param_{param['name']}"] = ", ".join(map(str, default)) if isinstance(default, list) else str(default)
        for item in options["param"]:
            key, sep, value = item.partition("=")
            if not sep or f"param_{key}" not in form.fields:
                raise CommandError(
                    f"--param {item!r}: expected key=value with key one of {[p['name'] for p in form.param_specs]}"
                )
            data[f"param_{key}"] = value
        form = RunForm(data=data, lab=lab)
        if not form.is_valid():
            raise CommandError(
                "; ".join(
                    f"{field.removeprefix('param_')} ({form.fields[field].label if field in form.fields else 'form'}): "
                    f"{' '.join(errors)}"
                    for field, errors in form.errors.items()
                )
            )
        try:
            run = submit_run(
                user=user, lab=lab, target=target, params=form.params, prediction=form.cleaned_data["prediction"]
            )
        except ValidationError as error:
            raise CommandError(" ".join(error.messages)) from None
        if not options["wait"]:
            self.stdout.write(
                json.dumps({"run": run.pk, "status": run.status})
                if options["json"]
                else f"Run {run.pk} queued on {target.name}."
            )
            return
        deadline = time.monotonic() + options["timeout"]
        while time.monotonic() < deadline:
            run.refresh_from_db()
            if not run.is_active:
                break
            time.sleep(0.5)
        if options["json"]:
            summary = run.summary or {}
            payload = {
                "run": run.pk,
                "status": run.status,
                "error": run.error,
                "summary": summary.get("overall"),
                "steps": summary.get("steps", []),
                "findings": [asdict(finding) for finding in findings_for(run=run)],
            }
            self.stdout.write(json.dumps(payload, indent=2))
        else:
            self.stdout.write(f"Run {run.pk}: {run.status}. {run.error}")
        if run.status != LabRun.Status.SUCCEEDED:
            raise CommandError(f"run {run.pk} ended {run.status}: {run.error}")
