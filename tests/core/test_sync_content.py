"""sync_content: idempotent, retires removed files without touching learner data, and names the
file and line of a malformed file."""


import pytest
from django.core.management import CommandError, call_command

from courses.models import Lesson, LessonProgress
from labs.models import Lab
from questions.models import Attempt, Question
from tests.sample_content import COURSE


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
        (
            "courses",
            "lessons/first-lesson.md",
            lambda t: t.replace("minutes = 5", 'minutes = "five"'),
            "first-lesson.md:4: 'minutes' must be a whole number",
        ),
        (
            "courses",
            "lessons/first-lesson.md",
            lambda t: t.replace("## The loop", "## The loop\n\n!figure[A chart](no_such_figure)"),
            "first-lesson.md:12: figure 'no_such_figure'",
        ),
        (
            "courses",
            "course.toml",
            lambda t: t.replace('title = "Basics"', 'title = "Basics'),
            "course.toml:8: invalid TOML",
        ),
        (
            "labs",
            "sample-lab.toml",
            lambda t: t.replace("default = 128", "default = 4096"),
            "sample-lab.toml:14: param 'max_tokens': default 4096 is outside 1..1024",
        ),
        (
            "labs",
            "sample-lab.toml",
            lambda t: t + '\n[plan]\nsweeep = "max_tokens"\n',
            "sample-lab.toml:20: [plan] key 'sweeep' is unknown",
        ),
        (
            "labs",
            "sample-lab.toml",
            lambda t: t + '\n[plan]\nsweep = "max_token"\n',
            "sample-lab.toml:20: [plan] sweep = 'max_token' is not one of this lab's parameters (max_tokens)",
        ),
        (
            "labs",
            "sample-lab.toml",
            lambda t: t + "\n[plan]\nrepeats = \"4\"\n",
            "sample-lab.toml:20: [plan] repeats must be int, not str",
        ),
        (
            "labs",
            "sample-lab.toml",
            lambda t: t.replace("What will TPOT be?", "From {max_token.low} tokens?"),
            "sample-lab.toml:8: prediction refers to {max_token.low/high}",
        ),
        (
            "questions",
            "sample-set.toml",
            lambda t: t.replace('type = "free_text"', 'type = "essay"'),
            "sample-set.toml:",
        ),
    ],
)
def test_a_malformed_file_fails_with_its_path_and_line_and_changes_nothing(
    content, kind, filename, breaker, expected, capsys
):
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
