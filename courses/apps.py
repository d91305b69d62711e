from django.apps import AppConfig


class CoursesConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "courses"

    def ready(self) -> None:
        from core.content import register_content_source
        from core.learner_state import renew_learner_state_on_change
        from core.versions import bump_content_version_on_change
        from courses.content_sync import sync_course_content
        from courses.models import Course, Lesson, LessonProgress, Module

        register_content_source(name="courses", order=10, sync=sync_course_content)
        bump_content_version_on_change(Course, Lesson, Module)
        renew_learner_state_on_change(LessonProgress)
