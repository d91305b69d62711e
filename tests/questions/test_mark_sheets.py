"""The mark sheet a learner reads: every criterion with its points, units, names, limits, the answer kept."""

import re

import pytest
from django.core.management import call_command

from questions.services import MAX_ANSWER_CHARS
from tests.grading import mark_pending_answers
from tests.questions.test_grading_reader import NO_PREPARATION, SPECULATIVE_THREE_WAYS

NUMERIC = "/practice/q/kv-bytes-per-token/"
FREE_TEXT = "/practice/q/prefill-decode-ttft/"


@pytest.fixture
def repository_content(db):
    call_command("sync_content")


def _rows(html: str) -> list[str]:
    """Each criterion row's text, tags stripped and spaces collapsed."""
    rows = re.findall(r'<div class="criterion [a-z]+" data-testid="criterion">(.*?)</div>', html, re.S)
    return [" ".join(re.sub(r"<[^>]+>", " ", row).split()).replace(" :", ":") for row in rows]


def test_numeric_sheet_shows_the_value_row_with_the_points_it_earned(client, repository_content, user):
    client.force_login(user)
    html = client.post(NUMERIC, {"answer": "128 KiB"}, HTTP_HX_REQUEST="true").content.decode()
    rows = _rows(html)
    assert len(rows) == 3, rows  # the value and the two working points
    assert rows[0].startswith("✓ Got it (3 of 3 pts): The number, with its unit (KiB).")
    assert "Missed (0 of 1 pts): Shows the formula" in rows[1]
    assert ">Working<" in html
    assert "3 / 5" in html


def test_a_bare_number_gets_a_word_about_the_unit_and_partial_points(client, repository_content, user):
    client.force_login(user)
    html = client.post(NUMERIC, {"answer": "131072"}, HTTP_HX_REQUEST="true").content.decode()
    value = _rows(html)[0]
    assert value.startswith("◐ Partly (1.5 of 3 pts): The number, with its unit (KiB).")
    assert "Right number, say the unit: 131072 read as bytes is 128 KiB" in value
    assert 'class="criterion partly"' in html


def test_working_earns_points_so_the_numeric_box_is_multi_line_and_says_so(client, repository_content, user):
    client.force_login(user)
    html = client.get(NUMERIC).content.decode()
    assert '<textarea name="answer"' in html
    assert "Your answer (with its unit) and your working" in html
    assert "The number with its unit earns 3 points; the working earns 2 more" in html
    assert "follow-up if you like" not in html
    working = "2 x 32 layers x 8 KV heads x 128 x 2 bytes = 131,072 bytes = 128 KiB"
    client.post(NUMERIC, {"answer": working})
    html = client.get(NUMERIC).content.decode()
    assert "5 / 5" in html


def test_the_answer_stays_in_the_box_after_grading(client, repository_content, user):
    client.force_login(user)
    answer = "Prefill is compute-bound and decode is memory-bound, so TTFT grows with the prompt."
    html = client.post(FREE_TEXT, {"answer": answer}, HTTP_HX_REQUEST="true").content.decode()
    box = re.search(r'<textarea name="answer"[^>]*id="id_answer"[^>]*>(.*?)</textarea>', html, re.S)
    assert box is not None and answer in box.group(1)
    page = client.get(FREE_TEXT).content.decode()  # and after a full reload (no-JS redirect)
    assert re.search(r'id="id_answer"[^>]*>\s*' + re.escape(answer), page)


