from django.contrib import admin
from django.utils import timezone

from core.admin import FileSourcedAdmin
from questions.challenges import settle_challenges
from questions.models import Attempt, MarkChallenge, ModelAnswerReveal, Question, QuestionSet, ReviewCard, Rubric


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


@admin.register(MarkChallenge)
class MarkChallengeAdmin(admin.ModelAdmin):
    """Learners' challenges of their marks: read the answer and the mark sheet, then uphold or
    reject (the learner sees the outcome and the staff note; the mark itself is not changed)."""

    list_display = ("attempt", "status", "created_at", "resolved_at")
    list_filter = ("status", "attempt__question__question_set")
    list_select_related = ("attempt__question", "attempt__user")
    search_fields = ("attempt__user__username", "attempt__question__slug", "note")
    readonly_fields = (
        "attempt", "answer", "mark_sheet", "criteria", "misconceptions", "note", "created_at", "resolved_at",
    )
    fields = ("attempt", "answer", "mark_sheet", "criteria", "misconceptions", "note", "status", "staff_note",
              "created_at", "resolved_at")
    actions = ("uphold", "reject")

    def has_add_permission(self, request, obj=None) -> bool:
        return False

    @admin.display(description="Answer")
    def answer(self, obj: MarkChallenge) -> str:
        return obj.attempt.answer

    @admin.display(description="Mark sheet (criteria awarded)")
    def mark_sheet(self, obj: MarkChallenge) -> str:
        return "; ".join(
            f"{item.get('id')}: {item.get('awarded') or 0}/{item.get('points') or 0}"
            for item in obj.attempt.result.get("criteria", [])
        )

    def save_model(self, request, obj: MarkChallenge, form, change: bool) -> None:
        if "status" in form.changed_data and obj.status != MarkChallenge.Status.OPEN and obj.resolved_at is None:
            obj.resolved_at = timezone.now()
        super().save_model(request, obj, form, change)

    @admin.action(description="Uphold: the grader got these marks wrong")
    def uphold(self, request, queryset) -> None:
        settled = settle_challenges(challenges=list(queryset), upheld=True)
        self.message_user(request, f"{settled} challenge(s) upheld.")

    @admin.action(description="Reject: the grader's marks stand")
    def reject(self, request, queryset) -> None:
        settled = settle_challenges(challenges=list(queryset), upheld=False)
        self.message_user(request, f"{settled} challenge(s) rejected.")
