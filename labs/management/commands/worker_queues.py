from django.core.management.base import BaseCommand

from labs.models import InferenceTarget


class Command(BaseCommand):
    help = "Print the Celery queue of every enabled target, one per line (used to start workers)."

    def handle(self, *args, **options) -> None:
        for target in InferenceTarget.objects.filter(enabled=True).order_by("name"):
            self.stdout.write(target.queue_name)
