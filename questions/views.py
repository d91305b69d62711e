from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from core.page_cache import per_learner_page
from core.shared import shared_part
from courses import views as lesson_views
from courses.selectors import lesson_ref_link, lesson_ref_section
from labs import selectors as lab_selectors
from questions import challenges, interview, selectors, services
from questions.forms import AnswerForm, ChallengeForm, answer_form_for
from questions.models import Attempt, MarkChallenge, Question, QuestionSet
from questions.review import review_queue


@require_GET
def set_index(request: HttpRequest) -> HttpResponse:
    return render(request, "questions/index.html", {"sets": selectors.set_list(user=request.user)})


@require_GET
def set_detail(request: HttpRequest, set_slug: str) -> HttpResponse:
    question_set = get_object_or_404(QuestionSet.objects.live(), slug=set_slug)
    questions = selectors.questions_in_set(question_set=question_set, user=request.user)
    return render(request, "questions/set.html", {"question_set": question_set, "questions": questions})


def _answer_form(question: Question, data=None, *, follow_up: str = "", answer: str = ""):
    """The answer form; `answer` (the learner's last answer) stays in the box after grading."""
    initial = {"follow_up": follow_up, "answer": answer}
    if follow_up:
        return AnswerForm(data, initial=initial)
    return answer_form_for(question=question, data=data, initial=initial)


def _shared_parts(question: Question) -> dict:
    """The learner-independent parts of a question's page, their HTML rendered here rather than
    by every request's template (the set's other questions are a dozen links to reverse)."""
    page = {
        "question": question,
        "siblings": selectors.set_siblings(question=question),
        "lab": lab_selectors.lab_for_slug(slug=question.lab_slug) if question.lab_slug else None,
        "lesson_link": lesson_ref_link(ref=question.lesson_ref) if question.lesson_ref else None,
        "lesson_section": lesson_ref_section(ref=question.lesson_ref) if question.lesson_ref else None,
    }
    context = {**page, "set_total": len(page["siblings"]) + 1}
    page["html"] = {
        part: render_to_string(f"questions/question.html#question-{part}", context) for part in ("head", "siblings")
    }
    return page


def _question_page(slug: str) -> dict | None:
    """What every learner's copy of a question page shares (the question, its set's other
    questions, its lesson and lab links, their HTML), once per content version (core.shared).
    Read-only."""

    def build() -> dict | None:
        question = Question.objects.live().select_related("question_set").filter(slug=slug).first()
        return _shared_parts(question) if question is not None else None

    return shared_part(name=f"question-page:{slug}", build=build)


def _live_question(slug: str) -> Question:
    page = _question_page(slug)
    if page is None:
        raise Http404("No such question")
    return page["question"]


def _question_context(
    request: HttpRequest, question: Question, *, form=None, follow_up_forms=None, answered: Attempt | None = None
) -> dict:
    """Everything the question page shows. `answered` is the attempt this request just stored:
    the answer panel an htmx submit swaps in needs the newest of the other parts only, not the
    learner's score lines (they are outside the panel)."""
    user = request.user
    # A question no longer live (an old attempt's) has no shared part kept: built on the spot.
    page = _question_page(question.slug) or _shared_parts(question)
    if answered is not None:
        others = [part for part in selectors.question_parts(question=question) if part != answered.follow_up]
        attempts = []
        latest_by_follow_up = {
            **selectors.newest_attempts(user=user, question=question, parts=others), answered.follow_up: answered
        }
    elif user.is_authenticated:
        # Score lines of the learner's newest answers, the newest of each part in full.
        attempts, latest_by_follow_up = selectors.attempts_for(user=user, question=question)
    else:
        attempts, latest_by_follow_up = [], {}
    latest = latest_by_follow_up.get("")
    follow_ups = []
    for item in question.spec.get("follow_ups", []):
        follow_up_latest = latest_by_follow_up.get(item["slug"])
        follow_ups.append(
            {
                "spec": item,
                "form": (follow_up_forms or {}).get(item["slug"])
                or _answer_form(
                    question, follow_up=item["slug"], answer=follow_up_latest.answer if follow_up_latest else ""
                ),
                "latest": follow_up_latest,
                "sheet": _mark_sheet(follow_up_latest) if follow_up_latest else None,
            }
        )
    # Anonymous visitors get the public interview-prep page (answer, follow-ups, what gets marked
    # up, the set's other questions); a signed-in learner still answers before seeing the answer.
    public_page = not user.is_authenticated
    siblings = page["siblings"]
    return {
        "question": question,
        "spec": question.spec,
        "form": form or _answer_form(question, answer=latest.answer if latest else ""),
        "latest": latest,
        "sheet": _mark_sheet(latest) if latest else None,
        # With an attempt in hand, only a reveal is left to ask about.
        "show_model_answer": latest is not None or selectors.revealed_model_answer(user=user, question=question),
        "follow_ups": follow_ups,
        "history": attempts,
        "lesson_link": page["lesson_link"],
        "lesson_section": page["lesson_section"],
        "lab": page["lab"],
        "public_page": public_page,
        "siblings": siblings,
        "set_total": len(siblings) + 1,
        "shared_html": page["html"],
        # An answer still being marked: without JavaScript the page reloads until its mark is in.
        "grading": any(attempt.grading for attempt in latest_by_follow_up.values()),
    }


