"""A small world to attack: content, two learners who each have an attempt and a finished run,
staff, and a target with an API key that must never show. Nothing is measured or dispatched."""

import io
from dataclasses import dataclass
from pathlib import Path

import pytest
from django.contrib.auth.models import User
from django.contrib.contenttypes.models import ContentType
from django.core.management import call_command
from django.db import transaction
from django.test import Client, override_settings
from django.utils import timezone

from labs.models import InferenceTarget, LabRun
from questions.models import Attempt, Question
from tests.grading import submit_and_mark
from tests.labs.test_checks import output_length_run
from tests.labs.test_runs import load_lab, make_target
from tests.sample_content import write_sample_content

API_KEY = "sk-prefill-test-SECRET-123"
PASSWORD = "a-long-test-password-42"


@dataclass
class World:
    learner: User  # "A": the one who attacks
    other: User  # "B": whose rows A must not reach
    staff: User
    target: InferenceTarget
    runs: dict[str, LabRun]  # learner username -> their finished run
    attempts: dict[str, Attempt]
    queued: LabRun  # B's, still waiting

    def client_for(self, role: str) -> Client:
        # Server errors come back as 500 responses (as a browser sees them), not as exceptions.
        client = Client(raise_request_exception=False)
        if role != "anonymous":
            client.force_login({"learner": self.learner, "staff": self.staff, "other": self.other}[role])
        return client

    def real_keys(self, route) -> dict[str, list[str]]:
        """Keys of real objects for a route's path parameters: the learner's own rows for
        int converters, live content for slugs, the admin's own rows for its object ids."""
        from courses.models import Course, Lesson
        from questions.models import QuestionSet

        keys: dict[str, list[str]] = {
            "run_id": [str(self.runs["ada"].pk)],
            "attempt_id": [str(self.attempts["ada"].pk)],
            "course_slug": list(Course.objects.values_list("slug", flat=True)[:1]),
            "lesson_slug": list(Lesson.objects.values_list("slug", flat=True)[:1]),
            "set_slug": list(QuestionSet.objects.values_list("slug", flat=True)[:1]),
            "question_slug": list(Question.objects.values_list("slug", flat=True)[:1]),
            "lab_slug": [self.runs["ada"].lab.slug],
            "content_type_id": [str(ContentType.objects.get_for_model(LabRun).pk)],
        }
        model_admin = getattr(route.callback, "model_admin", None)
        if model_admin is not None:
            pks = [str(pk) for pk in model_admin.model._default_manager.values_list("pk", flat=True)[:1]]
            keys["object_id"] = keys["id"] = pks
        else:
            keys.setdefault("object_id", [str(self.runs["ada"].pk)])
        return keys


@pytest.fixture(scope="module")
def module_world(django_db_setup, django_db_blocker, tmp_path_factory):
    """One world per test module, inside a transaction rolled back when the module ends; each
    test runs in a savepoint of it (pytest-django's `db`), so what a test changes is undone and
    the site is walked once per module, not once per test."""
    from django.conf import settings

    dirs = write_sample_content(root=tmp_path_factory.mktemp("content"), settings_base_dir=Path(settings.BASE_DIR))
    with django_db_blocker.unblock():
        outer = transaction.atomic()
        outer.__enter__()
        try:
            with override_settings(CONTENT_DIRS=dirs):
                yield _build_world()
        finally:
            transaction.set_rollback(True)
            outer.__exit__(None, None, None)


@pytest.fixture(scope="module")
def site_crawl(module_world):
    """Every concrete GET URL as anonymous, learner and staff, once per module: the pages, and
    the forms and query parameters they offer."""
    from tests.security.crawl import crawl_site

    return crawl_site(module_world)


@pytest.fixture
def world(module_world, db, broker) -> World:
    """The module's world, for one test. The broker fixture keeps anything a form would dispatch
    off the shared Redis (inside a test's transaction nothing is dispatched anyway)."""
    return module_world


def _build_world() -> World:
    """Sample content plus one real lab; runs are created directly with a real-shaped summary."""
    call_command("sync_content", stdout=io.StringIO())  # print nothing
    lab = load_lab("ttft-vs-output-length")
    target = make_target("http://127.0.0.1:9")
    target.api_key = API_KEY
    target.save()
    learner = User.objects.create_user("ada", password=PASSWORD)
    other = User.objects.create_user("bob", password=PASSWORD)
    staff = User.objects.create_user("root", password=PASSWORD, is_staff=True, is_superuser=True)
    question = Question.objects.live().first()
    runs, attempts = {}, {}
    for user in (learner, other):
        attempts[user.username] = submit_and_mark(
            user=user, question=question, answer="Decode reads all the weights each step; memory bound."
        )
        # Two finished runs each, so the run page offers its compare form.
        runs[user.username], _ = (
            LabRun.objects.create(
                user=user,
                lab=lab,
                target=target,
                model_name="scripted",
                params={"max_tokens": [128, 512, 2048], "prompt_tokens": 256, "repeats": 5},
                prediction="TTFT flat, E2E grows with output",
                status=LabRun.Status.SUCCEEDED,
                started_at=timezone.now(),
                finished_at=timezone.now(),
                summary=output_length_run(),
            )
            for _ in range(2)
        )
    # A queued run of B's puts a cancel form (with its own `next`) on the staff queue page.
    queued = LabRun.objects.create(
        user=other, lab=lab, target=target, model_name="scripted", params={}, prediction="waiting"
    )
    return World(learner=learner, other=other, staff=staff, target=target, runs=runs, attempts=attempts, queued=queued)
