from django.apps import AppConfig


class LabsConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "labs"

    def ready(self) -> None:
        from core.content import register_content_source
        from labs.content_sync import sync_lab_content

        register_content_source(name="labs", order=30, sync=sync_lab_content)
