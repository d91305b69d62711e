"""Lab charts: valid, titled SVG that names every step; a 1,000-request run's chart set renders
quickly (timing printed). The analyses the charts draw (line fit, knee, saturation) are tested in
test_analysis."""

from __future__ import annotations

import time
import xml.etree.ElementTree as ET

import pytest

from labs import charts
from tests.labs.test_checks import (
    closed_loop,
    concurrency_run,
    decode_run,
    head_of_line_run,
    output_length_run,
    prefix_run,
    prompt_length_run,
    quantization_run,
    rate_run,
    request,
    run_summary,
    sequential,
)

SVG = "{http://www.w3.org/2000/svg}"
BOUND = {"decode_tokens_per_s": 200.0, "label": "2 GB of weights ÷ 400 GB/s (test GPU)"}


def parse(svg: str) -> ET.Element:
    assert svg.startswith("<svg"), svg[:80]
    root = ET.fromstring(svg)
    assert root.tag == f"{SVG}svg"
    assert root.get("role") == "img"
    return root


def title_of(root: ET.Element) -> str:
    title = root.find(f"{SVG}title")
    assert title is not None and title.text
    return title.text


def texts_of(root: ET.Element) -> str:
    """Every piece of visible text (svg.fonttype none keeps text as <text>)."""
    return " | ".join("".join(node.itertext()) for node in root.iter(f"{SVG}text"))


# --- main chart, one per sweep shape --------------------------------------------------------


def test_output_length_chart_names_every_length_and_both_series():
    root = parse(charts.main_chart_svg(lab_slug="ttft-vs-output-length", summary=output_length_run()))
    text = texts_of(root)
    for label in ("128", "512", "2,048", "P50 TTFT", "P50 end-to-end"):
        assert label in text
    assert "max_tokens (128, 512, 2,048)" in title_of(root)


def test_prompt_length_chart_shows_the_fit_as_prefill_tokens_per_s_and_the_tpot_floor():
    root = parse(charts.main_chart_svg(lab_slug="prompt-length-ttft", summary=prompt_length_run(), bound=BOUND))
    text = texts_of(root)
    assert "prefill tokens/s" in text
    assert "P50 TPOT (right)" in text
    assert "TPOT lower bound" in text
    assert "prompt tokens (256, 1,024, 2,048, 4,096)" in title_of(root)


def test_concurrency_chart_marks_the_knee_and_draws_the_bound_only_when_given():
    summary = concurrency_run()
    with_bound = texts_of(parse(charts.main_chart_svg(lab_slug="batching-almost-free", summary=summary, bound=BOUND)))
    without = texts_of(parse(charts.main_chart_svg(lab_slug="batching-almost-free", summary=summary)))
    assert "knee ≈ 32" in with_bound
    assert "Batching pays until about 32 concurrent requests" in with_bound
    assert "TPOT lower bound at batch 1" in with_bound
    assert "TPOT lower bound" not in without
    for label in ("1", "2", "4", "8", "16", "32", "64"):
        assert f"| {label} |" in f"| {without} |"


def test_rate_chart_marks_saturation_and_the_slo():
    root = parse(charts.main_chart_svg(lab_slug="open-loop-slo", summary=rate_run(capacity_rpm=100)))
    text = texts_of(root)
    assert "Saturates at about 120 requests per minute" in text
    assert "TTFT SLO" in text
    assert "goodput 100%, 100%, 20%, 5%" in title_of(root)


def test_rate_chart_without_an_slo_falls_back_to_completed_requests():
    summary = rate_run(capacity_rpm=100, slo_ttft=None)
    text = texts_of(parse(charts.main_chart_svg(lab_slug="open-loop-slo", summary=summary)))
    assert "completed per minute" in text


def test_model_chart_has_a_bar_per_model():
    summary = quantization_run(speeds={"tiny-f16": 40.0, "tiny-q8_0": 70.0, "tiny-q4_k_m": 110.0})
    root = parse(charts.main_chart_svg(lab_slug="quantization", summary=summary))
    text = texts_of(root)
    for name in ("tiny-f16", "tiny-q8_0", "tiny-q4_k_m"):
        assert name in text
    assert "tiny-q4_k_m: 110 tok/s" in title_of(root)


