"""Rubric versions are stored once, by content hash, and every attempt keeps the one it was graded with."""

from pathlib import Path

import pytest
from django.core.management import call_command
from django.db import IntegrityError

from questions.models import Attempt, Question, Rubric
from tests.grading import mark_pending_answers

STRONG = (
    "Decode is memory-bound: every step has to read all the weights from HBM to make one token. "
    "With batching the same weight read is shared by every sequence in the batch."
)
OLD_EARNS = "Says each step reads all the weights."
NEW_EARNS = "Explains that every decode step streams the full set of weights from memory."
OLD_FOLLOW_UP_EARNS = "Weights are read once for the whole batch."
NEW_FOLLOW_UP_EARNS = "Says one read of the weights serves every sequence in the batch."


def _rewrite(content: dict, old: str, new: str) -> None:
    path = next(Path(content["questions"]).glob("sample*.toml"))
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new))


def test_an_unchanged_sync_stores_no_new_version(synced):
    question = Question.objects.get(slug="sample-question")
    before = list(Rubric.objects.filter(question=question).values_list("pk", "content_hash", "follow_up"))
    assert {follow_up for _, _, follow_up in before} == {"", "batching"}
    call_command("sync_content")
    assert list(Rubric.objects.filter(question=question).values_list("pk", "content_hash", "follow_up")) == before


def test_old_attempts_render_the_criteria_they_were_graded_with(client, synced, user):
    client.force_login(user)
    client.post("/practice/q/sample-question/", {"answer": STRONG})
    client.post(
        "/practice/q/sample-question/",
        {"answer": "Batching shares one read of the weights across all the sequences.", "follow_up": "batching"},
    )
    mark_pending_answers()
    old_main = Attempt.objects.get(user=user, follow_up="")
    old_follow_up = Attempt.objects.get(user=user, follow_up="batching")
    old_rubric = old_main.rubric
    assert old_main.rubric_version == old_rubric.content_hash
    # A follow-up is graded and stored with its own version, not its parent's.
    assert old_follow_up.rubric.follow_up == "batching"
    assert old_follow_up.rubric_id != old_rubric.pk
    assert old_follow_up.result["rubric_version"] == old_follow_up.rubric.content_hash

    _rewrite(synced, OLD_EARNS, NEW_EARNS)
    _rewrite(synced, OLD_FOLLOW_UP_EARNS, NEW_FOLLOW_UP_EARNS)
    call_command("sync_content")

    old_rubric.refresh_from_db()
    assert OLD_EARNS in [c["earns"] for c in old_rubric.criteria]  # never edited
    question = Question.objects.get(slug="sample-question")
    assert question.rubric_version != old_rubric.content_hash
    assert Rubric.objects.filter(question=question).count() == 4  # two versions each of main and follow-up

    client.post("/practice/q/sample-question/", {"answer": STRONG})
    mark_pending_answers()
    new_main = Attempt.objects.filter(user=user, follow_up="").latest("created_at")
    assert new_main.pk != old_main.pk
    assert new_main.rubric.content_hash == question.rubric_version
    assert new_main.result["rubric_version"] == question.rubric_version

    old_page = client.get(old_main.get_absolute_url()).content.decode()
    assert OLD_EARNS in old_page and NEW_EARNS not in old_page
    assert "graded against an earlier version of the rubric" in old_page
    new_page = client.get(new_main.get_absolute_url()).content.decode()
    assert NEW_EARNS in new_page and OLD_EARNS not in new_page
    assert "earlier version of the rubric" not in new_page

    old_follow_up_page = client.get(old_follow_up.get_absolute_url()).content.decode()
    assert OLD_FOLLOW_UP_EARNS in old_follow_up_page and NEW_FOLLOW_UP_EARNS not in old_follow_up_page


def test_grading_reads_the_stored_rubric_not_the_files(client, synced, user):
    """Editing a file changes nothing until sync_content loads it: the database is the one source."""
    _rewrite(synced, OLD_EARNS, NEW_EARNS)
    client.force_login(user)
    client.post("/practice/q/sample-question/", {"answer": STRONG})
    (attempt,) = mark_pending_answers()
    assert attempt.rubric.content_hash == Question.objects.get(slug="sample-question").rubric_version
    assert OLD_EARNS in client.get(attempt.get_absolute_url()).content.decode()


def test_a_version_is_unique_per_question(synced):
    rubric = Rubric.objects.filter(follow_up="").first()
    with pytest.raises(IntegrityError):
        Rubric.objects.create(question=rubric.question, content_hash=rubric.content_hash, spec={})


def test_an_attempt_linked_by_the_migration_is_stale_only_if_its_criteria_changed(client, synced, user):
    """Versions kept by migration 0002 lack the concepts, so their hash differs from every full
    version; the mark sheet compares what the learner sees instead."""
    question = Question.objects.get(slug="sample-question")
    current = Rubric.objects.get(question=question, content_hash=question.rubric_version)
    legacy_fields = ("type", "rubric", "misconceptions", "choices", "numeric")
    same = Rubric.objects.create(
        question=question, content_hash="0ld-same", spec={key: current.spec[key] for key in legacy_fields}
    )
    reworded = {key: current.spec[key] for key in legacy_fields}
    reworded["rubric"] = [{**reworded["rubric"][0], "earns": "An older wording."}, *reworded["rubric"][1:]]
    older = Rubric.objects.create(question=question, content_hash="0ld-reworded", spec=reworded)
    fields = {"user": user, "question": question, "answer": STRONG, "score": 3, "max_score": 3, "result": {}}
    unchanged_attempt = Attempt.objects.create(rubric=same, rubric_version="0ld-same", **fields)
    changed_attempt = Attempt.objects.create(rubric=older, rubric_version="0ld-reworded", **fields)
    client.force_login(user)

    unchanged_page = client.get(unchanged_attempt.get_absolute_url()).content.decode()
    assert "earlier version of the rubric" not in unchanged_page
    changed_page = client.get(changed_attempt.get_absolute_url()).content.decode()
    assert "graded against an earlier version of the rubric" in changed_page
    assert "An older wording." in changed_page and OLD_EARNS not in changed_page
