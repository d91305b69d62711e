"""A learner challenging their mark: what they can tick, what is stored, what they read after."""

import re

import pytest
from django.core.management import call_command
from django.urls import reverse

from questions.challenges import MAX_NOTE_CHARS, settle_challenges
from questions.models import Attempt, MarkChallenge, Question
from tests.grading import submit_and_mark

# Names both phases and ties TTFT to prefill; says nothing about decode's bound or the KV cache.
PARTIAL = (
    "A request has two phases, prefill and then decode. Time to first token is mostly prefill, "
    "which takes longer when the prompt is longer."
)
# States the swapped-bounds misconception.
# One belief, stated once. (Its longer form, "...So a long prompt slows the first token but not
# the rest.", is also flagged as "TTFT does not depend on the prompt": a known error of the belief
# reader, pinned in tests/questions/test_grading_reader.py.)
SWAPPED = (
    "Prefill is memory-bound because it streams the prompt, while decode is compute-bound because "
    "each token needs heavy matrix math."
)


@pytest.fixture
def repository_content(db):
    call_command("sync_content")


@pytest.fixture
def marked(repository_content, user):
    question = Question.objects.get(slug="prefill-decode-ttft")
    return submit_and_mark(user=user, question=question, answer=PARTIAL)


def _text(html: str) -> str:
    return " ".join(re.sub(r"<[^>]+>", " ", html).split())


def _boxes(html: str, name: str) -> dict[str, str]:
    """Checkbox value -> its label text, for one field of the challenge form."""
    found = re.findall(
        rf'<label class="choice"><input type="checkbox" name="{name}" value="(\d+)"[^>]*> (.*?)</label>', html, re.S
    )
    return {value: " ".join(label.split()) for value, label in found}


def test_a_missed_point_can_be_challenged_and_the_form_offers_exactly_the_points_missed(client, marked, user):
    client.force_login(user)
    missed = {c["id"] for c in marked.result["criteria"] if c["awarded"] < c["points"]}
    assert missed and len(missed) < len(marked.result["criteria"])

    sheet = client.get(reverse("questions:attempt-feedback", kwargs={"attempt_id": marked.pk})).content.decode()
    assert "Think the grader missed a point you made?" in sheet
    assert f"/practice/attempts/{marked.pk}/#challenge" in sheet

    page = client.get(marked.get_absolute_url()).content.decode()
    boxes = _boxes(page, "criteria")
    earns = {c["id"]: c["earns"] for c in marked.rubric.spec["rubric"]}
    assert sorted(boxes.values()) == sorted(earns[i] for i in missed)
    # The page names points by what they earn, never by their ids.
    for criterion_id in earns:
        assert f'value="{criterion_id}"' not in page


def test_sending_a_challenge_stores_it_and_the_learner_reads_its_status_and_note(client, marked, user):
    client.force_login(user)
    page = client.get(marked.get_absolute_url()).content.decode()
    position = next(iter(_boxes(page, "criteria")))
    note = "My <b>second</b> sentence says decode reads all weights."
    response = client.post(
        reverse("questions:attempt-challenge", kwargs={"attempt_id": marked.pk}),
        {"criteria": [position], "note": note},
    )
    assert response.status_code == 302 and response["Location"].endswith("#challenge")

    challenge = MarkChallenge.objects.get(attempt=marked)
    wanted = [c["id"] for c in marked.result["criteria"]][int(position)]
    assert challenge.criteria == [wanted] and challenge.note == note
    assert challenge.status == MarkChallenge.Status.OPEN

    page = client.get(marked.get_absolute_url()).content.decode()
    text = _text(page)
    assert "Your challenge of this mark" in text and "Waiting for staff" in text
    assert "The score above is the grader's and stays as it is until staff have looked." in text
    assert "My &lt;b&gt;second&lt;/b&gt; sentence" in page  # escaped, not markup
    assert "Update my challenge" in text
    marked.refresh_from_db()
    assert marked.score == challenge.attempt.score  # the mark itself is untouched