@per_learner_page(max_age_s=300)
@require_http_methods(["GET", "POST"])
def question_detail(request: HttpRequest, question_slug: str) -> HttpResponse:
    question = _live_question(question_slug)
    if request.method == "GET":
        return render(request, "questions/question.html", _question_context(request, question))
    if not request.user.is_authenticated:
        return redirect(f"{request.build_absolute_uri('/accounts/login/')}?next={question.get_absolute_url()}")

    follow_up = request.POST.get("follow_up", "")
    form = _answer_form(question, request.POST, follow_up=follow_up)
    partial = "questions/question.html#answer-panel"
    if follow_up and selectors.follow_up_spec(question=question, follow_up=follow_up) is None:
        raise Http404("No such follow-up")
    status = 200
    if form.is_valid():
        try:
            attempt = services.submit_answer(
                user=request.user, question=question, answer=str(form.cleaned_data["answer"] or ""), follow_up=follow_up
            )
        except ValidationError as error:
            form.add_error("answer", error)
            status = 422
        except services.RateLimited as error:
            form.add_error(None, str(error))
            status = 429
        else:
            if not request.htmx:
                return redirect(
                    f"{question.get_absolute_url()}#{'follow-up-' + follow_up if follow_up else 'feedback'}"
                )
            context = _question_context(request, question, answered=attempt)
            return _render_follow_up(request, context, follow_up) if follow_up else render(request, partial, context)
    else:
        status = 422
    forms = {follow_up: form} if follow_up else None
    context = _question_context(request, question, form=None if follow_up else form, follow_up_forms=forms)
    if request.htmx:
        response = _render_follow_up(request, context, follow_up) if follow_up else render(request, partial, context)
        # htmx ignores 4xx bodies by default; the form errors are the body, so answer 200.
        return response
    return render(request, "questions/question.html", context, status=status)


def _render_follow_up(request: HttpRequest, context: dict, follow_up: str) -> HttpResponse:
    item = next(item for item in context["follow_ups"] if item["spec"]["slug"] == follow_up)
    return render(request, "questions/question.html#follow-up", {**context, "item": item})


@login_required
@require_POST
def reveal(request: HttpRequest, question_slug: str) -> HttpResponse:
    question = get_object_or_404(Question.objects.live(), slug=question_slug)
    services.reveal_model_answer(user=request.user, question=question)
    if request.htmx:
        return render(request, "questions/question.html#model-answer", _question_context(request, question))
    return redirect(f"{question.get_absolute_url()}#model-answer")


def _mark_sheet(attempt: Attempt) -> dict | None:
    return selectors.mark_sheet(attempt=attempt) if attempt.marked else None


# The polls below run every 0.3-2 s while an answer is marked (and every 2 s while the LLM
# judge's opinion is on its way): one query for the attempt, no grading, nothing per criterion
# until the mark is in. Filtering by user turns someone else's attempt id into a plain 404.
# Under load they are a third of all requests, and most find the answer still being marked, so
# each learner's answer is kept for a second (core.page_cache): the mark (any write of the
# learner's) renews their token, so it shows on the next poll; the poll delay in a kept answer is
# at most a quarter of a second shorter than a fresh one's.
POLL_KEPT_S = 1.0


@per_learner_page(max_age_s=POLL_KEPT_S, htmx=True)
@login_required
@require_GET
def attempt_feedback(request: HttpRequest, attempt_id: int) -> HttpResponse:
    """The mark sheet alone, polled while the answer is marked or the LLM judge's opinion is pending."""
    attempt = get_object_or_404(Attempt.objects.select_related("question", "rubric"), pk=attempt_id, user=request.user)
    return render(request, "questions/_feedback.html", {"attempt": attempt, "sheet": _mark_sheet(attempt)})


