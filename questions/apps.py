from django.apps import AppConfig


class QuestionsConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "questions"

    def ready(self) -> None:
        from core.content import register_content_source
        from core.learner_state import renew_learner_state_on_change
        from core.versions import bump_content_version_on_change
        from questions.content_sync import sync_question_content
        from questions.models import Attempt, MarkChallenge, ModelAnswerReveal, Question, QuestionSet, ReviewCard

        register_content_source(name="questions", order=20, sync=sync_question_content)
        bump_content_version_on_change(Question, QuestionSet)
        for learner_model in (Attempt, ModelAnswerReveal, ReviewCard):
            renew_learner_state_on_change(learner_model)
        renew_learner_state_on_change(MarkChallenge, user_field="learner_id")
