"""The signed-in question page: its shared part (question, set siblings, lesson and lab links)
is built once per content version; the learner's own part is a bounded number of queries."""

from django.core.management import call_command

from tests.grading import mark_pending_answers

URL = "/practice/q/sample-question/"
# user, the learner's newest answers to this question as score lines, then either the newest of
# each part in full (answered) or whether they revealed the model answer (not yet answered).
SIGNED_IN_QUESTION_QUERIES = 3


def test_a_signed_in_question_page_is_a_few_queries_and_shows_the_learners_own_attempts(
    client, synced, make_user, django_assert_max_num_queries
):
    ada, grace = make_user("ada"), make_user("grace")
    client.force_login(ada)
    client.get(URL)
    client.post(URL, {"answer": "Decode reads all the weights every step; memory bandwidth is the limit."})
    client.force_login(grace)
    with django_assert_max_num_queries(SIGNED_IN_QUESTION_QUERIES) as queries:
        html = client.get(URL).content.decode()
    assert 'FROM "questions_question"' not in " ".join(query["sql"] for query in queries.captured_queries)
    assert "Why is decode memory-bound?" in html
    assert 'href="/labs/sample-lab/"' in html and 'href="/learn/lessons/first-lesson/#the-loop"' in html
    assert 'id="feedback"' not in html  # Grace has not answered: no mark sheet, no model answer
    client.force_login(ada)
    with django_assert_max_num_queries(SIGNED_IN_QUESTION_QUERIES):
        html = client.get(URL).content.decode()
    assert 'id="feedback"' in html  # Ada's own mark sheet


def test_a_learner_who_answered_many_times_gets_the_same_few_queries_and_the_newest_sheet(
    client, synced, user, django_assert_max_num_queries
):
    from questions.models import Attempt, Question
    from tests.grading import submit_and_mark

    question = Question.objects.get(slug="sample-question")
    tries = [submit_and_mark(user=user, question=question, answer=f"Decode is slow, try {n}.") for n in range(12)]
    newest = submit_and_mark(user=user, question=question, answer="Decode is memory-bound: it reads all the weights.")
    submit_and_mark(user=user, question=question, answer="Batching shares the weight read.", follow_up="batching")
    client.get(URL)  # anonymous: builds the part every learner shares
    client.force_login(user)
    with django_assert_max_num_queries(SIGNED_IN_QUESTION_QUERIES) as queries:
        html = client.get(URL).content.decode()
    # Only the newest main answer and the follow-up's are read in full (answer text, mark sheet).
    full_reads = [q["sql"] for q in queries.captured_queries if '"questions_attempt"."result"' in q["sql"]]
    assert len(full_reads) == 1 and Attempt.objects.filter(user=user).count() == 14
    assert "it reads all the weights" in html and "try 11" not in html.split('id="history-title"')[0]
    assert html.count('href="/practice/attempts/') >= 10 and f'href="{newest.get_absolute_url()}"' in html
    # "Your attempts" lists the ten newest main answers: the three oldest are not read at all.
    history = html.split('id="history-title"')[1]
    assert history.count('href="/practice/attempts/') == 10
    assert all(f'href="{old.get_absolute_url()}"' not in history for old in tries[:3])
    assert f'href="{tries[3].get_absolute_url()}"' in history


def test_a_follow_up_answered_before_thirty_main_answers_still_shows_its_mark_sheet(
    client, synced, user, django_assert_max_num_queries
):
    from questions.models import Question
    from tests.grading import submit_and_mark

    question = Question.objects.get(slug="sample-question")
    early = submit_and_mark(
        user=user, question=question, answer="Batching shares the weight read.", follow_up="batching"
    )
    for n in range(30):
        submit_and_mark(user=user, question=question, answer=f"Decode reads all the weights, take {n}.")
    client.force_login(user)
    client.get(URL)
    with django_assert_max_num_queries(SIGNED_IN_QUESTION_QUERIES + 1):  # one more, for the old follow-up
        html = client.get(URL).content.decode()
    follow_up = html.split('id="follow-up-batching"')[1]
    assert "Batching shares the weight read." in follow_up and early.get_absolute_url() not in html.split(
        'id="history-title"'
    )[1]
    assert "take 29" in html


def test_a_changed_question_shows_after_sync_content(client, synced, content, user):
    client.force_login(user)
    assert "Why is decode memory-bound?" in client.get(URL).content.decode()
    questions = content["questions"] / "sample-set.toml"
    questions.write_text(questions.read_text().replace("Why is decode memory-bound?", "Why is decode slow?"))
    call_command("sync_content")
    assert "Why is decode slow?" in client.get(URL).content.decode()


def test_an_unknown_question_is_not_found(client, synced, user):
    client.force_login(user)
    assert client.get("/practice/q/no-such-question/").status_code == 404
    assert client.post("/practice/q/no-such-question/", {"answer": "x"}).status_code == 404


def test_the_review_queue_is_a_few_queries_however_many_cards_are_due(
    client, synced, user, django_assert_max_num_queries
):
    client.force_login(user)
    client.post(URL, {"answer": "Decode reads all the weights every step."})  # a wrong-ish answer: a card
    mark_pending_answers()
    client.get("/practice/review/")
    # user, cards due today (with their questions), upcoming cards
    with django_assert_max_num_queries(3) as queries:
        html = client.get("/practice/review/").content.decode()
    assert "Why is decode memory-bound?" in html and 'href="/practice/q/sample-question/"' in html
    # A card shows its question's prompt and set: the question's spec (rubric, model answer) is not read.
    assert '"questions_question"."spec"' not in " ".join(query["sql"] for query in queries.captured_queries)


def test_the_practice_index_shares_the_sets_and_counts_the_learners_own_answers(
    client, synced, make_user, django_assert_max_num_queries
):
    ada, grace = make_user("ada"), make_user("grace")
    client.force_login(ada)
    client.post(URL, {"answer": "Decode reads all the weights every step."})
    assert "1 answered" in client.get("/practice/").content.decode()
    client.force_login(grace)
    with django_assert_max_num_queries(2):  # user, the learner's answered questions per set
        html = client.get("/practice/").content.decode()
    assert "Sample set" in html and "0 answered" in html


def test_the_shared_part_of_a_question_page_is_rendered_once_for_every_learner(
    client, synced, content, make_user, rendered_templates
):
    """The question's heading, its set, lesson and lab links (and its set's other questions) are
    HTML rendered once per content version; a sync that renames its set shows at once."""
    from questions import views

    rendered = rendered_templates(views)
    for name in ("ada", "grace"):
        client.force_login(make_user(name))
        html = client.get(URL).content.decode()
        assert f"Log out {name}" in html and "<h1>Why is decode memory-bound?</h1>" in html
        assert 'href="/labs/sample-lab/"' in html and 'href="/learn/lessons/first-lesson/#the-loop"' in html
        assert ">Sample set</a>" in html
    assert sorted(rendered) == ["questions/question.html#question-head", "questions/question.html#question-siblings"]
    questions = content["questions"] / "sample-set.toml"
    questions.write_text(questions.read_text().replace('title = "Sample set"', 'title = "Decode basics"'))
    call_command("sync_content")
    assert ">Decode basics</a>" in client.get(URL).content.decode()
