from django.conf import settings
from django.db import models
from django.urls import reverse

from core.models import ContentQuerySet


class Course(models.Model):
    slug = models.SlugField(unique=True)
    title = models.CharField(max_length=200)
    summary = models.TextField(blank=True)
    retired = models.BooleanField(default=False)

    objects = ContentQuerySet.as_manager()

    def __str__(self) -> str:
        return self.title

    def get_absolute_url(self) -> str:
        return reverse("courses:course", kwargs={"course_slug": self.slug})


class Module(models.Model):
    course = models.ForeignKey(Course, on_delete=models.CASCADE, related_name="modules")
    slug = models.SlugField()
    title = models.CharField(max_length=200)
    summary = models.TextField(blank=True)
    order = models.PositiveIntegerField()
    retired = models.BooleanField(default=False)

    objects = ContentQuerySet.as_manager()

    class Meta:
        ordering = ["order"]
        constraints = [
            models.UniqueConstraint(fields=["course", "slug"], name="module_unique_slug"),
        ]

    def __str__(self) -> str:
        return self.title


class Lesson(models.Model):
    """A lesson loaded from courses/content/lessons/<slug>.md; the file is the source of truth."""

    module = models.ForeignKey(Module, on_delete=models.PROTECT, related_name="lessons")
    slug = models.SlugField(unique=True)
    title = models.CharField(max_length=200)
    summary = models.TextField(blank=True)
    minutes = models.PositiveIntegerField(default=10)
    objectives = models.JSONField(default=list)
    practice = models.JSONField(default=list, help_text="Question slugs")
    labs = models.JSONField(default=list, help_text="Lab slugs")
    checks = models.JSONField(default=list, help_text="Question slugs answered in place on the lesson page")
    body = models.TextField(help_text="Markdown body")
    source_path = models.CharField(max_length=300)
    content_hash = models.CharField(max_length=64)
    order = models.PositiveIntegerField(help_text="Position in the whole course")
    retired = models.BooleanField(default=False)
    updated_at = models.DateTimeField(auto_now=True)

    objects = ContentQuerySet.as_manager()

    class Meta:
        ordering = ["order"]

    def __str__(self) -> str:
        return self.title

    def get_absolute_url(self) -> str:
        return reverse("courses:lesson", kwargs={"lesson_slug": self.slug})


class LessonProgress(models.Model):
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="lesson_progress")
    lesson = models.ForeignKey(Lesson, on_delete=models.CASCADE, related_name="progress")
    last_viewed_at = models.DateTimeField(null=True, blank=True)
    completed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["user", "lesson"], name="progress_unique_user_lesson"),
        ]
        indexes = [models.Index(fields=["user", "-last_viewed_at"])]

    def __str__(self) -> str:
        return f"{self.user} · {self.lesson}"

    @property
    def is_done(self) -> bool:
        return self.completed_at is not None
