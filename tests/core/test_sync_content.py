"""sync_content: idempotent, retires removed files without touching learner data, and names the
file and line of a malformed file."""

from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from courses.models import Lesson, LessonProgress
from labs.models import Lab
from questions.models import Attempt, Question

COURSE = """
slug = "test-course"
title = "Test course"
summary = "A small course for tests."

[[modules]]
slug = "basics"
title = "Basics"
lessons = ["first-lesson", "second-lesson"]
"""

LESSON = """+++
title = "{title}"
summary = "Why decode is slow."
minutes = 5
objectives = ["Explain the decode loop"]
practice = ["sample-question"]
labs = ["sample-lab"]
+++

## The loop

Decode reads every weight once per step: $t \\ge B / W$.

See [the other lesson](lesson:{other}#the-loop) and [the lab](lab:sample-lab).
"""

QUESTIONS = """
slug = "sample-set"
title = "Sample set"
summary = "One question."
order = 1

[[questions]]
slug = "sample-question"
type = "free_text"
difficulty = "core"
prompt = "Why is decode memory-bound?"
model_answer = "Each decode step reads all the weights to produce one token per sequence, so bytes moved dominate."
marked_up = "Naming the bytes read per step."
lesson = "first-lesson#the-loop"
lab = "sample-lab"

[[questions.rubric]]
id = "reads-weights"
points = 2
earns = "Says each step reads all the weights."
match = ["decode + weights"]
feedback_met = "Yes: every step streams the weights."
feedback_missed = "Say what each step has to read."

[[questions.rubric]]
id = "memory-bound"
points = 1
earns = "Names memory bandwidth as the limit."
match = ["decode + memory_bound"]
feedback_met = "Right, bandwidth is the limit."
feedback_missed = "Name the resource that limits decode."

[[questions.misconceptions]]
id = "decode-compute"
match = ["decode + compute_bound"]
correction = "At batch 1 decode does about 2 FLOPs per weight byte, far below the ridge point."

[[questions.follow_ups]]
slug = "batching"
prompt = "What changes with batching?"
model_answer = "The same weight read serves every sequence in the batch."

[[questions.follow_ups.rubric]]
id = "shared-read"
points = 1
earns = "Weights are read once for the whole batch."
match = ["batching + weights"]
feedback_met = "Yes."
feedback_missed = "Say what the batch shares."
"""

LAB = """
slug = "sample-lab"
title = "Sample lab"
objective = "Measure decode."
lesson = "first-lesson#the-loop"
questions = ["sample-question"]
guide = "Run it and compare with [the lesson](lesson:first-lesson)."
prediction = "What will TPOT be?"

[[params]]
name = "max_tokens"
label = "Output tokens"
kind = "int"
default = 128
min = 1
max = 1024
help = "How many tokens to decode."
"""


@pytest.fixture
def content(tmp_path: Path, settings):
    courses = tmp_path / "courses" / "content"
    (courses / "lessons").mkdir(parents=True)
    (courses / "course.toml").write_text(COURSE)
    (courses / "lessons" / "first-lesson.md").write_text(LESSON.format(title="First lesson", other="second-lesson"))
    (courses / "lessons" / "second-lesson.md").write_text(LESSON.format(title="Second lesson", other="first-lesson"))
    questions = tmp_path / "questions" / "content"
    questions.mkdir(parents=True)
    concepts = Path(settings.BASE_DIR) / "questions" / "content" / "concepts.toml"
    (questions / "concepts.toml").write_text(concepts.read_text())
    (questions / "sample-set.toml").write_text(QUESTIONS)
    labs = tmp_path / "labs" / "content"
    labs.mkdir(parents=True)
    (labs / "sample-lab.toml").write_text(LAB)
    settings.CONTENT_DIRS = {"courses": courses, "questions": questions, "labs": labs}
    return {"courses": courses, "questions": questions, "labs": labs}


def sync(capsys, *args) -> str:
    call_command("sync_content", *args)
    return capsys.readouterr().out


