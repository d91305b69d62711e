"""The signed-in lesson page: what every learner shares is built once per content version, the
learner's own part (progress, checks answered) costs a bounded number of queries, and a
sync_content that changes a lesson shows at once while unchanged lessons are not re-rendered."""

from pathlib import Path

from django.core.management import call_command

from courses import selectors as course_selectors
from courses.models import LessonProgress

LESSON = "/learn/lessons/first-lesson/"
# session (read from Redis, none from the database), user, progress rows, latest check answers,
# and the "viewed" write when the learner opens a lesson other than the one they viewed last.
SIGNED_IN_LESSON_QUERIES = 4


def _tables(queries) -> str:
    return " ".join(query["sql"] for query in queries)


def test_a_signed_in_reload_costs_a_few_queries_and_none_for_the_shared_part(
    client, synced, make_user, django_assert_max_num_queries
):
    ada, grace = make_user("ada"), make_user("grace")
    client.force_login(ada)
    client.get(LESSON)  # builds the shared part for this content version
    client.post(f"{LESSON}done/", {"done": "1"})
    client.force_login(grace)
    with django_assert_max_num_queries(SIGNED_IN_LESSON_QUERIES) as queries:
        html = client.get(LESSON).content.decode()
    # Built by Ada's visit, served to Grace without touching the content tables.
    assert 'FROM "courses_lesson"' not in _tables(queries.captured_queries)
    assert 'FROM "questions_question"' not in _tables(queries.captured_queries)
    assert "First lesson" in html and "<math" in html and 'rel="next"' in html
    # Grace's own progress, not Ada's.
    assert "Mark as done" in html and "Basics: 0 of 2 done" in html
    with django_assert_max_num_queries(SIGNED_IN_LESSON_QUERIES - 1):
        client.get(LESSON)  # a reload of the lesson viewed last writes nothing
    client.force_login(ada)
    html = client.get(LESSON).content.decode()
    assert "Mark as not done" in html and "Basics: 1 of 2 done" in html


def test_reading_another_lesson_still_moves_continue_where_you_left_off(client, synced, user):
    client.force_login(user)
    client.get(LESSON)
    client.get("/learn/lessons/second-lesson/")
    client.get(LESSON)
    last = LessonProgress.objects.filter(user=user).order_by("-last_viewed_at").first()
    assert last.lesson.slug == "first-lesson"
    assert "Continue: First lesson" in client.get("/").content.decode()


def test_sync_content_shows_a_changed_lesson_at_once_and_renders_only_that_one(
    client, synced, user, monkeypatch
):
    client.force_login(user)
    client.get(LESSON)
    client.get("/learn/lessons/second-lesson/")
    lesson_file = Path(synced["courses"]) / "lessons" / "second-lesson.md"
    revised = lesson_file.read_text().replace('title = "Second lesson"', 'title = "Second lesson, revised"')
    lesson_file.write_text(revised)
    rendered = []
    real_render = course_selectors.render_lesson_body
    monkeypatch.setattr(
        course_selectors, "render_lesson_body", lambda **kwargs: rendered.append(1) or real_render(**kwargs)
    )
    course_selectors._LOCAL_RENDER_CACHE.clear()  # as in another process: only Redis holds them
    call_command("sync_content")
    assert "Second lesson, revised" in client.get("/learn/lessons/second-lesson/").content.decode()
    # The first lesson's page links to the second by title, so it is rebuilt with the new one...
    assert "Second lesson, revised" in client.get(LESSON).content.decode()
    # ...but only the changed lesson's Markdown was rendered again.
    assert len(rendered) == 1


def test_a_lesson_with_checks_counts_answers_in_a_bounded_number_of_queries(
    client, db, user, django_assert_max_num_queries
):
    call_command("sync_content")  # the repository's lessons, which carry checks
    url = "/learn/lessons/moe-and-expert-parallelism/"
    client.force_login(user)
    client.get(url)
    client.post(f"{url}checks/moe-memory-check/", {"answer": "0"})
    with django_assert_max_num_queries(SIGNED_IN_LESSON_QUERIES):
        html = client.get(url).content.decode()
    assert "Checks answered in this lesson: 1 of 2" in html
    assert "Your last answer scored" in html


def test_a_check_answered_before_thirty_answers_to_another_still_shows_its_last_answer(
    client, db, user, django_assert_max_num_queries
):
    from questions.models import Question
    from tests.grading import submit_and_mark

    call_command("sync_content")
    url = "/learn/lessons/moe-and-expert-parallelism/"
    choice, numeric = Question.objects.get(slug="moe-memory-check"), Question.objects.get(
        slug="moe-experts-touched-batch"
    )
    submit_and_mark(user=user, question=choice, answer="0")
    for n in range(31):
        submit_and_mark(user=user, question=numeric, answer=str(100 + n))
    client.force_login(user)
    client.get(url)
    with django_assert_max_num_queries(SIGNED_IN_LESSON_QUERIES + 1) as queries:  # one more, for the old check
        html = client.get(url).content.decode()
    # However often the learner answered, the page reads a bounded window of their answers.
    attempt_reads = [q["sql"] for q in queries.captured_queries if 'FROM "questions_attempt"' in q["sql"]]
    assert attempt_reads and all("LIMIT" in sql for sql in attempt_reads)
    assert "Checks answered in this lesson: 2 of 2" in html
    numeric_check = html.split('id="check-moe-experts-touched-batch"')[1]
    assert ">130</textarea>" in numeric_check.split("</form>")[0]  # the newest of the 31
    assert "Your last answer scored" in html.split('id="check-moe-memory-check"')[1].split("</section>")[0]


def test_a_retired_or_unknown_lesson_is_not_found(client, synced, user):
    client.force_login(user)
    assert client.get("/learn/lessons/no-such-lesson/").status_code == 404
    assert client.post("/learn/lessons/no-such-lesson/done/", {"done": "1"}).status_code == 404


def test_the_course_outline_is_shared_and_marks_only_the_learners_own_lessons(
    client, synced, make_user, django_assert_max_num_queries
):
    ada, grace = make_user("ada"), make_user("grace")
    client.force_login(ada)
    client.post(f"{LESSON}done/", {"done": "1"})
    html = client.get("/learn/").content.decode()
    assert html.index("First lesson") < html.index("Second lesson") and "1 of 2" in html
    client.force_login(grace)
    # user and the learner's finished lessons; the course, modules and lessons are shared
    with django_assert_max_num_queries(2):
        html = client.get("/learn/").content.decode()
    assert "0 of 2" in html and "1 of 2" not in html