def test_speed_of_light_chart_states_the_efficiency_or_the_missing_bound():
    summary = decode_run(tpot=1 / 130)
    with_bound = parse(charts.main_chart_svg(lab_slug="decode-speed-of-light", summary=summary, bound=BOUND))
    assert "65% of the bandwidth bound" in texts_of(with_bound)
    assert "(test GPU)" in texts_of(with_bound)
    without = parse(charts.main_chart_svg(lab_slug="decode-speed-of-light", summary=summary))
    assert "no bandwidth bound is known" in title_of(without)


def test_prefix_chart_labels_both_steps_with_the_ratio():
    root = parse(charts.main_chart_svg(lab_slug="prefix-caching", summary=prefix_run(shared_ttft=0.1)))
    text = texts_of(root)
    assert "unique prompts" in text and "shared prefix" in text
    assert "×0.25" in text


def test_continuous_batching_chart_plots_tail_ttft_and_queue_per_step():
    root = parse(charts.main_chart_svg(lab_slug="continuous-batching", summary=head_of_line_run(batching=False)))
    assert "P95 client queue" in texts_of(root)
    assert "concurrency=1, concurrency=8" in title_of(root)


def test_an_unknown_sweep_gets_per_step_bars_and_a_run_without_successes_says_so():
    records = sequential(params={"seed": 7}, n=3, ttft=0.05, tpot=0.01, tokens=8)
    other = sequential(params={"seed": 8}, n=3, ttft=0.06, tpot=0.01, tokens=8)
    summary = run_summary(sweep_param="seed", steps=[(7, records), (8, other)])
    text = texts_of(parse(charts.main_chart_svg(lab_slug="some-new-lab", summary=summary)))
    assert "seed=7" in text and "seed=8" in text
    failed = sequential(params={}, n=2, ttft=0.05, tpot=0.01, tokens=8)
    for record in failed:
        record.error = {"kind": "unreachable", "message": "refused", "status": None}
    empty = run_summary(sweep_param=None, steps=[(None, failed)])
    root = parse(charts.main_chart_svg(lab_slug="decode-speed-of-light", summary=empty))
    assert "No successful requests to chart" in texts_of(root)


def test_the_same_chart_renders_identically_and_different_charts_never_share_ids():
    summary = output_length_run()
    first = charts.main_chart_svg(lab_slug="ttft-vs-output-length", summary=summary)
    assert charts.main_chart_svg(lab_slug="ttft-vs-output-length", summary=summary) == first
    records = [r.to_dict() for step in summary_records(kind="output") for r in step]
    page = [first, charts.ttft_cdf_svg(records=records), charts.timeline_svg(records=records)]
    ids = [node.get("id") for svg in page for node in parse(svg).iter() if node.get("id")]
    assert len(ids) == len(set(ids))


# --- TTFT CDF and timeline ------------------------------------------------------------------


def summary_records(*, kind: str) -> list[list]:
    if kind == "output":
        return [
            sequential(params={"max_tokens": m}, n=5, ttft=0.04, tpot=0.01, tokens=m, seed=i)
            for i, m in enumerate((128, 512, 2048))
        ]
    raise ValueError(kind)


def test_cdf_has_one_line_per_step_with_n_in_sweep_order():
    steps = summary_records(kind="output")
    warmup = request(index=99, send=0.0, ttft=9.0, tpot=0.01, tokens=8, params={"max_tokens": 128})
    warmup.warmup = True
    records = [warmup.to_dict()] + [r.to_dict() for step in reversed(steps) for r in step]
    root = parse(charts.ttft_cdf_svg(records=records))
    text = texts_of(root)
    positions = [text.index(f"max_tokens={m} (n=5)") for m in (128, 512, 2048)]
    assert positions == sorted(positions)
    assert "n=6" not in text  # the warm-up is not counted


def test_cdf_on_a_log_axis_labels_ticks_between_the_decades():
    # 20 ms to 2 s: decade ticks alone would label only 100 ms and 1.00 s.
    steps = [
        sequential(params={"prompt_tokens": p}, n=5, ttft=t, tpot=0.01, tokens=8, jitter=0.2, seed=p)
        for p, t in ((16, 0.02), (256, 0.15), (2048, 1.8))
    ]
    text = f"| {texts_of(parse(charts.ttft_cdf_svg(records=[r.to_dict() for s in steps for r in s])))} |"
    for tick in ("20.0 ms", "50.0 ms", "100 ms", "200 ms", "500 ms", "1.00 s", "2.00 s"):
        assert f"| {tick} |" in text


