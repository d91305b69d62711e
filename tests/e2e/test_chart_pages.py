"""The charts as a learner sees them in the browser, at 1280 px and on a 390 px phone: the KV
cache lesson's figures, a results page and a comparison of noisy recorded runs (four prompt
lengths whose TTFT distributions cross). In every inline chart no two pieces of text overlap in
the browser's own font and none is cut off; on the phone the smallest chart text is still
legible and the page itself is no wider than the screen. Screenshots go to
test-output/e2e/charts/ to look at,
one of each page and one of each chart."""

from __future__ import annotations

import datetime as dt

import pytest

from tests.e2e.conftest import PASSWORD, SCREENSHOTS, log_in, watched_page
from tests.labs.golden_runs import RECORDED, noisier

pytestmark = [pytest.mark.browser, pytest.mark.layout, pytest.mark.django_db(transaction=True)]

# Smallest chart text a phone shows, in CSS pixels: below this a learner zooms to read a tick.
LEGIBLE_PX = 9.0
WIDTHS = {"desktop": 1280, "phone": 390}

# For each inline chart: text boxes overlapping one another or sticking out of the chart, in the
# browser's layout and font, and the smallest text's rendered size.
MEASURE = """() => [...document.querySelectorAll('svg.figure-svg')].map((svg) => {
  const frame = svg.getBoundingClientRect();
  const scale = svg.getScreenCTM().a;
  const texts = [...svg.querySelectorAll('text')].filter((t) => t.textContent.trim());
  const boxes = texts.map((t) => ({text: t.textContent.trim(), box: t.getBoundingClientRect(),
    px: parseFloat(getComputedStyle(t).fontSize) * scale}));
  const inner = (b) => ({left: b.left + 1.5, right: b.right - 1.5, top: b.top + 1.5, bottom: b.bottom - 1.5});
  const problems = [];
  boxes.forEach((a, i) => {
    const x = inner(a.box);
    if (x.left < frame.left - 1 || x.right > frame.right + 1 || x.top < frame.top - 1 || x.bottom > frame.bottom + 1)
      problems.push(`'${a.text}' is cut off`);
    boxes.slice(i + 1).forEach((b) => {
      const y = inner(b.box);
      if (x.left < y.right && y.left < x.right && x.top < y.bottom && y.top < x.bottom)
        problems.push(`'${a.text}' overlaps '${b.text}'`);
    });
  });
  return {label: (svg.getAttribute('aria-label') || '').slice(0, 70), problems,
          smallest: Math.min(...boxes.map((b) => b.px))};
})"""


@pytest.fixture
def learner_with_noisy_runs(course, make_user):
    from labs.models import Lab, LabRun, RunRequest
    from labs.targets import upsert_target

    user = make_user("chart.reader", password=PASSWORD)
    target = upsert_target(name="Recorded GPU", kind="vllm", base_url="http://127.0.0.1:9", models=["tiny-q8"])
    lab = Lab.objects.get(slug="prompt-length-ttft")
    recorded = RECORDED["prompt-length-ttft"]()
    runs = []
    for seed in (1, 2, 3):
        run_data = noisier(recorded, seed=seed, spread=0.3 * seed)
        finished = dt.datetime(2026, 12, seed, 10, tzinfo=dt.UTC)
        run = LabRun.objects.create(
            user=user,
            lab=lab,
            target=target,
            model_name="tiny-q8",
            params={"prompt_tokens": [16, 256, 1024, 2048], "max_tokens": 64},
            prediction="TTFT grows linearly with the prompt",
            status=LabRun.Status.SUCCEEDED,
            started_at=finished - dt.timedelta(minutes=2),
            finished_at=finished,
            summary=run_data.summary,
            # What the worker's last progress write leaves on a finished run.
            progress={
                "done": len(run_data.records),
                "total": len(run_data.records),
                "tokens": sum(record["output_tokens"] or 0 for record in run_data.records),
                "elapsed_s": round(max(record["end_s"] for record in run_data.records), 2),
            },
        )
        RunRequest.objects.bulk_create(
            RunRequest(
                run=run,
                index=number,
                step=record["params"],
                ttft_s=record["ttft_s"],
                tpot_s=record["tpot_s"],
                e2e_s=record["e2e_s"],
                output_tokens=record["output_tokens"],
                error_kind=(record["error"] or {}).get("kind", ""),
                record=record,
            )
            for number, record in enumerate(run_data.records)
        )
        runs.append(run)
    return user, runs


