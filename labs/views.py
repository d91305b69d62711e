from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.template.loader import render_to_string
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from core.access import staff_only
from core.page_cache import per_learner_page
from core.shared import shared_part
from courses.selectors import lesson_ref_link
from labs import selectors, services
from labs.forms import RunForm
from labs.models import CohortResult, Lab, LabRun
from questions import selectors as question_selectors


def _run_id(text: str) -> int | None:
    """A run id from a query parameter, or None. str.isdigit() also says yes to digits int()
    refuses ("²") and to other scripts' digits, so only ASCII digits count."""
    text = text.strip()
    return int(text) if text.isascii() and text.isdigit() else None


@require_GET
def lab_index(request: HttpRequest) -> HttpResponse:
    return render(
        request, "labs/index.html", {"labs": Lab.objects.live(), "local_engines": selectors.local_engine_state()}
    )


def _lab_page(slug: str) -> dict | None:
    """What every learner's copy of a lab page shares (the lab, its rendered guide, its questions
    and lesson link), once per content version (core.shared). Read-only."""

    def build() -> dict | None:
        lab = Lab.objects.live().filter(slug=slug).first()
        if lab is None:
            return None
        page = {
            "lab": lab,
            "guide_html": selectors.rendered_guide(lab=lab),
            "questions": question_selectors.questions_by_slug(slugs=lab.spec.get("questions", [])),
            "lesson_link": lesson_ref_link(ref=lab.lesson_ref) if lab.lesson_ref else None,
        }
        # Rendered here, once, rather than by every request's template.
        page["shared_html"] = render_to_string("labs/lab.html#lab-head", {**page, "params": lab.spec.get("params", [])})
        return page

    return shared_part(name=f"lab-page:{slug}", build=build)


# The run form shows every learner's engines (targets, the local build's progress), which are not
# the learner's own: kept a few seconds at most.
@per_learner_page(max_age_s=5)
@require_http_methods(["GET", "POST"])
def lab_detail(request: HttpRequest, lab_slug: str) -> HttpResponse:
    page = _lab_page(lab_slug)
    if page is None:
        raise Http404("No such lab")
    lab = page["lab"]
    form = None
    if request.user.is_authenticated:
        initial_params, initial_predicted, initial, target = None, None, {}, None
        rerun_id = _run_id(request.GET.get("rerun", ""))
        if rerun_id is not None:
            previous = selectors.own_run(user=request.user, run_id=rerun_id)
            if previous and previous.lab_id == lab.pk:
                initial_params = previous.params
                initial_predicted = (previous.result_meta or {}).get("predicted")
                initial = {"prediction": previous.prediction}
                target = previous.target
        target_id = _run_id(request.GET.get("target", ""))
        if target_id is not None:
            target = selectors.enabled_target(target_id=target_id) or target
        form = RunForm(
            request.POST or None,
            lab=lab,
            initial_params=initial_params,
            initial_predicted=initial_predicted,
            initial=initial,
            target=target,
        )
        if request.method == "POST" and form.is_valid():
            try:
                run = services.submit_run(
                    user=request.user,
                    lab=lab,
                    target=form.cleaned_data["target"],
                    params=form.params,
                    prediction=form.cleaned_data["prediction"],
                    adjustments=form.adjustments,
                    predicted=form.predicted,
                )
            except ValidationError as error:
                form.add_error(None, error)
            else:
                return redirect(run.get_absolute_url())
    elif request.method == "POST":
        return redirect(f"/accounts/login/?next={lab.get_absolute_url()}")
    context = {
        **page,
        "params": lab.spec.get("params", []),
        "form": form,
        "local_engines": selectors.local_engine_state(),
        "my_runs": selectors.runs_of(user=request.user, lab=lab)[:10] if request.user.is_authenticated else [],
    }
    status = 422 if form is not None and request.method == "POST" else 200
    return render(request, "labs/lab.html", context, status=status)


def _run_context(request: HttpRequest, run: LabRun) -> dict:
    position = services.queue_position(run=run)
    context = {
        "run": run,
        "position": position,
        "eta_s": services.eta_seconds(run=run, position=position),
        "progress_percent": _percent(run),
        "counts": selectors.request_counts(run=run),
        "recent_requests": selectors.request_rows(run=run, limit=8) if run.is_active else [],
        "params_display": [
            (key, ", ".join(map(str, value)) if isinstance(value, list) else value) for key, value in run.params.items()
        ],
    }
    if not run.is_active and run.summary:
        context.update(
            charts=selectors.charts_for(run=run),
            findings=selectors.findings_for(run=run),
            bound=selectors.decode_bound(run=run),
            prediction_rows=selectors.prediction_rows(run=run),
            efficiencies=selectors.efficiencies(run=run),
            cost_per_million=selectors.cost_per_million_output_tokens(run=run),
            other_runs=selectors.runs_of(user=run.user, lab=run.lab)
            .exclude(pk=run.pk)
            .filter(status=LabRun.Status.SUCCEEDED)[:10],
        )
    return context


