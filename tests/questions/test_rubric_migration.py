"""The migration that introduced stored rubric versions links existing attempts where it can."""

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

BEFORE = [("questions", "0001_initial")]
AFTER = [("questions", "0002_rubric_versions")]


@pytest.fixture
def migrator(transactional_db):
    executor = MigrationExecutor(connection)
    executor.migrate(BEFORE)
    executor.loader.build_graph()
    yield executor
    executor.loader.build_graph()
    executor.migrate(executor.loader.graph.leaf_nodes())


def test_attempts_graded_with_the_current_version_are_linked_to_it(migrator, django_user_model):
    old_apps = migrator.loader.project_state(BEFORE).apps
    QuestionSet = old_apps.get_model("questions", "QuestionSet")
    Question = old_apps.get_model("questions", "Question")
    Attempt = old_apps.get_model("questions", "Attempt")
    User = old_apps.get_model(django_user_model._meta.app_label, django_user_model._meta.model_name)
    user = User.objects.create(username="ada", password="!")
    question_set = QuestionSet.objects.create(slug="s", title="S", order=1, source_path="s.toml")
    criteria = [{"id": "reads-weights", "earns": "Says each step reads all the weights.", "points": 2}]
    follow_up = {"slug": "batching", "prompt": "And batching?", "rubric": [{"id": "shared", "earns": "Shared read."}],
                 "rubric_version": "fu-v1"}
    question = Question.objects.create(
        question_set=question_set, slug="q", kind="free_text", difficulty="core", prompt="Why?",
        spec={"type": "free_text", "rubric": criteria, "misconceptions": [], "follow_ups": [follow_up]},
        rubric_version="v2", order=1,
    )
    fields = {"user": user, "question": question, "answer": "a", "score": 1, "max_score": 2, "result": {}}
    current = Attempt.objects.create(rubric_version="v2", **fields)
    older = Attempt.objects.create(rubric_version="v1", **fields)
    on_follow_up = Attempt.objects.create(rubric_version="fu-v1", follow_up="batching", **fields)

    migrator.loader.build_graph()
    migrator.migrate(AFTER)
    new_apps = migrator.loader.project_state(AFTER).apps
    Attempt = new_apps.get_model("questions", "Attempt")
    Rubric = new_apps.get_model("questions", "Rubric")

    linked = Attempt.objects.get(pk=current.pk).rubric
    assert linked.content_hash == "v2" and linked.follow_up == ""
    assert linked.spec["rubric"] == criteria
    follow_up_rubric = Attempt.objects.get(pk=on_follow_up.pk).rubric
    assert (follow_up_rubric.content_hash, follow_up_rubric.follow_up) == ("fu-v1", "batching")
    assert Attempt.objects.get(pk=older.pk).rubric is None  # its version was never stored
    assert Rubric.objects.count() == 2
