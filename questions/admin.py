from django.contrib import admin

from core.admin import FileSourcedAdmin
from questions.models import Attempt, ModelAnswerReveal, Question, QuestionSet, ReviewCard, Rubric


@admin.register(QuestionSet)
class QuestionSetAdmin(FileSourcedAdmin):
    list_display = ("title", "slug", "order", "retired")


@admin.register(Question)
class QuestionAdmin(FileSourcedAdmin):
    list_display = ("slug", "question_set", "kind", "difficulty", "rubric_version", "retired")
    list_filter = ("question_set", "kind", "difficulty", "retired")
    search_fields = ("slug", "prompt")


@admin.register(Rubric)
class RubricAdmin(FileSourcedAdmin):
    """Every rubric version sync_content has stored; immutable, attempts point at them."""

    list_display = ("question", "follow_up", "content_hash", "created_at")
    list_filter = ("question__question_set",)
    list_select_related = ("question",)
    search_fields = ("question__slug", "content_hash")


@admin.register(Attempt)
class AttemptAdmin(admin.ModelAdmin):
    list_display = (
        "question",
        "follow_up",
        "user",
        "score",
        "max_score",
        "judge_status",
        "flagged_for_review",
        "created_at",
    )
    list_filter = ("flagged_for_review", "judge_status", "question__question_set")
    list_select_related = ("question", "user")
    search_fields = ("user__username", "question__slug")
    readonly_fields = (
        "user",
        "question",
        "follow_up",
        "answer",
        "score",
        "max_score",
        "result",
        "rubric",
        "rubric_version",
        "judge_status",
        "judge_result",
        "created_at",
    )

    def has_add_permission(self, request, obj=None) -> bool:
        return False


@admin.register(ModelAnswerReveal)
class ModelAnswerRevealAdmin(admin.ModelAdmin):
    list_display = ("user", "question", "revealed_at")


@admin.register(ReviewCard)
class ReviewCardAdmin(admin.ModelAdmin):
    list_display = ("user", "question", "due", "last_rating")