def _percent(run: LabRun) -> int:
    progress = run.progress or {}
    total = progress.get("total") or 0
    if not run.is_active:
        return 100
    return min(100, round(100 * progress.get("done", 0) / total)) if total else 0


def _get_run(request: HttpRequest, run_id: int) -> LabRun:
    run = selectors.own_run(user=request.user, run_id=run_id)
    if run is None:
        raise Http404("No such run")
    return run


@login_required
@require_GET
def run_detail(request: HttpRequest, run_id: int) -> HttpResponse:
    run = _get_run(request, run_id)
    return render(request, "labs/run.html", _run_context(request, run))


@login_required
@require_GET
def run_status(request: HttpRequest, run_id: int) -> HttpResponse:
    """The live panel, polled by htmx while the run is queued or running."""
    run = _get_run(request, run_id)
    if not run.is_active and request.htmx:
        # Finished: reload the whole page once so results and charts appear.
        response = HttpResponse(status=204)
        response["HX-Refresh"] = "true"
        return response
    return render(request, "labs/run.html#live-panel", _run_context(request, run))


@login_required
@require_POST
def run_cancel(request: HttpRequest, run_id: int) -> HttpResponse:
    run = _get_run(request, run_id)  # the learner's own run; staff may cancel any
    services.cancel_run(run=run)
    messages.info(request, "Cancelling: measured requests are kept.")
    return redirect(
        request.POST.get("next")
        if request.user.is_staff and request.POST.get("next") == "/labs/queue/"
        else run.get_absolute_url()
    )


@login_required
@require_GET
def run_export_csv(request: HttpRequest, run_id: int) -> HttpResponse:
    run = _get_run(request, run_id)
    response = HttpResponse(selectors.run_csv(run=run), content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="prefill-run-{run.pk}.csv"'
    return response


@login_required
@require_GET
def run_export_json(request: HttpRequest, run_id: int) -> HttpResponse:
    run = _get_run(request, run_id)
    response = HttpResponse(selectors.run_json(run=run), content_type="application/json")
    response["Content-Disposition"] = f'attachment; filename="prefill-run-{run.pk}.json"'
    return response


@login_required
@require_GET
def compare(request: HttpRequest) -> HttpResponse:
    from labs.charts import compare_svg

    parts = request.GET.get("runs", "").split(",") + request.GET.getlist("with")
    ids = list(dict.fromkeys(run_id for part in parts if (run_id := _run_id(part)) is not None))[:8]
    runs = [run for run in (selectors.own_run(user=request.user, run_id=i) for i in ids) if run and run.summary]
    if len(runs) < 2:
        messages.info(request, "Pick at least two of your finished runs of the same lab to compare.")
        return redirect("accounts:me")
    if len({run.lab_id for run in runs}) > 1:
        messages.error(request, "Runs of different labs measure different things; compare runs of one lab.")
        return redirect("accounts:me")
    chart = compare_svg(
        runs=[
            {"label": f"run {run.pk} · {run.target.name} · {run.created_at:%d %b %H:%M}", "summary": run.summary}
            for run in runs
        ],
        lab_slug=runs[0].lab.slug,
    )
    return render(request, "labs/compare.html", {"runs": runs, "chart": chart, "lab": runs[0].lab})


@staff_only
@require_GET
def queue_dashboard(request: HttpRequest) -> HttpResponse:
    # The page polls itself with htmx, so staff watch runs move without reloading.
    template = "labs/queue.html#queue-panel" if request.htmx else "labs/queue.html"
    return render(request, template, selectors.queue_dashboard())


@login_required
@require_GET
def cohort(request: HttpRequest, lab_slug: str) -> HttpResponse:
    from labs.charts import compare_svg

    lab = get_object_or_404(Lab.objects.live(), slug=lab_slug)
    show_names = request.user.is_staff
    entries = selectors.cohort_entries(lab=lab)

    def label(index: int, entry: LabRun | CohortResult) -> str:
        if isinstance(entry, CohortResult):
            return f"former learner {index + 1}"
        if show_names or entry.user_id == request.user.pk:
            return f"{entry.user.username} · run {entry.pk}" if show_names else f"you · run {entry.pk}"
        return f"learner {index + 1}"

    chart = (
        compare_svg(
            runs=[{"label": label(i, e), "summary": e.summary} for i, e in enumerate(entries) if e.summary],
            lab_slug=lab.slug,
        )
        if entries
        else ""
    )
    rows = [
        {
            "label": label(i, entry),
            "target": entry.target.name,
            "finished": entry.finished_at if isinstance(entry, LabRun) else None,
            "finished_on": entry.finished_on if isinstance(entry, CohortResult) else None,
            "overall": (entry.summary or {}).get("overall") or {},
        }
        for i, entry in enumerate(entries)
    ]
    return render(request, "labs/cohort.html", {"lab": lab, "rows": rows, "chart": chart, "show_names": show_names})
