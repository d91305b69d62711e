from django.urls import path

from questions import views

app_name = "questions"

urlpatterns = [
    path("", views.set_index, name="index"),
    path("review/", views.review, name="review"),
    path("sets/<slug:set_slug>/", views.set_detail, name="set"),
    path("sets/<slug:set_slug>/interview/", views.mock_interview, name="interview"),
    path("q/<slug:question_slug>/", views.question_detail, name="question"),
    path("q/<slug:question_slug>/reveal/", views.reveal, name="reveal"),
    path("attempts/<int:attempt_id>/", views.attempt_detail, name="attempt"),
    path("attempts/<int:attempt_id>/challenge/", views.attempt_challenge, name="attempt-challenge"),
    path("attempts/<int:attempt_id>/feedback/", views.attempt_feedback, name="attempt-feedback"),
    path("attempts/<int:attempt_id>/check-result/", views.attempt_check_result, name="attempt-check-result"),
]
