from django.db import models
from django.urls import reverse

from courses.models import ContentQuerySet


class Lab(models.Model):
    """A lab guide loaded from labs/content/<slug>.toml; `spec` holds params, plan and checks."""

    slug = models.SlugField(unique=True)
    title = models.CharField(max_length=200)
    objective = models.TextField()
    lesson_ref = models.CharField(max_length=200, blank=True)
    spec = models.JSONField()
    source_path = models.CharField(max_length=300)
    content_hash = models.CharField(max_length=64)
    order = models.PositiveIntegerField(default=0)
    retired = models.BooleanField(default=False)

    objects = ContentQuerySet.as_manager()

    class Meta:
        ordering = ["order", "title"]

    def __str__(self) -> str:
        return self.title

    def get_absolute_url(self) -> str:
        return reverse("labs:lab", kwargs={"lab_slug": self.slug})
