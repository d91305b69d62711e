from django.apps import AppConfig


class QuestionsConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "questions"

    def ready(self) -> None:
        from core.content import register_content_source
        from core.versions import bump_content_version_on_change
        from questions.content_sync import sync_question_content
        from questions.models import Question, QuestionSet

        register_content_source(name="questions", order=20, sync=sync_question_content)
        bump_content_version_on_change(Question, QuestionSet)
