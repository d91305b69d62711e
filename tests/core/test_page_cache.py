"""A signed-in page kept whole per learner (core.page_cache): a reload costs no query, and yet a
learner never sees another learner's page, a page from before their own write, a page from
before a content sync, or a signed-in page after their session ended."""

from pathlib import Path

import pytest
from django.conf import settings
from django.contrib.messages import constants as message_levels
from django.contrib.messages.storage.base import Message
from django.contrib.messages.storage.cookie import CookieStorage
from django.core.management import call_command
from django.middleware.csrf import CSRF_SECRET_LENGTH
from django.test import Client
from django.utils import timezone
from django.utils.crypto import get_random_string

from core.learner_state import learner_state_token, renew_learner_state
from labs.execution import _finish
from labs.models import Lab, LabRun
from labs.targets import upsert_target
from questions.models import Attempt

LESSON = "/learn/lessons/first-lesson/"
QUESTION = "/practice/q/sample-question/"
LAB = "/labs/sample-lab/"
REVIEW = "/practice/review/"
ME = "/accounts/me/"
# A miss: the user, the learner's progress rows, their latest check answers, and the session
# when another test's Redis round trip evicted it (bounded again by the pages' own tests).
LESSON_MISS_QUERIES = 4


@pytest.fixture
def target(db):
    # Never contacted: the lab page only reads the target's row.
    return upsert_target(name="Idle GPU", kind="vllm", base_url="http://127.0.0.1:9", models=["scripted"], limits=None)


def _signed_in(user) -> Client:
    """A learner's browser that has been here before: it carries a CSRF cookie, as every browser
    does after its first page (the cookie is part of a kept page's key)."""
    browser = Client()
    browser.force_login(user)
    browser.cookies[settings.CSRF_COOKIE_NAME] = get_random_string(CSRF_SECRET_LENGTH)
    return browser


@pytest.mark.parametrize("url", [LESSON, QUESTION, LAB, REVIEW, ME])
def test_a_reload_is_served_without_a_query(synced, target, user, url, django_assert_num_queries):
    browser = _signed_in(user)
    browser.get(url)  # a first visit may write (the lesson notes the view), which renews the token
    first = browser.get(url)
    assert first.status_code == 200
    with django_assert_num_queries(0):
        again = browser.get(url)
    assert again.status_code == 200 and again.content == first.content
    assert f"Log out {user.username}" in again.content.decode()


def test_a_miss_costs_a_bounded_number_of_queries(synced, user, django_assert_max_num_queries):
    browser = _signed_in(user)
    browser.get(LESSON)
    renew_learner_state(user_ids=[user.pk])  # as any write of theirs would
    with django_assert_max_num_queries(LESSON_MISS_QUERIES):
        assert browser.get(LESSON).status_code == 200


def test_each_learner_gets_their_own_page_even_with_the_same_csrf_cookie(synced, make_user):
    ada, grace = make_user("ada"), make_user("grace")
    ada_browser, grace_browser = _signed_in(ada), _signed_in(grace)
    ada_browser.get(LESSON)
    ada_browser.post(f"{LESSON}done/", {"done": "1"})
    assert "Mark as not done" in ada_browser.get(LESSON).content.decode()
    # Grace's browser somehow carries Ada's CSRF cookie: the session still tells them apart.
    grace_browser.cookies[settings.CSRF_COOKIE_NAME] = ada_browser.cookies[settings.CSRF_COOKIE_NAME].value
    html = grace_browser.get(LESSON).content.decode()
    assert "Log out grace" in html and "Log out ada" not in html
    assert "Mark as done" in html and "Basics: 0 of 2 done" in html


def test_marking_a_lesson_done_shows_on_the_next_load(synced, user):
    browser = _signed_in(user)
    assert "Mark as done" in browser.get(LESSON).content.decode()
    me_before = browser.get(ME).content.decode()
    browser.post(f"{LESSON}done/", {"done": "1"})
    html = browser.get(LESSON).content.decode()
    assert "Mark as not done" in html and "Basics: 1 of 2 done" in html
    assert browser.get(ME).content.decode() != me_before
    browser.post(f"{LESSON}done/", {"done": "0"})
    assert "Mark as done" in browser.get(LESSON).content.decode()


def test_an_answer_shows_on_the_question_page_and_the_review_queue_at_once(synced, user):
    browser = _signed_in(user)
    assert 'id="feedback"' not in browser.get(QUESTION).content.decode()
    review_before = browser.get(REVIEW).content.decode()
    browser.post(QUESTION, {"answer": "Decode reads all the weights every step; memory bandwidth is the limit."})
    assert 'id="feedback"' in browser.get(QUESTION).content.decode()
    assert browser.get(REVIEW).content.decode() != review_before