def test_a_point_already_earned_or_nothing_ticked_is_refused_with_a_reason(client, marked, user):
    client.force_login(user)
    url = reverse("questions:attempt-challenge", kwargs={"attempt_id": marked.pk})
    earned = next(i for i, c in enumerate(marked.result["criteria"]) if c["awarded"] == c["points"])
    response = client.post(url, {"criteria": [earned]})
    assert response.status_code == 400
    assert "Select a valid choice" in response.content.decode()

    response = client.post(url, {"note": "I think it is wrong"})
    assert response.status_code == 400
    assert "Tick at least one point you made or one misconception you did not state." in _text(
        response.content.decode()
    )

    page = client.get(marked.get_absolute_url()).content.decode()
    position = next(iter(_boxes(page, "criteria")))
    response = client.post(url, {"criteria": [position], "note": "x" * (MAX_NOTE_CHARS + 1)})
    assert response.status_code == 400
    assert f"Your note is {MAX_NOTE_CHARS + 1:,} characters; the limit is {MAX_NOTE_CHARS:,}." in _text(
        response.content.decode()
    )
    assert not MarkChallenge.objects.exists()


def test_a_flagged_misconception_can_be_disputed(client, repository_content, user):
    client.force_login(user)
    question = Question.objects.get(slug="prefill-decode-ttft")
    attempt = submit_and_mark(user=user, question=question, answer=SWAPPED)
    assert [m["id"] for m in attempt.result["misconceptions"]] == ["swapped-bounds"]
    page = client.get(attempt.get_absolute_url()).content.decode()
    boxes = _boxes(page, "misconceptions")
    assert list(boxes.values()) == ["Prefill memory-bound, decode compute-bound (swapped)"]
    client.post(
        reverse("questions:attempt-challenge", kwargs={"attempt_id": attempt.pk}),
        {"misconceptions": list(boxes)},
    )
    assert MarkChallenge.objects.get(attempt=attempt).misconceptions == ["swapped-bounds"]


def test_nobody_can_challenge_another_learners_mark_or_see_it(client, marked, make_user):
    client.force_login(make_user(username="eve"))
    url = reverse("questions:attempt-challenge", kwargs={"attempt_id": marked.pk})
    assert client.post(url, {"criteria": ["0"]}).status_code == 404
    assert client.get(marked.get_absolute_url()).status_code == 404
    assert not MarkChallenge.objects.exists()


def test_an_answer_still_being_marked_cannot_be_challenged_yet(client, repository_content, user):
    client.force_login(user)
    question = Question.objects.get(slug="prefill-decode-ttft")
    pending = Attempt.objects.create(
        user=user, question=question, answer=PARTIAL, score=0, max_score=0, result={},
        rubric_version="x", grade_status=Attempt.GradeStatus.PENDING,
    )
    page = client.get(pending.get_absolute_url()).content.decode()
    assert 'data-testid="challenge"' not in page
    response = client.post(
        reverse("questions:attempt-challenge", kwargs={"attempt_id": pending.pk}), {"criteria": ["0"]}, follow=True
    )
    assert "This mark cannot be challenged (it is still being marked" in _text(response.content.decode())
    assert not MarkChallenge.objects.exists()


def test_staff_upholding_a_challenge_is_what_the_learner_reads_and_the_form_closes(client, marked, user):
    client.force_login(user)
    page = client.get(marked.get_absolute_url()).content.decode()
    position = next(iter(_boxes(page, "criteria")))
    url = reverse("questions:attempt-challenge", kwargs={"attempt_id": marked.pk})
    client.post(url, {"criteria": [position]})
    challenge = MarkChallenge.objects.get(attempt=marked)
    challenge.staff_note = "Right: your second sentence makes the point."
    challenge.save()
    assert settle_challenges(challenges=[challenge], upheld=True) == 1
    assert settle_challenges(challenges=[MarkChallenge.objects.get()], upheld=False) == 0  # settled once

    text = _text(client.get(marked.get_absolute_url()).content.decode())
    assert "Staff agreed with you" in text
    assert "Staff agreed that the grader got this wrong. The score above is the grader's and stays as it was" in text
    assert "Staff: Right: your second sentence makes the point." in text
    assert "Send my challenge" not in text and "Update my challenge" not in text
    response = client.post(url, {"criteria": [position]}, follow=True)
    assert "staff have settled it" in _text(response.content.decode())
    assert MarkChallenge.objects.get().status == MarkChallenge.Status.UPHELD


