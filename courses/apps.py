from django.apps import AppConfig


class CoursesConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "courses"

    def ready(self) -> None:
        from core.content import register_content_source
        from courses.content_sync import sync_course_content

        register_content_source(name="courses", order=10, sync=sync_course_content)
