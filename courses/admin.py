from django.contrib import admin

from core.admin import FileSourcedAdmin
from courses.models import Course, Lesson, LessonProgress, Module


@admin.register(Course)
class CourseAdmin(FileSourcedAdmin):
    list_display = ("title", "slug", "retired")


@admin.register(Module)
class ModuleAdmin(FileSourcedAdmin):
    list_display = ("title", "course", "order", "retired")


@admin.register(Lesson)
class LessonAdmin(FileSourcedAdmin):
    list_display = ("title", "slug", "module", "order", "minutes", "retired", "updated_at")
    list_filter = ("retired", "module")
    search_fields = ("title", "slug")


@admin.register(LessonProgress)
class LessonProgressAdmin(admin.ModelAdmin):
    list_display = ("user", "lesson", "last_viewed_at", "completed_at")
    list_select_related = ("user", "lesson")
    search_fields = ("user__username", "lesson__slug")