def test_timeline_places_steps_one_after_another_and_marks_failures():
    first = sequential(params={"max_tokens": 128}, n=3, ttft=0.04, tpot=0.01, tokens=128)
    second = sequential(params={"max_tokens": 512}, n=3, ttft=0.04, tpot=0.01, tokens=512)
    second[1].error = {"kind": "timeout", "message": "slow", "status": None}
    records = [r.to_dict() for r in first + second]
    bars = charts._timeline_bars(records=records)
    first_end = max(b.end for b in bars if b.key == "max_tokens=128")
    assert min(b.queued_from for b in bars if b.key == "max_tokens=512") >= first_end
    root = parse(charts.timeline_svg(records=records))
    assert "6 requests, 1 failed" in texts_of(root)
    assert "max_tokens=512" in texts_of(root)


def test_timeline_keeps_one_clock_when_steps_already_share_it():
    first = sequential(params={"concurrency": 1}, n=2, ttft=0.04, tpot=0.01, tokens=16)
    later = sequential(params={"concurrency": 2}, n=2, ttft=0.04, tpot=0.01, tokens=16, start=5.0)
    bars = charts._timeline_bars(records=[r.to_dict() for r in first + later])
    assert min(b.send for b in bars if b.key == "concurrency=2") == pytest.approx(5.0)


def test_timeline_downsamples_and_says_so_keeping_failures():
    records = [
        request(index=i, send=i * 0.1, ttft=0.05, tpot=0.01, tokens=16, params={}).to_dict() for i in range(1000)
    ]
    for i in (3, 501, 998):
        records[i]["error"] = {"kind": "timeout", "message": "slow", "status": None}
    svg = charts.timeline_svg(records=records, max_requests=200)
    assert "Showing 200 of 1,000 requests (evenly sampled), 3 failed" in texts_of(parse(svg))
    sample = charts._sample(bars=charts._timeline_bars(records=records), limit=200)
    assert len(sample) == 200
    assert sum(1 for b in sample if b.error) == 3


def test_timeline_waiting_starts_at_the_scheduled_time():
    record = request(index=0, send=2.0, scheduled=1.5, queue=0.5, ttft=0.1, tpot=0.01, tokens=4, params={}).to_dict()
    (bar,) = charts._timeline_bars(records=[record])
    assert bar.queued_from == pytest.approx(1.5)
    assert bar.first == pytest.approx(2.1)
    assert bar.end == pytest.approx(2.13)


# --- comparing runs -------------------------------------------------------------------------


def test_compare_puts_every_run_on_one_chart_and_leaves_out_other_sweeps():
    runs = [
        {"label": "run 12 (1 Dec)", "summary": concurrency_run()},
        {"label": "run 13 (2 Dec)", "summary": concurrency_run(batching=False)},
        {"label": "run 14 (3 Dec)", "summary": output_length_run()},
    ]
    root = parse(charts.compare_svg(runs=runs))
    text = texts_of(root)
    assert "run 12 (1 Dec)" in text and "run 13 (2 Dec)" in text
    assert "run 14" not in text
    assert "1 left out: a different sweep" in text
    assert "aggregate output tokens/s" in title_of(root)


def test_compare_for_continuous_batching_uses_the_tail_ttft():
    runs = [
        {"label": "one at a time", "summary": head_of_line_run(batching=False)},
        {"label": "batched", "summary": head_of_line_run(batching=True)},
    ]
    root = parse(charts.compare_svg(runs=runs, lab_slug="continuous-batching"))
    assert title_of(root).startswith("P95 TTFT per step for 2 runs")
    assert "P95 TTFT across 2 runs" in texts_of(root)


def test_compare_categorical_steps_use_grouped_bars():
    runs = [
        {"label": "f16 day", "summary": quantization_run(speeds={"m-f16": 40.0, "m-q4_0": 90.0})},
        {"label": "q8 day", "summary": quantization_run(speeds={"m-f16": 42.0, "m-q8_0": 70.0})},
    ]
    root = parse(charts.compare_svg(runs=runs))
    text = texts_of(root)
    for key in ("model=m-f16", "model=m-q4_0", "model=m-q8_0"):
        assert key in text
    assert "decode tokens/s per step for 2 runs" in title_of(root)


