"""A learner whose plain-words answer was under-credited challenges the mark, and one whose
answer states a misconception reads the sentence the marker read it in, in a real browser, at
desktop width and on a phone."""

import contextlib
from collections.abc import Iterator

import pytest

from questions.models import MarkChallenge, Question
from tests.e2e.conftest import SCREENSHOTS, log_in, watched_page
from tests.grading import submit_and_mark
from tests.questions.test_grading_reader import NO_PREPARATION, SPECULATIVE_THREE_WAYS

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

PARTIAL = (
    "A request has two phases, prefill and then decode. Time to first token is mostly prefill, "
    "which takes longer when the prompt is longer."
)


@contextlib.contextmanager
def _marked_answer_page(
    *, live_site, browser, make_user, width: int, answer: str, slug: str = "prefill-decode-ttft",
) -> Iterator[tuple]:
    """A learner whose answer to the question is marked, signed in on the question's page at this
    width: (page, attempt). The page must end without console errors or failed requests."""
    user = make_user("learner", password="prefill-decode-bandwidth-9")
    attempt = submit_and_mark(user=user, question=Question.objects.get(slug=slug), answer=answer)
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    context = browser.new_context(viewport={"width": width, "height": 900}, is_mobile=width < 640)
    page = watched_page(context)
    try:
        log_in(page, live_site.url, username="learner")
        page.goto(f"{live_site.url}/practice/q/{slug}/")
        yield page, attempt
        assert not page.problems, page.problems
    finally:
        context.close()


@pytest.mark.parametrize("width", [1280, 390])
def test_a_learner_challenges_a_missed_point_and_reads_the_status(live_site, browser, course, make_user, width):
    with _marked_answer_page(
        live_site=live_site, browser=browser, make_user=make_user, width=width, answer=PARTIAL
    ) as (page, attempt):
        page.get_by_role("link", name="Challenge this mark").first.click()
        page.wait_for_url(f"{live_site.url}/practice/attempts/{attempt.pk}/#challenge")
        form = page.locator("#challenge")
        assert form.get_by_role("heading", name="Think the mark missed something?").is_visible()
        boxes = form.get_by_role("checkbox")
        assert boxes.count() == sum(1 for c in attempt.result["criteria"] if c["awarded"] < c["points"])
        form.get_by_label("Says each decode step reads all the weights").check()
        form.get_by_label("Why (optional)").fill("My answer says decode is the token-by-token part.")
        assert page.evaluate("document.documentElement.scrollWidth") <= width
        page.screenshot(path=str(SCREENSHOTS / f"challenge-form-{width}.png"), full_page=True)

        form.get_by_role("button", name="Send my challenge").click()
        page.get_by_text("Thanks: your challenge is recorded.").wait_for()
        status = page.get_by_test_id("challenge-status")
        assert "Waiting for staff" in status.inner_text()
        assert "You wrote: My answer says decode is the token-by-token part." in form.inner_text()
        assert page.evaluate("document.documentElement.scrollWidth") <= width
        page.screenshot(path=str(SCREENSHOTS / f"challenge-sent-{width}.png"), full_page=True)
        assert MarkChallenge.objects.get(attempt=attempt).criteria == ["decode-memory-bound"]


PLAIN_WORDS = (
    "The first step reads the whole question at once, so a long question means a long wait before "
    "anything appears. After that each new word costs about the same, because the machine mostly spends "
    "its time fetching the model's numbers from memory, and the longer question only adds a little to that."
)


@pytest.mark.parametrize("width", [1280, 390])
def test_a_near_miss_quotes_the_learners_sentence_and_leads_to_the_challenge(
    live_site, browser, course, make_user, width
):
    with _marked_answer_page(
        live_site=live_site, browser=browser, make_user=make_user, width=width, answer=PLAIN_WORDS
    ) as (page, attempt):
        near = page.get_by_test_id("near-miss")
        assert near.count() == 1
        assert near.inner_text().startswith(
            "Closest you came: “The first step reads the whole question at once, so a long question means a long "
            "wait before anything appears.” The marker read this as not making the point"
        )
        assert page.evaluate("document.documentElement.scrollWidth") <= width
        near.scroll_into_view_if_needed()
        page.screenshot(path=str(SCREENSHOTS / f"near-miss-{width}.png"), full_page=True)
        near.get_by_role("link", name="challenge this mark").click()
        page.wait_for_url(f"{live_site.url}/practice/attempts/{attempt.pk}/#challenge")
        page.locator("#challenge").get_by_label("Connects TTFT to prefill, which grows with prompt length").check()