def test_the_admin_lists_challenges_and_its_actions_settle_them(admin_client, marked):
    MarkChallenge.objects.create(attempt=marked, criteria=["decode-memory-bound"], note="said it")
    listing = admin_client.get("/admin/questions/markchallenge/").content.decode()
    assert "Waiting for staff" in listing
    response = admin_client.post(
        "/admin/questions/markchallenge/",
        {"action": "reject", "_selected_action": [MarkChallenge.objects.get().pk]},
        follow=True,
    )
    assert "1 challenge(s) rejected." in response.content.decode()
    challenge = MarkChallenge.objects.get()
    assert challenge.status == MarkChallenge.Status.REJECTED and challenge.resolved_at is not None


def test_the_data_export_carries_the_challenge(client, marked, user):
    MarkChallenge.objects.create(attempt=marked, criteria=["decode-memory-bound"], note="said it")
    client.force_login(user)
    from questions.selectors import practice_export

    exported = practice_export(user=user)["attempts"][0]["challenge"]
    assert exported["criteria"] == ["decode-memory-bound"] and exported["status"] == "open"
    assert exported["note"] == "said it"


def test_upheld_challenges_become_labelled_answers_that_the_grading_report_measures(
    repository_content, user, make_user, tmp_path
):
    import io
    import tomllib

    from questions.challenges import challenge_mark

    question = Question.objects.get(slug="prefill-decode-ttft")
    upheld = submit_and_mark(user=user, question=question, answer=PARTIAL)
    missed = [c for c in upheld.result["criteria"] if not c["met"]]
    position = {c["id"]: n for n, c in enumerate(upheld.result["criteria"])}
    claimed = missed[0]["id"]
    challenge_mark(user=user, attempt=upheld, criteria=[position[claimed]], misconceptions=[], note="")
    settle_challenges(challenges=list(MarkChallenge.objects.all()), upheld=True)
    # A rejected challenge, and one still open, are not labels.
    other = make_user("grace")
    for upheld_it in (False, None):
        attempt = submit_and_mark(user=other, question=question, answer=SWAPPED)
        challenge = challenge_mark(user=other, attempt=attempt, criteria=[], misconceptions=[0], note="")
        if upheld_it is False:
            settle_challenges(challenges=[challenge], upheld=False)
    # One marked against a rubric version the question no longer grades with is left out.
    stale = submit_and_mark(user=other, question=question, answer=PARTIAL)
    challenge_mark(user=other, attempt=stale, criteria=[position[claimed]], misconceptions=[], note="")
    settle_challenges(challenges=[MarkChallenge.objects.get(attempt=stale)], upheld=True)
    Attempt.objects.filter(pk=stale.pk).update(rubric_version="an-older-version")

    folder = tmp_path / "challenges"
    out = io.StringIO()
    call_command("export_challenges", "--dir", str(folder), stdout=out)
    assert out.getvalue().strip() == (
        f"Wrote 1 upheld challenge to {folder}; left out 1 marked with an older rubric version"
    )
    data = tomllib.loads((folder / "prefill-decode-ttft.toml").read_text())
    [answer] = data["answers"]
    assert answer["id"] == f"challenge-{upheld.pk}" and answer["category"] == "challenge"
    assert answer["text"] == PARTIAL and "misconceptions" not in answer
    assert answer["expected"] == {c["id"]: c["met"] or c["id"] == claimed for c in upheld.result["criteria"]}
    assert "learner" not in (folder / "prefill-decode-ttft.toml").read_text()  # no account goes with it

    # The report grades the round like any other: the grader still misses the upheld point.
    report = io.StringIO()
    call_command("grading_report", "--dir", str(tmp_path), "--round", "challenges", stdout=report)
    rows = {line[:36].strip(): line[36:].split() for line in report.getvalue().splitlines() if line[:36].strip()}
    assert rows["challenge (every decision as upheld)"][-2:] == ["0/1", "0%"]
    # Exporting again replaces the answer by id: still one.
    call_command("export_challenges", "--dir", str(folder), stdout=io.StringIO())
    assert len(tomllib.loads((folder / "prefill-decode-ttft.toml").read_text())["answers"]) == 1
