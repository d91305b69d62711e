"""A rubric stored as JSON grades exactly as the parsed file does: the database can be the one source."""

import json
from pathlib import Path

import pytest
from django.conf import settings

from questions.bank import load_bank
from questions.content_sync import question_spec
from questions.grading import grade
from questions.grading.belief_reader import criterion_reader, reader
from questions.grading.embedding import encoder
from questions.rubrics import RubricUnavailable, gradable_from, rubric_hash, rubric_spec

BANK = load_bank(content_dir=Path(settings.BASE_DIR) / "questions" / "content")


def _stored(spec: dict) -> dict:
    return json.loads(json.dumps(spec))  # what a JSONField gives back


def _without_version(result) -> dict:
    data = result.to_dict()
    data.pop("rubric_version")
    return data


@pytest.fixture
def learner_text_read_once():
    """Each answer below is graded twice, from the parsed file and from the stored rubric. What
    the models read of the learner's own text (a sentence's vector, a belief-sentence or
    criterion-sentence pair's log-odds, keyed by both texts) cannot depend on where the rubric
    came from, so it is read once: the test takes half the time and still compares everything the
    rubric decides."""
    encoder().remember_sentences()
    reader().remember_pairs()
    criterion_reader().remember_pairs()
    yield
    encoder().remember_sentences(on=False)
    reader().remember_pairs(on=False)
    criterion_reader().remember_pairs(on=False)


@pytest.mark.usefixtures("learner_text_read_once")
def test_every_question_and_follow_up_grades_the_same_from_its_stored_rubric():
    graded = 0
    for question in BANK.questions.values():
        stored_question = _stored(question_spec(question))
        items = [("", question), *((f.slug, f) for f in question.follow_ups)]
        for follow_up, item in items:
            spec = rubric_spec(item)
            rebuilt = gradable_from(
                question_spec=stored_question, rubric=_stored(spec), version=rubric_hash(spec), follow_up=follow_up
            )
            answers = [item.model_answer, "It is memory-bound because the weights are read every step."]
            if item.type == "multiple_choice":
                answers = [str(i) for i in range(len(item.choices))]
            for answer in answers:
                assert _without_version(grade(question=rebuilt, answer=answer)) == _without_version(
                    grade(question=item, answer=answer)
                ), (question.slug, follow_up, answer)
                graded += 1
            assert grade(question=rebuilt, answer=answers[0]).rubric_version == rubric_hash(spec)
    assert graded > 200


def test_the_hash_tracks_what_decides_a_grade():
    question = BANK.question("prefill-decode-ttft")
    spec = rubric_spec(question)
    assert rubric_hash(_stored(spec)) == rubric_hash(spec)  # stable through storage
    changed = _stored(spec)
    changed["rubric"][0]["earns"] += " (reworded)"
    assert rubric_hash(changed) != rubric_hash(spec)
    synonym = _stored(spec)
    concept = next(iter(synonym["concepts"]))
    synonym["concepts"][concept].append("a new synonym")
    assert rubric_hash(synonym) != rubric_hash(spec)


def test_a_version_kept_from_before_full_storage_refuses_to_grade_with_a_clear_message():
    question = BANK.question("prefill-decode-ttft")
    legacy = {"type": "free_text", "rubric": [], "misconceptions": [], "choices": [], "numeric": None}
    try:
        gradable_from(question_spec=question_spec(question), rubric=legacy, version="v1")
    except RubricUnavailable as error:
        assert "sync_content" in str(error)
    else:
        raise AssertionError("a legacy rubric must not grade")


def test_a_concepts_absent_words_are_stored_with_it_and_only_where_set():
    question = BANK.question("copy-on-write-sampling")
    spec = _stored(rubric_spec(question))
    assert spec["concepts"]["shared_without_count"]["absent"][:2] == ["count", "how many"]
    # A concept without them is stored as its patterns alone, as before the field existed, so
    # the versions of rubrics that use none did not move.
    assert isinstance(spec["concepts"]["copy_on_write"], list)
    answer = (
        "The four samples' block tables all point at the same physical blocks for the prompt, "
        "each with a reference count of 4."
    )

    def refcount(rubric: dict) -> bool:
        rebuilt = gradable_from(
            question_spec=_stored(question_spec(question)), rubric=rubric, version=rubric_hash(rubric),
        )
        return {c.id: c.met for c in grade(question=rebuilt, answer=answer).criteria}["refcount"]

    # The count in the sentence lifts the guard, from the stored rubric as from the file; a
    # rubric stored without the words would take the point away.
    assert refcount(spec) is True
    unguarded = _stored(spec)
    unguarded["concepts"]["shared_without_count"] = spec["concepts"]["shared_without_count"]["patterns"]
    assert rubric_hash(unguarded) != rubric_hash(spec)
    assert refcount(unguarded) is False
