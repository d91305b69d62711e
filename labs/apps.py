from django.apps import AppConfig


class LabsConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "labs"

    def ready(self) -> None:
        from core.content import register_content_source
        from core.learner_state import renew_learner_state_on_change
        from core.versions import bump_content_version_on_change
        from labs.content_sync import sync_lab_content
        from labs.models import Lab, LabRun

        register_content_source(name="labs", order=30, sync=sync_lab_content)
        bump_content_version_on_change(Lab)
        renew_learner_state_on_change(LabRun)
