from django.urls import path

from courses import views
from courses.views_calculators import calculator_urlpatterns
from questions import views as question_views

app_name = "courses"

urlpatterns = [
    path("", views.course_index, name="index"),
    path("course/<slug:course_slug>/", views.course_detail, name="course"),
    path("lessons/<slug:lesson_slug>/", views.lesson_detail, name="lesson"),
    path("lessons/<slug:lesson_slug>/done/", views.lesson_done, name="lesson-done"),
    # Answering is the questions app's job; the URL sits beside the lesson it belongs to.
    path("lessons/<slug:lesson_slug>/checks/<slug:question_slug>/", question_views.lesson_check, name="lesson-check"),
    *calculator_urlpatterns,
]
