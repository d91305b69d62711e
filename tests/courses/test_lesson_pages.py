import pytest
from django.core.management import call_command

from courses.models import Lesson, LessonProgress


def test_anonymous_visitors_read_lessons_with_math_links_and_toc(client, synced):
    response = client.get("/learn/lessons/first-lesson/")
    assert response.status_code == 200
    html = response.content.decode()
    assert "<math" in html  # $t \ge B / W$ rendered as MathML, not code
    assert 'id="the-loop"' in html  # deep link anchor
    assert 'href="/learn/lessons/second-lesson/#the-loop"' in html
    assert 'href="/labs/sample-lab/"' in html
    assert "Explain the decode loop" in html  # objectives
    assert "Why is decode memory-bound?" in html  # practice link shows the question
    assert "to mark lessons as done" in html
    assert 'rel="next"' in html


def test_course_page_lists_modules_and_lessons_in_order(client, synced):
    html = client.get("/learn/").content.decode()
    assert html.index("First lesson") < html.index("Second lesson")
    assert "Basics" in html


def test_marking_done_moves_module_and_course_progress(client, synced, user):
    client.force_login(user)
    client.get("/learn/lessons/first-lesson/")
    response = client.post("/learn/lessons/first-lesson/done/", {"done": "1"}, HTTP_HX_REQUEST="true")
    html = response.content.decode()
    assert response.status_code == 200
    assert 'id="progress-panel"' in html and "<html" not in html  # an htmx partial
    assert "Basics: 1 of 2 done" in html
    assert 'aria-valuenow="50"' in html
    assert LessonProgress.objects.get(user=user, lesson__slug="first-lesson").completed_at is not None
    response = client.post("/learn/lessons/first-lesson/done/", {"done": "0"})
    assert response.status_code == 302  # without htmx: post/redirect/get
    assert LessonProgress.objects.get(user=user, lesson__slug="first-lesson").completed_at is None


def test_progress_needs_an_account(client, synced):
    response = client.post("/learn/lessons/first-lesson/done/", {"done": "1"})
    assert response.status_code == 302
    assert response["Location"].startswith("/accounts/login/")


def test_home_offers_to_continue_where_the_learner_left_off(client, synced, user):
    client.force_login(user)
    client.get("/learn/lessons/second-lesson/")
    html = client.get("/").content.decode()
    assert "Continue: Second lesson" in html
    client.post("/learn/lessons/second-lesson/done/", {"done": "1"})
    html = client.get("/").content.decode()
    assert "Continue: First lesson" in html


def test_retired_and_unknown_lessons_are_404(client, synced):
    Lesson.objects.filter(slug="second-lesson").update(retired=True)
    assert client.get("/learn/lessons/second-lesson/").status_code == 404
    assert client.get("/learn/lessons/nope/").status_code == 404


@pytest.mark.django_db
def test_every_repository_lesson_renders(client, settings, capsys):
    call_command("sync_content")
    lessons = list(Lesson.objects.live())
    assert len(lessons) >= 14
    for lesson in lessons:
        response = client.get(lesson.get_absolute_url())
        assert response.status_code == 200, lesson.slug
        assert "<figure" in response.content.decode() or lesson.slug, lesson.slug


def test_anonymous_lesson_pages_are_served_from_memory_without_queries(client, synced, django_assert_num_queries, user):
    first = client.get("/learn/lessons/first-lesson/")
    with django_assert_num_queries(0):
        again = client.get("/learn/lessons/first-lesson/")
    assert again.content == first.content
    assert b"csrfmiddlewaretoken" not in again.content  # nothing per-visitor in a shared page
    client.force_login(user)
    personal = client.get("/learn/lessons/first-lesson/").content.decode()
    assert "Mark as done" in personal  # logged-in learners always get their own page