@pytest.mark.django_db
def test_sync_loads_every_kind_and_a_second_run_changes_nothing(content, capsys):
    first = sync(capsys, "--strict")
    assert "lessons: 2 created" in first
    assert "questions: 1 created" in first
    assert "labs: 1 created" in first
    lesson = Lesson.objects.get(slug="first-lesson")
    stamp = lesson.updated_at
    second = sync(capsys, "--strict")
    assert "lessons: 0 created, 0 updated, 2 unchanged, 0 retired" in second
    assert "questions: 0 created, 0 updated, 1 unchanged, 0 retired" in second
    assert "Content already up to date." in second
    lesson.refresh_from_db()
    assert lesson.updated_at == stamp


@pytest.mark.django_db
def test_a_removed_file_retires_its_row_and_keeps_learner_data(content, capsys, user):
    sync(capsys)
    question = Question.objects.get(slug="sample-question")
    lesson = Lesson.objects.get(slug="second-lesson")
    Attempt.objects.create(
        user=user, question=question, answer="x", score=1, max_score=3, result={}, rubric_version="v"
    )
    LessonProgress.objects.create(user=user, lesson=lesson)

    (content["questions"] / "sample-set.toml").unlink()
    (content["courses"] / "lessons" / "second-lesson.md").unlink()
    (content["courses"] / "course.toml").write_text(COURSE.replace(', "second-lesson"', ""))
    (content["labs"] / "sample-lab.toml").unlink()
    out = sync(capsys)
    assert "lessons: 0 created, 0 updated, 1 unchanged, 1 retired" in out
    assert "questions: 0 created, 0 updated, 0 unchanged, 1 retired" in out
    question.refresh_from_db()
    lesson.refresh_from_db()
    assert question.retired and lesson.retired
    assert Lab.objects.get(slug="sample-lab").retired
    assert Attempt.objects.filter(question=question).count() == 1
    assert LessonProgress.objects.filter(lesson=lesson).count() == 1


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("kind", "filename", "breaker", "expected"),
    [
        ("courses", "lessons/first-lesson.md", lambda t: t.replace('minutes = 5', 'minutes = "five"'), "first-lesson.md:5: 'minutes' must be a whole number"),
        ("courses", "lessons/first-lesson.md", lambda t: t.replace("## The loop", "## The loop\n\n!figure[A chart](no_such_figure)"), "first-lesson.md:12: figure 'no_such_figure'"),
        ("courses", "course.toml", lambda t: t.replace('title = "Basics"', 'title = "Basics'), "course.toml:9: invalid TOML"),
        ("labs", "sample-lab.toml", lambda t: t.replace("default = 128", "default = 4096"), "sample-lab.toml:16: param 'max_tokens': default 4096 is outside 1..1024"),
        ("questions", "sample-set.toml", lambda t: t.replace('type = "free_text"', 'type = "essay"'), "sample-set.toml:"),
    ],
)
def test_a_malformed_file_fails_with_its_path_and_line_and_changes_nothing(content, kind, filename, breaker, expected, capsys):
    path = content[kind] / filename
    path.write_text(breaker(path.read_text()))
    with pytest.raises(CommandError) as error:
        call_command("sync_content")
    assert expected in str(error.value)
    assert not Lesson.objects.exists()


@pytest.mark.django_db
def test_dangling_links_warn_and_fail_in_strict_mode(content, capsys):
    lesson = content["courses"] / "lessons" / "first-lesson.md"
    lesson.write_text(lesson.read_text() + "\nAlso [missing](question:no-such-question).\n")
    call_command("sync_content")
    err = capsys.readouterr().err
    assert "question 'no-such-question' does not exist" in err
    with pytest.raises(CommandError, match="dangling links"):
        call_command("sync_content", "--strict")


@pytest.mark.django_db
def test_the_repository_content_syncs_strictly(settings, capsys):
    """The real lessons, question bank and labs load with no dangling link."""
    call_command("sync_content", "--strict")
    out = capsys.readouterr().out
    assert "Content synced." in out
