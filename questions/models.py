from django.conf import settings
from django.db import models
from django.urls import reverse
from django.utils import timezone

from core.models import ContentQuerySet


class QuestionSet(models.Model):
    slug = models.SlugField(unique=True)
    title = models.CharField(max_length=200)
    summary = models.TextField(blank=True)
    order = models.PositiveIntegerField(default=0)
    source_path = models.CharField(max_length=300)
    retired = models.BooleanField(default=False)

    objects = ContentQuerySet.as_manager()

    class Meta:
        ordering = ["order", "title"]

    def __str__(self) -> str:
        return self.title

    def get_absolute_url(self) -> str:
        return reverse("questions:set", kwargs={"set_slug": self.slug})


class Question(models.Model):
    """One question as loaded from its set file. `spec` is the whole question as the file says."""

    class Kind(models.TextChoices):
        FREE_TEXT = "free_text", "Free text"
        NUMERIC = "numeric", "Numeric"
        MULTIPLE_CHOICE = "multiple_choice", "Multiple choice"

    class Difficulty(models.TextChoices):
        INTRO = "intro", "Intro"
        CORE = "core", "Core"
        ADVANCED = "advanced", "Advanced"

    question_set = models.ForeignKey(QuestionSet, on_delete=models.PROTECT, related_name="questions")
    slug = models.SlugField(unique=True)
    kind = models.CharField(max_length=20, choices=Kind.choices)
    difficulty = models.CharField(max_length=10, choices=Difficulty.choices)
    prompt = models.TextField()
    spec = models.JSONField()
    rubric_version = models.CharField(max_length=32)
    lesson_ref = models.CharField(max_length=200, blank=True)
    lab_slug = models.SlugField(blank=True)
    order = models.PositiveIntegerField(default=0)
    retired = models.BooleanField(default=False)

    objects = ContentQuerySet.as_manager()

    class Meta:
        ordering = ["question_set__order", "order"]

    def __str__(self) -> str:
        return self.slug

    def get_absolute_url(self) -> str:
        return reverse("questions:question", kwargs={"question_slug": self.slug})


class Rubric(models.Model):
    """One version of what grades a question or one of its follow-ups, keyed by its content hash.

    Written once by sync_content and never edited: a changed rubric is a new row, and attempts
    keep pointing at the row they were graded with, so an old mark sheet shows its own criteria.
    `spec` is questions.rubrics.rubric_spec(); the question's current versions are named by
    Question.rubric_version and, for follow-ups, by spec["follow_ups"][i]["rubric_version"].
    """

    question = models.ForeignKey(Question, on_delete=models.PROTECT, related_name="rubrics")
    follow_up = models.SlugField(blank=True, help_text="Empty for the main question")
    content_hash = models.CharField(max_length=32)
    spec = models.JSONField()
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["question", "follow_up", "created_at"]
        constraints = [
            models.UniqueConstraint(fields=["question", "content_hash"], name="rubric_unique_question_hash"),
        ]

    def __str__(self) -> str:
        part = f"{self.question.slug}/{self.follow_up}" if self.follow_up else self.question.slug
        return f"{part} rubric {self.content_hash}"

    @property
    def criteria(self) -> list[dict]:
        return list(self.spec.get("rubric", []))