# --- speed ----------------------------------------------------------------------------------


def test_a_thousand_request_run_renders_its_three_charts(capsys):
    # Waves per concurrency chosen so the sweep sends exactly 1,000 requests.
    waves = {1: 160, 2: 68, 4: 34, 8: 17, 16: 9, 32: 5, 64: 2}
    steps = [
        (
            c,
            closed_loop(
                params={"concurrency": c},
                concurrency=c,
                waves=n,
                ttft=0.03,
                tpot=0.01 * (1 + c / 32),
                tokens=128,
            ),
        )
        for c, n in waves.items()
    ]
    every = [r for _, records in steps for r in records]
    summary = run_summary(sweep_param="concurrency", steps=steps)
    records = [r.to_dict() for r in every]
    assert len(records) == 1000
    # The first render in a process also loads fonts; time a warm one, as a web worker renders.
    charts.main_chart_svg(lab_slug="batching-almost-free", summary=summary)
    started, cpu = time.perf_counter(), time.process_time()
    svgs = [
        charts.main_chart_svg(lab_slug="batching-almost-free", summary=summary),
        charts.ttft_cdf_svg(records=records),
        charts.timeline_svg(records=records),
    ]
    elapsed, cpu = time.perf_counter() - started, time.process_time() - cpu
    for svg in svgs:
        parse(svg)
    with capsys.disabled():
        # CPU time too: on a shared machine the wall clock also counts other processes' turns.
        print(f"\n1,000-request run: main + CDF + timeline in {elapsed * 1000:.0f} ms wall, {cpu * 1000:.0f} ms CPU")


def slot_limited_step(*, concurrency: int, slots: int, prefill: float = 0.1, tpot: float = 0.01, tokens: int = 20):
    """`concurrency` requests sent at once to an engine with `slots` slots: the ones beyond the
    slots wait inside it for the earlier ones to finish, and that wait lands in their TTFT."""
    service = prefill + (tokens - 1) * tpot
    return [
        request(
            index=i,
            send=0.0,
            ttft=prefill + (i // slots) * service,
            tpot=tpot,
            tokens=tokens,
            params={"concurrency": concurrency},
        )
        for i in range(concurrency)
    ]


def test_timeline_shows_the_wait_for_a_server_slot_as_its_own_colour_and_says_how_it_was_found():
    records = [
        r.to_dict() for r in slot_limited_step(concurrency=1, slots=4) + slot_limited_step(concurrency=8, slots=4)
    ]
    bars, method = charts._server_waits(bars=charts._timeline_bars(records=records), server_slots=4)
    waits = sorted(round(b.server_wait, 3) for b in bars)
    # 4 of the 8 at concurrency 8 waited one full service time (0.1 + 19 × 0.01 = 0.29 s).
    assert waits == [0.0] * 5 + [0.29] * 4
    assert "median TTFT with a slot free (100 ms)" in method
    text = texts_of(parse(charts.timeline_svg(records=records, server_slots=4)))
    assert "waiting inside the engine" in text
    assert "prefill (rest of TTFT)" in text
    assert "4 requests waited inside the engine before its prefill began (longest 290 ms)" in text
    # Without a known slot count nothing is guessed: the old three colours, TTFT as prefill.
    plain = texts_of(parse(charts.timeline_svg(records=records)))
    assert "waiting inside the engine" not in plain and "prefill (TTFT)" in plain


def test_timeline_uses_the_engines_own_prefill_time_where_it_reports_one():
    records = [r.to_dict() for r in slot_limited_step(concurrency=2, slots=1)]
    for record in records:
        record["server"] = {"source": "llamacpp_timings", "prefill_s": 0.1, "decode_s": 0.19, "output_tokens": 20}
    bars, method = charts._server_waits(bars=charts._timeline_bars(records=records), server_slots=None)
    assert sorted(round(b.server_wait, 3) for b in bars) == [0.0, 0.29]
    assert method == "inside the engine: TTFT minus the prefill time the engine reported"