@pytest.mark.parametrize("width", [1280, 390])
def test_a_belief_stated_in_other_words_is_shown_with_the_learners_sentence(
    live_site, browser, course, make_user, width
):
    # The belief is in the last sentence, which the belief reader's second look reads (see
    # tests/questions/test_grading_reader.py).
    with _marked_answer_page(
        live_site=live_site, browser=browser, make_user=make_user, width=width,
        answer=SPECULATIVE_THREE_WAYS + NO_PREPARATION, slug="draft-model-vs-medusa-eagle",
    ) as (page, attempt):
        sheet = page.get_by_test_id("mark-sheet").inner_text()
        assert "Score capped. The answer rests on a misconception (see below), so it is held to 50%" in sheet
        # 4 of 7 points earned, held to 3.5; the Medusa point the belief contradicts says why it is not credited.
        assert sheet.startswith("3.5 / 7 (50%)")
        assert (
            "(Not credited: the answer states the misconception “Medusa and EAGLE heads need no training”, "
            "which contradicts this point.)"
        ) in sheet
        flagged = page.get_by_test_id("misconception")
        assert flagged.count() == 1
        text = flagged.inner_text()
        assert text.startswith("Misconception: Medusa and EAGLE heads need no training.")
        assert f"You wrote: “{NO_PREPARATION}”" in text
        assert attempt.score <= attempt.max_score / 2
        assert page.get_by_test_id("challenge-link").is_visible()
        assert page.evaluate("document.documentElement.scrollWidth") <= width
        flagged.scroll_into_view_if_needed()
        page.screenshot(path=str(SCREENSHOTS / f"second-look-{width}.png"), full_page=True)


IDLE_GPU_BELIEF = (
    "Self-host when traffic is low and spiky: you can scale the GPUs to zero between bursts and only "
    "pay while they are busy, whereas an API charges a fixed monthly minimum whatever your utilisation."
)
# Session 20: the standard layout the other way round, as blind writers of rounds 7-17 state it.
LAYOUT_SWAPPED_BELIEF = "For serving, the usual layout is TP across nodes and PP inside each node."
FP8_NO_SCALE_BELIEF = (
    "FP8 tensors need no scale factor: floating point is self-scaling, so scales are only needed for INT8."
)


# Beliefs added from the blind rounds (session 18: the idle GPU; session 19: FP8 needing no scale),
# as the learner reads them: the score and what the cap did, the voided point's reason, the belief's
# name, the learner's own sentence and the correction.
@pytest.mark.parametrize(
    ("slug", "answer", "belief", "score", "cap", "belief_name", "correction", "shot"),
    [
        (
            "when-self-host", IDLE_GPU_BELIEF + " It also keeps customer data inside our own network.",
            IDLE_GPU_BELIEF, "1 / 6 (17%)",
            # 1 point is under the 50% ceiling: the cap is named as a ceiling, not as what lowered it.
            "Score ceiling. The answer rests on a misconception (see below), so it is held to 50%",
            "A self-hosted GPU costs nothing while idle", "billed by the hour whether it is busy or idle",
            "idle-gpu-belief",
        ),
        (
            "fp8-e4m3-vs-e5m2",
            "Inference uses E4M3: one more mantissa bit gives finer steps than E5M2, at the cost of range, "
            "and E5M2's range suits gradients in training. " + FP8_NO_SCALE_BELIEF,
            FP8_NO_SCALE_BELIEF, "2.5 / 5 (50%)",
            # 3 of 5 points earned, held to 2.5: here the cap is what lowered the score.
            "Score capped. The answer rests on a misconception (see below), so it is held to 50%",
            "FP8 needs no scale factor", "E4M3 reaches only 448",
            "fp8-no-scale-belief",
        ),
        (
            "tensor-vs-pipeline-serving",
            "Tensor parallelism splits each layer's weight matrices across the GPUs, so every GPU reads only its "
            "share per step and per-token latency drops; its two all-reduces per layer need NVLink. Pipeline "
            "parallelism puts layers 0 to 39 on one GPU and 40 to 79 on the next and passes only the "
            "activations, so single-request latency stays about the same. " + LAYOUT_SWAPPED_BELIEF,
            LAYOUT_SWAPPED_BELIEF, "4 / 8 (50%)",
            # 5 of 8 points earned, held to 4.
            "Score capped. The answer rests on a misconception (see below), so it is held to 50%",
            "Tensor parallelism across nodes, pipeline inside", "tensor parallelism within a node",
            "layout-swapped-belief",
        ),
    ],
    ids=["idle-gpu", "fp8-no-scale", "layout-swapped"],
)
@pytest.mark.parametrize("width", [1280, 390])
def test_a_belief_added_from_the_blind_rounds_reads_as_a_learner_needs_it(
    live_site, browser, course, make_user, width, slug, answer, belief, score, cap, belief_name, correction, shot,
):
    with _marked_answer_page(
        live_site=live_site, browser=browser, make_user=make_user, width=width, answer=answer, slug=slug,
    ) as (page, _attempt):
        sheet = page.get_by_test_id("mark-sheet").inner_text()
        assert sheet.startswith(score)
        assert cap in sheet
        assert ("Score capped." in sheet) == cap.startswith("Score capped.")
        assert (
            f"(Not credited: the answer states the misconception “{belief_name}”, which contradicts this point.)"
        ) in sheet
        flagged = page.get_by_test_id("misconception")
        assert flagged.count() == 1
        text = flagged.inner_text()
        assert text.startswith(f"Misconception: {belief_name}.")
        assert f"You wrote: “{belief}”" in text
        assert correction in text
        assert page.evaluate("document.documentElement.scrollWidth") <= width
        flagged.scroll_into_view_if_needed()
        page.screenshot(path=str(SCREENSHOTS / f"{shot}-{width}.png"), full_page=True)