def test_a_grade_changed_by_a_worker_shows_on_the_next_load(synced, user):
    """The LLM judge's second opinion arrives through a queryset update, which sends no signal."""
    browser = _signed_in(user)
    browser.post(QUESTION, {"answer": "Decode reads all the weights every step; memory bandwidth is the limit."})
    before = browser.get(QUESTION).content.decode()
    attempt = Attempt.objects.get(user=user)
    Attempt.objects.filter(pk=attempt.pk).update(score=0.0)
    renew_learner_state(user_ids=[attempt.user_id])  # what questions.services.apply_judge does
    assert browser.get(QUESTION).content.decode() != before


def test_a_run_finished_by_the_worker_shows_its_status_on_the_lab_page(synced, target, user):
    browser = _signed_in(user)
    lab = Lab.objects.get(slug="sample-lab")
    run = LabRun.objects.create(user=user, lab=lab, target=target, model_name="scripted", params={})
    assert "Queued" in browser.get(LAB).content.decode()
    _finish(run, status=LabRun.Status.FAILED, error="engine went away", finished_at=timezone.now())
    html = browser.get(LAB).content.decode()
    assert "Failed" in html and "Queued" not in html


def test_a_content_sync_replaces_the_kept_page(synced, user):
    browser = _signed_in(user)
    assert "Second lesson" in browser.get(LESSON).content.decode()
    lesson_file = Path(synced["courses"]) / "lessons" / "second-lesson.md"
    lesson_file.write_text(lesson_file.read_text().replace('title = "Second lesson"', 'title = "Second, revised"'))
    call_command("sync_content")
    assert "Second, revised" in browser.get(LESSON).content.decode()


def test_after_logout_the_old_session_cookie_gets_no_signed_in_page(synced, user):
    browser = _signed_in(user)
    old_session = browser.cookies[settings.SESSION_COOKIE_NAME].value
    assert f"Log out {user.username}" in browser.get(LESSON).content.decode()
    browser.post("/accounts/logout/")
    replay = Client()
    replay.cookies[settings.SESSION_COOKIE_NAME] = old_session
    html = replay.get(LESSON).content.decode()
    assert f"Log out {user.username}" not in html and "Log in" in html
    assert replay.get(ME).status_code == 302


@pytest.mark.parametrize("change", ["password", "deactivated"])
def test_a_password_change_or_deactivation_elsewhere_ends_the_kept_page(synced, user, change):
    browser = _signed_in(user)
    assert f"Log out {user.username}" in browser.get(LESSON).content.decode()
    if change == "password":
        user.set_password("another-long-password-43")
    else:
        user.is_active = False
    user.save()
    assert f"Log out {user.username}" not in browser.get(LESSON).content.decode()


def test_a_kept_page_hands_out_the_csrf_cookie_its_forms_were_rendered_with(synced, user):
    """A browser with no CSRF cookie yet (its first page) gets the kept page and the cookie that
    matches the token in it, so the page's forms post."""
    browser = Client(enforce_csrf_checks=True)
    browser.force_login(user)
    browser.get(LESSON)  # kept, with the CSRF secret it was rendered with
    browser.cookies.pop(settings.CSRF_COOKIE_NAME)
    kept = browser.get(LESSON)
    assert settings.CSRF_COOKIE_NAME in kept.cookies
    token = kept.content.decode().split('name="csrfmiddlewaretoken" value="')[1].split('"')[0]
    response = browser.post(f"{LESSON}done/", {"done": "1", "csrfmiddlewaretoken": token})
    assert response.status_code == 302


def test_a_page_with_a_message_to_show_is_rendered(synced, user):
    browser = _signed_in(user)
    browser.get(ME)  # kept without a message
    browser.cookies["messages"] = CookieStorage(request=None)._encode([Message(message_levels.INFO, "Welcome back")])
    assert "Welcome back" in browser.get(ME).content.decode()


def test_the_learner_token_is_renewed_by_their_writes_only(synced, make_user):
    ada, grace = make_user("ada"), make_user("grace")
    ada_token, grace_token = learner_state_token(user_id=ada.pk), learner_state_token(user_id=grace.pk)
    _signed_in(ada).post(f"{LESSON}done/", {"done": "1"})
    assert learner_state_token(user_id=ada.pk) != ada_token
    assert learner_state_token(user_id=grace.pk) == grace_token


def _cookies(response) -> dict:
    """Each cookie's value and attributes, less its expiry date (a clock reading; max-age is kept)."""
    return {
        name: (morsel.value, {key: value for key, value in morsel.items() if key != "expires"})
        for name, morsel in response.cookies.items()
    }


@pytest.fixture
def stack_runs(monkeypatch):
    """How many requests reached the session middleware, i.e. went past the kept-page lookup."""
    from django.contrib.sessions.middleware import SessionMiddleware

    calls = []
    real = SessionMiddleware.process_request
    def counted(self, request):
        calls.append(1)
        return real(self, request)

    monkeypatch.setattr(SessionMiddleware, "process_request", counted)
    return calls