@per_learner_page(max_age_s=POLL_KEPT_S, htmx=True)
@login_required
@require_GET
def attempt_check_result(request: HttpRequest, attempt_id: int) -> HttpResponse:
    """A lesson check's score line, polled while its answer is marked."""
    fields = ("id", "user_id", "score", "max_score", "grade_status", "created_at")
    attempt = get_object_or_404(Attempt.objects.only(*fields), pk=attempt_id, user=request.user)
    return render(request, "questions/_check_result.html", {"attempt": attempt})


def _challenge_form(attempt: Attempt, sheet: dict | None, data=None) -> ChallengeForm | None:
    """The form to challenge a mark: None while it is being marked, once staff settled a
    challenge, or when nothing on the sheet was missed or flagged."""
    challenge = getattr(attempt, "challenge", None)
    if sheet is None or (challenge is not None and challenge.status != MarkChallenge.Status.OPEN):
        return None
    open_criteria, flagged = challenges.challengeable(attempt=attempt)
    if not open_criteria and not flagged:
        return None
    earns = {row.get("id"): row["earns"] for row in sheet["rows"]}
    names = [hit["name"] for hit in sheet["misconceptions"]]
    initial = None
    if challenge is not None:
        chosen, named = set(challenge.criteria), set(challenge.misconceptions)
        initial = {
            "criteria": [item["position"] for item in open_criteria if item["id"] in chosen],
            "misconceptions": [item["position"] for item in flagged if item["id"] in named],
            "note": challenge.note,
        }
    return ChallengeForm(
        data,
        initial=initial,
        criteria=[(item["position"], earns.get(item["id"], "")) for item in open_criteria],
        misconceptions=[(item["position"], names[item["position"]]) for item in flagged],
    )


def _attempt_page(request: HttpRequest, attempt: Attempt, *, sheet: dict | None,
                  challenge_form: ChallengeForm | None = None, status: int = 200) -> HttpResponse:
    question = attempt.question
    context = {
        "attempt": attempt,
        "question": question,
        "sheet": sheet,
        "follow_up_spec": selectors.follow_up_spec(question=question, follow_up=attempt.follow_up)
        if attempt.follow_up
        else None,
        "stale_rubric": selectors.graded_with_an_earlier_rubric(attempt=attempt),
        "challenge": getattr(attempt, "challenge", None),
        "challenge_form": challenge_form or _challenge_form(attempt, sheet),
    }
    return render(request, "questions/attempt.html", context, status=status)


def _own_attempt(request: HttpRequest, attempt_id: int) -> Attempt:
    # Filtering by user turns someone else's attempt id into a plain 404.
    return get_object_or_404(
        Attempt.objects.select_related("question", "rubric", "challenge"), pk=attempt_id, user=request.user
    )


@login_required
@require_GET
def attempt_detail(request: HttpRequest, attempt_id: int) -> HttpResponse:
    attempt = _own_attempt(request, attempt_id)
    return _attempt_page(request, attempt, sheet=_mark_sheet(attempt))


@login_required
@require_POST
def attempt_challenge(request: HttpRequest, attempt_id: int) -> HttpResponse:
    """The learner says the grader got their mark wrong; staff settle it (questions.challenges)."""
    attempt = _own_attempt(request, attempt_id)
    sheet = _mark_sheet(attempt)
    form = _challenge_form(attempt, sheet, data=request.POST)
    if form is None:
        messages.error(request, "This mark cannot be challenged (it is still being marked, or staff have settled it).")
        return redirect(attempt.get_absolute_url())
    if form.is_valid():
        try:
            challenges.challenge_mark(
                user=request.user, attempt=attempt, criteria=form.cleaned_data.get("criteria", []),
                misconceptions=form.cleaned_data.get("misconceptions", []), note=form.cleaned_data["note"],
            )
        except ValidationError as error:
            form.add_error(None, error)
        else:
            thanks = "Thanks: your challenge is recorded. Staff will look at it; your mark stays as it is meanwhile."
            messages.success(request, thanks)
            return redirect(attempt.get_absolute_url() + "#challenge")
    return _attempt_page(request, attempt, sheet=sheet, challenge_form=form, status=400)


# Due labels ("due now", "due 3 minutes ago") move with the clock: kept half a minute at most.
@per_learner_page(max_age_s=30)
@login_required
@require_GET
def review(request: HttpRequest) -> HttpResponse:
    return render(request, "questions/review.html", review_queue(user=request.user))


