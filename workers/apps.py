from django.apps import AppConfig


class WorkersConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "workers"

    def ready(self) -> None:
        from workers import signals  # noqa: F401 - connects the worker_ready handler