@pytest.mark.parametrize("device", sorted(WIDTHS))
def test_chart_text_neither_overlaps_nor_shrinks_past_reading(live_site, browser, learner_with_noisy_runs, device):
    user, runs = learner_with_noisy_runs
    width = WIDTHS[device]
    pages = {
        "kv-cache-lesson": "/learn/lessons/kv-cache-memory/",
        "noisy-run": f"/labs/runs/{runs[0].pk}/",
        "compare-three-noisy-runs": f"/labs/compare/?runs={','.join(str(run.pk) for run in runs)}",
    }
    out = SCREENSHOTS / "charts"
    out.mkdir(parents=True, exist_ok=True)
    context = browser.new_context(viewport={"width": width, "height": 900}, is_mobile=device == "phone")
    page = watched_page(context)
    failures = []
    try:
        log_in(page, live_site.url, username=user.username)
        for name, path in pages.items():
            page.goto(f"{live_site.url}{path}")
            page.wait_for_load_state("load")
            page.screenshot(path=str(out / f"{name}-{width}.png"), full_page=True)
            figures = page.locator("figure.figure:has(svg.figure-svg)")
            for number in range(figures.count()):
                figures.nth(number).screenshot(path=str(out / f"{name}-{width}-chart{number + 1}.png"))
            charts = page.evaluate(MEASURE)
            assert charts, f"{path}: no chart on the page"
            for chart in charts:
                failures += [f"{path} {chart['label']}: {problem}" for problem in chart["problems"]]
                if device == "phone" and chart["smallest"] < LEGIBLE_PX:
                    failures.append(f"{path} {chart['label']}: text drawn at {chart['smallest']:.1f} px")
            scroll = page.evaluate("document.documentElement.scrollWidth")
            if scroll > width:
                failures.append(f"{path}: the page is {scroll} px wide on a {width} px screen")
        assert not failures, "\n".join(failures)
        assert not page.problems, page.problems
    finally:
        context.close()


def test_result_tables_keep_each_number_on_one_line_on_a_phone(live_site, browser, learner_with_noisy_runs):
    """'2,491 / 4,043 / 4,359' split one number per line, slashes between, read as a column of
    unrelated values; on a phone each cell stays on one line and the table scrolls sideways."""
    user, runs = learner_with_noisy_runs
    context = browser.new_context(viewport={"width": 390, "height": 900}, is_mobile=True)
    page = watched_page(context)
    try:
        log_in(page, live_site.url, username=user.username)
        page.goto(f"{live_site.url}/labs/runs/{runs[0].pk}/")
        wrapped = page.evaluate(
            # Per piece of text, so a deliberate <br> (a failure count above its kinds) is no wrap.
            """() => [...document.querySelectorAll('td.num')].flatMap((cell) => {
              const walker = document.createTreeWalker(cell, NodeFilter.SHOW_TEXT);
              const wrapped = [];
              for (let node = walker.nextNode(); node; node = walker.nextNode()) {
                if (!node.textContent.trim()) continue;
                const range = document.createRange();
                range.selectNodeContents(node);
                const lines = new Set([...range.getClientRects()].map((box) => Math.round(box.top))).size;
                if (lines > 1) wrapped.push(node.textContent.trim());
              }
              return wrapped;
            })"""
        )
        assert page.locator("td.num").count() > 10
        assert wrapped == []
        assert page.evaluate("document.documentElement.scrollWidth") <= 390
        assert not page.problems, page.problems
    finally:
        context.close()