@login_required
@require_http_methods(["GET", "POST"])
def mock_interview(request: HttpRequest, set_slug: str) -> HttpResponse:
    """A real interview: fresh questions (no earlier mark sheet or model answer), a clock per
    question, answers marked as they go and shown together at the end."""
    question_set = get_object_or_404(QuestionSet.objects.live(), slug=set_slug)
    questions = list(question_set.questions.live().filter(kind=Question.Kind.FREE_TEXT))
    if not questions:
        messages.info(request, "This set has no free-text questions for a mock interview.")
        return redirect(question_set.get_absolute_url())
    base_url = reverse("questions:interview", kwargs={"set_slug": set_slug})
    now = timezone.now()
    try:
        step = max(0, int(request.GET.get("step", "0")))
    except ValueError:
        step = 0
    state = interview.current(session=request.session, set_slug=set_slug)
    if state is None or (request.method == "GET" and step == 0 and "minutes" in request.GET):
        try:
            minutes = min(30, max(1, int(request.GET.get("minutes", "4"))))
        except ValueError:
            minutes = 4
        state = interview.start(session=request.session, set_slug=set_slug, minutes=minutes, now=now)
    if step >= len(questions):
        state = interview.finish(session=request.session, state=state, now=now)
        ids = [answer["attempt"] for answer in state["answers"].values()]
        attempts = {attempt.pk: attempt for attempt in Attempt.objects.filter(user=request.user, pk__in=ids)}
        result = interview.summary(state=state, questions=questions, attempts_by_id=attempts)
        # Answers still being marked: the page reloads itself (JavaScript or not) until all are in.
        return render(request, "questions/interview_done.html", {"question_set": question_set, "summary": result})

    question = questions[step]
    next_url = f"{base_url}?step={step + 1}"
    form = AnswerForm(request.POST if request.method == "POST" else None)
    status = 200
    if request.method == "POST" and form.is_valid():
        try:
            attempt = services.submit_answer(
                user=request.user, question=question, answer=str(form.cleaned_data["answer"] or "")
            )
        except ValidationError as error:
            form.add_error("answer", error)
            status = 422
        except services.RateLimited as error:
            form.add_error(None, str(error))
            status = 429
        else:
            interview.record_answer(
                session=request.session, state=state, question_slug=question.slug, attempt_id=attempt.pk, now=now
            )
            return redirect(next_url)
    seconds_left = interview.seconds_left(session=request.session, state=state, question_slug=question.slug, now=now)
    context = {
        "question": question,
        "question_set": question_set,
        "form": form,
        "step": step,
        "total": len(questions),
        "minutes": state["minutes"],
        "seconds_left": seconds_left,
        "clock": f"{seconds_left // 60}:{seconds_left % 60:02d}",
        "action_url": f"{base_url}?step={step}",
        "next_url": next_url,
    }
    return render(request, "questions/interview.html", context, status=status)


@login_required
@require_POST
def lesson_check(request: HttpRequest, lesson_slug: str, question_slug: str) -> HttpResponse:
    """Answer one of the lesson's checks in place: grade it, then show the score and worked answer.

    With htmx the check's card is swapped; without JavaScript the browser returns to the check on
    the lesson page. The attempt is an ordinary practice attempt (mark sheet, review schedule).
    """
    page = lesson_views.live_lesson_page(lesson_slug)
    lesson = page["lesson"]
    question = next((item for item in page["check_questions"] if item.slug == question_slug), None)
    if question is None:
        raise Http404("That question is not a check in this lesson")
    form = answer_form_for(question=question, data=request.POST, auto_id=f"check-{question.slug}-%s")
    if form.is_valid():
        try:
            services.submit_answer(
                user=request.user, question=question, answer=str(form.cleaned_data["answer"] or "")
            )
        except ValidationError as error:
            form.add_error("answer", error)
        except services.RateLimited as error:
            form.add_error(None, str(error))
        else:
            if not request.htmx:
                return redirect(f"{lesson.get_absolute_url()}#check-{question.slug}")
    learner = lesson_views.learner_state(request, page)
    checks = lesson_views.lesson_checks(page, learner["latest"])
    check = next(item for item in checks if item["question"].slug == question_slug)
    if form.errors:
        check["form"] = form  # the template's answer_form tag shows this one, errors and all
    if not request.htmx:
        context = lesson_views.lesson_page_context(page, learner, checks=checks)
        return render(request, "courses/lesson.html", context, status=422)
    response = render(request, "courses/lesson.html#lesson-check", {"lesson": lesson, "check": check})
    # The progress panel counts answered checks; refresh it out of band.
    response.content += render(request, "courses/lesson.html#progress-panel-oob", {"lesson": lesson, **learner}).content
    return response