@pytest.mark.parametrize("url", [LESSON, QUESTION, LAB, REVIEW, ME])
def test_a_kept_page_is_answered_before_the_middleware_with_the_headers_the_whole_stack_sends(
    synced, target, user, url, stack_runs
):
    browser = _signed_in(user)
    browser.get(url)  # a first visit may write (the lesson notes the view)
    renew_learner_state(user_ids=[user.pk])  # so the next request renders through the whole stack
    rendered = browser.get(url)
    assert stack_runs and rendered.status_code == 200
    stack_runs.clear()
    kept = browser.get(url)
    assert not stack_runs, "the kept page went through the middleware stack"
    assert kept.status_code == 200 and kept.content == rendered.content
    assert dict(kept.headers) == dict(rendered.headers)
    assert _cookies(kept) == _cookies(rendered) and settings.CSRF_COOKIE_NAME in _cookies(kept)
    # What the stack below adds (CSP, framing, Vary, length) and SecurityMiddleware's own.
    security = ("X-Content-Type-Options", "Referrer-Policy", "Cross-Origin-Opener-Policy")
    for header in ("Content-Security-Policy", "X-Frame-Options", "Content-Length", *security):
        assert header in kept.headers, header
    assert "Cookie" in kept.headers["Vary"]


def test_over_https_a_kept_page_gets_hsts_and_plain_http_is_redirected(synced, user, settings, stack_runs):
    settings.SECURE_HSTS_SECONDS = 3600
    settings.SECURE_SSL_REDIRECT = True
    browser = _signed_in(user)
    browser.get(LESSON, secure=True)
    rendered = browser.get(LESSON, secure=True)
    stack_runs.clear()
    kept = browser.get(LESSON, secure=True)
    assert not stack_runs and kept.content == rendered.content
    assert kept.headers["Strict-Transport-Security"] == rendered.headers["Strict-Transport-Security"]
    plain = browser.get(LESSON)
    assert plain.status_code == 301 and plain.headers["Location"].startswith("https://")


def test_a_kept_page_is_not_served_under_a_host_the_site_does_not_answer_to(synced, user):
    browser = _signed_in(user)
    browser.get(LESSON)
    assert browser.get(LESSON).status_code == 200
    assert browser.get(LESSON, HTTP_HOST="evil.example").status_code == 400


def test_an_htmx_request_for_a_kept_page_goes_through_the_stack(synced, user, stack_runs):
    browser = _signed_in(user)
    browser.get(ME)
    browser.get(ME)
    stack_runs.clear()
    browser.get(ME, HTTP_HX_REQUEST="true")
    assert stack_runs


def test_a_session_lost_from_the_cache_is_read_from_the_database_and_the_page_is_still_theirs(synced, user):
    """Redis lost the session (evicted, restarted): the kept page is not served on the cache's
    word; the stack reads the session back from the database and renders the learner's page."""
    from django.contrib.sessions.backends.cached_db import KEY_PREFIX
    from django.core.cache import cache

    browser = _signed_in(user)
    browser.get(LESSON)
    browser.get(LESSON)
    cache.delete(KEY_PREFIX + browser.cookies[settings.SESSION_COOKIE_NAME].value)
    assert f"Log out {user.username}" in browser.get(LESSON).content.decode()


def test_a_poll_for_a_mark_is_answered_early_and_the_mark_shows_on_the_next_poll(synced, user, stack_runs):
    from tests.grading import mark_pending_answers

    browser = _signed_in(user)
    browser.post(QUESTION, {"answer": "Decode reads all the weights every step; memory bandwidth is the limit."})
    attempt = Attempt.objects.get(user=user)
    assert attempt.grading
    poll = f"/practice/attempts/{attempt.pk}/feedback/"
    first = browser.get(poll, HTTP_HX_REQUEST="true")
    assert "Marking your answer" in first.content.decode()
    stack_runs.clear()
    again = browser.get(poll, HTTP_HX_REQUEST="true")
    assert not stack_runs and again.content == first.content
    # The same URL without htmx is another request: never answered with the fragment kept for htmx.
    browser.get(poll)
    assert stack_runs
    mark_pending_answers()
    assert 'data-testid="mark-sheet"' in browser.get(poll, HTTP_HX_REQUEST="true").content.decode()


def test_a_kept_poll_is_answered_for_a_second_at_most(synced, user, stack_runs, monkeypatch):
    import time
    from types import SimpleNamespace

    from core import page_cache

    browser = _signed_in(user)
    browser.post(QUESTION, {"answer": "Decode reads all the weights every step."})
    poll = f"/practice/attempts/{Attempt.objects.get(user=user).pk}/feedback/"
    browser.get(poll, HTTP_HX_REQUEST="true")
    later = time.monotonic() + 1.01
    monkeypatch.setattr(page_cache, "time", SimpleNamespace(monotonic=lambda: later))
    stack_runs.clear()
    browser.get(poll, HTTP_HX_REQUEST="true")
    assert stack_runs  # rendered afresh, with a poll delay that grew with the wait