def test_the_limit_agrees_in_help_text_form_and_server(client, repository_content, user):
    client.force_login(user)
    html = client.get(FREE_TEXT).content.decode()
    assert f'maxlength="{MAX_ANSWER_CHARS}"' in html
    assert f"Up to {MAX_ANSWER_CHARS:,} characters." in html
    assert f'maxlength="{MAX_ANSWER_CHARS * 2}"' not in html
    response = client.post(FREE_TEXT, {"answer": "word " * (MAX_ANSWER_CHARS // 5 + 1)})
    assert response.status_code == 422
    assert f"the limit is {MAX_ANSWER_CHARS:,}" in response.content.decode()


SWAPPED = "Prefill is memory-bound and decode is compute-bound, so a longer prompt barely matters."


def _marked_feedback(client, page: str, answer: str):
    """Answer on a question's page, let the worker mark it: (attempt, its mark sheet's HTML)."""
    client.post(page, {"answer": answer}, HTTP_HX_REQUEST="true")
    (attempt,) = mark_pending_answers()
    html = client.get(f"/practice/attempts/{attempt.pk}/feedback/", HTTP_HX_REQUEST="true").content.decode()
    return attempt, html


def test_misconceptions_are_named_in_words_never_by_id(client, repository_content, user):
    client.force_login(user)
    _, html = _marked_feedback(client, FREE_TEXT, SWAPPED)
    assert "Misconception: Prefill memory-bound, decode compute-bound (swapped)." in html
    assert "swapped-bounds" not in html


def test_a_cap_says_capped_only_where_it_lowered_the_score(client, repository_content, user):
    client.force_login(user)
    attempt, html = _marked_feedback(client, FREE_TEXT, SWAPPED)
    # Swapped bounds, and a longer prompt said to barely matter: two beliefs, a 35% ceiling the
    # score (1 of 7) is already under.
    assert attempt.score < 0.35 * attempt.max_score
    assert "<strong>Score ceiling.</strong> The answer rests on 2 misconceptions" in html
    assert "Score capped." not in html
    # Four of seven points earned, held to 3.5 by a belief (tests/questions/test_grading_reader.py).
    attempt, html = _marked_feedback(
        client, "/practice/q/draft-model-vs-medusa-eagle/", SPECULATIVE_THREE_WAYS + NO_PREPARATION,
    )
    assert attempt.score == attempt.max_score / 2
    assert "<strong>Score capped.</strong> The answer rests on a misconception" in html


def test_two_beliefs_on_the_mark_sheet_are_both_named_and_hold_the_answer_to_35_percent(
    client, repository_content, user
):
    """Round 28's fluent wrong answer: two points earned of six, two beliefs stated."""
    client.force_login(user)
    answer = (
        "FP8 stores weights in 8 bits but the math is done in FP32 for stability, so it's the "
        "slowest of the quantized formats and mainly useful when a model doesn't fit. INT4 runs on "
        "INT4 tensor cores at four times the BF16 rate, so it's the one that speeds up large-batch "
        "and prefill-heavy serving. On accuracy, integer formats are exact and evenly spaced, so "
        "INT4 is more faithful than FP8, which loses precision in its short mantissa. And FP8 works "
        "on any GPU, since it's just a storage format."
    )
    attempt, html = _marked_feedback(client, "/practice/q/fp8-vs-int4/", answer)
    assert float(attempt.score) == pytest.approx(0.35 * attempt.max_score)
    assert (
        "<strong>Score capped.</strong> The answer rests on 2 misconceptions (see below), so it is "
        "held to 35% whatever else it gets right." in html
    )
    assert "Misconception: INT4 kernels do 4-bit arithmetic." in html
    assert "Misconception: FP8 runs the same on any GPU." in html


def test_a_point_nearly_made_shows_the_learners_closest_sentence_and_the_way_to_challenge(
    client, repository_content, user
):
    client.force_login(user)
    answer = (
        "The first step reads the whole question at once, so a long question means a long wait before "
        "anything appears. After that each new word costs about the same, because the machine mostly spends "
        "its time fetching the model's numbers from memory, and the longer question only adds a little to that."
    )
    client.post(FREE_TEXT, {"answer": answer})
    mark_pending_answers()
    html = client.get(FREE_TEXT).content.decode()
    near = [row for row in _rows(html) if "Closest you came" in row]
    assert len(near) == 1, _rows(html)
    assert near[0].startswith("✗ Missed (0 of 1 pts):")
    assert (
        "Closest you came: “The first step reads the whole question at once, so a long question means a long "
        "wait before anything appears.” The marker read this as not making the point; if it does, challenge "
        "this mark"
    ) in near[0]
    from questions.models import Attempt

    attempt = Attempt.objects.get(user=user)
    assert f'href="/practice/attempts/{attempt.pk}/#challenge">challenge this mark</a>' in html
    # Points that were met quote their evidence, and no other row offers a near miss. Three since
    # the criterion reader (session 13) reads "the longer question only adds a little to that" as
    # the point that a longer prompt barely moves the time per token.
    assert sum("From your answer:" in row for row in _rows(html)) == 3
