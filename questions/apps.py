from django.apps import AppConfig


class QuestionsConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "questions"

    def ready(self) -> None:
        from core.content import register_content_source
        from questions.content_sync import sync_question_content

        register_content_source(name="questions", order=20, sync=sync_question_content)