class Attempt(models.Model):
    """A learner's answer and how it was graded. Never deleted by a content sync.

    A free-text answer is stored first, `pending`, and graded by a worker on the grading queue
    (questions.services.grade_pending_attempt); until then score and max_score are 0 and
    `result` is empty, so anything that reads scores reads graded attempts only.
    """

    class GradeStatus(models.TextChoices):
        PENDING = "pending", "Being graded"
        GRADED = "graded", "Graded"
        # Terminal: the rubric it was stored against cannot be loaded, so nothing can mark it. The
        # answer is kept; it has no score and counts in no average or review schedule.
        UNMARKABLE = "unmarkable", "Could not be marked"

    class JudgeStatus(models.TextChoices):
        NONE = "none", "Rubric only"
        PENDING = "pending", "LLM judge pending"
        DONE = "done", "LLM judge done"
        FAILED = "failed", "LLM judge failed (rubric result kept)"

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="attempts")
    question = models.ForeignKey(Question, on_delete=models.PROTECT, related_name="attempts")
    follow_up = models.SlugField(blank=True, help_text="Empty for the main question")
    answer = models.TextField()
    score = models.FloatField()
    max_score = models.FloatField()
    result = models.JSONField(help_text="Per-criterion results, misconceptions, evidence")
    rubric_version = models.CharField(max_length=32)
    # The version it was graded with; null only for an attempt older than stored rubrics whose
    # version no longer matched its question when they were introduced.
    rubric = models.ForeignKey(Rubric, on_delete=models.PROTECT, null=True, blank=True, related_name="attempts")
    grade_status = models.CharField(max_length=10, choices=GradeStatus.choices, default=GradeStatus.GRADED)
    judge_status = models.CharField(max_length=10, choices=JudgeStatus.choices, default=JudgeStatus.NONE)
    judge_result = models.JSONField(null=True, blank=True)
    flagged_for_review = models.BooleanField(default=False)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at"]
        indexes = [
            models.Index(fields=["user", "question", "-created_at"]),
            # The stale-grade settler's scan: few rows are ever pending.
            models.Index(fields=["grade_status", "created_at"], name="attempt_grade_status_idx"),
        ]

    def __str__(self) -> str:
        return f"{self.user} · {self.question.slug} · {self.score}/{self.max_score}"

    def get_absolute_url(self) -> str:
        return reverse("questions:attempt", kwargs={"attempt_id": self.pk})

    @property
    def percent(self) -> int:
        return round(100 * self.score / self.max_score) if self.max_score else 0

    @property
    def grading(self) -> bool:
        """Stored, not yet marked: the page shows "being marked" and polls."""
        return self.grade_status == self.GradeStatus.PENDING

    @property
    def unmarkable(self) -> bool:
        """Given up on (its rubric cannot be loaded): the page says so instead of "being marked"."""
        return self.grade_status == self.GradeStatus.UNMARKABLE

    @property
    def marked(self) -> bool:
        return self.grade_status == self.GradeStatus.GRADED

    @property
    def poll_delay_ms(self) -> int:
        """How long the pending sheet waits before asking again: a quarter of the time waited so
        far, between 0.3 and 2 s. A mark usually comes within half a second and is seen about as
        soon; when the grading queue is backed up, the learners waiting on it do not multiply the
        requests (a poll is one query and a small template)."""
        waited_ms = (timezone.now() - self.created_at).total_seconds() * 1000 if self.created_at else 0
        return int(min(2000, max(300, waited_ms / 4)))


class ModelAnswerReveal(models.Model):
    """Recorded when a learner chose to see the model answer before attempting."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE)
    question = models.ForeignKey(Question, on_delete=models.CASCADE)
    revealed_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["user", "question"], name="reveal_unique_user_question"),
        ]

    def __str__(self) -> str:
        return f"{self.user} revealed {self.question}"


class ReviewCard(models.Model):
    """FSRS scheduling state of one question for one learner."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="review_cards")
    question = models.ForeignKey(Question, on_delete=models.CASCADE, related_name="review_cards")
    card = models.JSONField(help_text="fsrs.Card.to_dict()")
    due = models.DateTimeField(db_index=True)
    last_rating = models.PositiveSmallIntegerField(null=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["user", "question"], name="review_unique_user_question"),
        ]
        ordering = ["due"]

    def __str__(self) -> str:
        return f"{self.user} · {self.question} due {self.due:%Y-%m-%d}"


class MarkChallenge(models.Model):
    """A learner's claim that the grader got their mark wrong: the points they say their answer
    made, the misconceptions they say it did not state, in their words. Staff settle it in the
    admin; the learner sees the outcome on the mark sheet. The mark itself is not changed: the
    grader's result stays what it was, and an upheld challenge is a labelled example of where
    the grader errs (README, "How free-text answers are graded")."""

    class Status(models.TextChoices):
        OPEN = "open", "Waiting for staff"
        UPHELD = "upheld", "Staff agreed with you"
        REJECTED = "rejected", "Staff kept the mark"

    attempt = models.OneToOneField(Attempt, on_delete=models.CASCADE, related_name="challenge")
    criteria = models.JSONField(default=list, blank=True, help_text="Criterion ids the learner says they earned")
    misconceptions = models.JSONField(
        default=list, blank=True, help_text="Misconception ids the learner says the answer does not state"
    )
    note = models.TextField(blank=True)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.OPEN)
    staff_note = models.TextField(blank=True, help_text="Shown to the learner")
    created_at = models.DateTimeField(auto_now_add=True)
    resolved_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
        indexes = [models.Index(fields=["status", "created_at"], name="challenge_status_idx")]

    def __str__(self) -> str:
        return f"Challenge of attempt {self.attempt_id} ({self.status})"

    @property
    def learner_id(self) -> int:
        """The learner whose kept pages show this challenge (core.learner_state)."""
        return self.attempt.user_id
