from django.apps import AppConfig


class WorkersConfig(AppConfig):
    """The measurement library (workers/measure) and its `manage.py measure` command; no models, no tasks."""

    default_auto_field = "django.db.models.BigAutoField"
    name = "workers"
