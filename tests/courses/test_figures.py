# Multiplication and minus signs in learner-facing text and worked arithmetic are intended.
"""Figures: every registered figure renders to accessible SVG; arguments are validated; the
disk cache is keyed by content; the `figures` command lists them."""

import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from concurrent.futures import ThreadPoolExecutor
from io import StringIO
from pathlib import Path

import numpy as np
import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from courses.figures import FIGURES, FigureError, registry, render_figure, validate_figure
from courses.figures.concepts import SEED_RUNS, p99_estimates

ROOT = Path(__file__).resolve().parents[2]
SVG = "{http://www.w3.org/2000/svg}"

EXPECTED_FIGURES = {
    "roofline",
    "decode_batch_scaling",
    "kv_cache_growth",
    "memory_budget",
    "seed_experiment",
    "prefill_decode_timeline",
    "batching_schedules",
    "paged_kv",
    "speculative_speedup",
    "cost_per_million",
    "percentile_spread",
    "tensor_parallel",
    "moe_weights_read",
    "weight_formats",
    "decode_step_split",
}

# The smallest valid arguments for each figure (required ones only).
MINIMAL_ARGS = {
    "roofline": {"gpu": "h100-sxm"},
    "decode_batch_scaling": {"gpu": "h100-sxm", "model": "llama-3.1-8b"},
    "kv_cache_growth": {"models": "llama-3.1-8b,llama-3.1-70b"},
    "memory_budget": {"gpu": "l4", "model": "llama-3.1-8b"},
    "moe_weights_read": {"models": "deepseek-v3,mixtral-8x7b"},
    "weight_formats": {"gpu": "h100-sxm", "model": "llama-3.1-70b"},
    "decode_step_split": {"gpu": "h100-sxm", "model": "llama-3.1-8b"},
}


def test_the_registry_holds_exactly_the_figures_lessons_use():
    assert set(FIGURES) == EXPECTED_FIGURES


@pytest.mark.parametrize("name", sorted(EXPECTED_FIGURES))
def test_every_figure_renders_accessible_svg(name):
    alt = f"What {name} shows, with <brackets> & an ampersand."
    svg = render_figure(name=name, args=MINIMAL_ARGS.get(name, {}), alt=alt)
    assert svg.startswith("<svg")
    root = ET.fromstring(svg)
    assert root.tag == f"{SVG}svg"
    assert root.get("role") == "img"
    assert root.get("aria-label") == alt
    title = root.find(f"{SVG}title")
    assert title is not None and title.text == alt
    # Fixed pixel sizes removed so the figure scales with the column; the viewBox keeps the shape.
    assert root.get("width") is None and root.get("viewBox")
    # Transparent background: matplotlib's figure patch is drawn with opacity 0.
    assert "opacity: 0" in svg


def test_roofline_with_a_model_marks_decode_and_prefill():
    svg = render_figure(
        name="roofline", args={"gpu": "h100-sxm", "model": "llama-3.1-8b"}, alt="roofline"
    )
    assert "decode, batch 1" in svg
    assert "prefill, 1,024 tokens" in svg
    # The ridge point of the H100 SXM in bf16: 989.4 / 3.35 = 295 FLOP/byte.
    assert "295 FLOP/byte" in svg


def test_text_stays_text_in_mid_grey():
    svg = render_figure(name="seed_experiment", args={}, alt="seed")
    assert "<text" in svg
    assert "#808080" in svg
    for value in ("2.93 s", "3.33 s", "4.35 s", "total 6.36 s", "total 55.75 s", "total 87.79 s"):
        assert value in svg


def test_seed_experiment_numbers_add_up():
    # TTFT + decode = total for each run: 2.93 + 3.43, 3.33 + 52.42, 4.35 + 83.44.
    decode = [round(total - ttft, 2) for _, ttft, total, _ in SEED_RUNS]
    assert decode == [3.43, 52.42, 83.44]


def test_ids_are_prefixed_per_figure_so_inlined_figures_do_not_collide():
    first = render_figure(name="roofline", args={"gpu": "h100-sxm"}, alt="one")
    second = render_figure(name="roofline", args={"gpu": "l4"}, alt="two")
    ids_first = set(re.findall(r'id="([^"]+)"', first))
    ids_second = set(re.findall(r'id="([^"]+)"', second))
    assert ids_first and not ids_first & ids_second
    # Every url(#...) reference points at an id in the same figure.
    for reference in re.findall(r"url\(#([^)]+)\)", first):
        assert reference in ids_first


def test_unknown_figure_lists_the_figures():
    with pytest.raises(
        FigureError, match="unknown figure 'rooflines'; figures: batching_schedules, "
    ):
        render_figure(name="rooflines", args={}, alt="x")


@pytest.mark.parametrize(
    ("name", "args", "message"),
    [
        ("roofline", {}, r"argument 'gpu' is required: a GPU slug: l4, a10g"),
        ("roofline", {"gpu": "h100"}, r"argument 'gpu' must be a GPU slug: .* got 'h100'"),
        (
            "roofline",
            {"gpu": "l4", "precision": "int4"},
            r"argument 'precision' must be one of bf16, fp16, fp8, int8, got 'int4'",
        ),
        (
            "roofline",
            {"gpu": "l4", "colour": "red"},
            r"unknown argument 'colour'; arguments: gpu, precision, model",
        ),
        (
            "decode_batch_scaling",
            {"gpu": "l4", "model": "llama-3.1-8b", "max_batch": "1.5"},
            r"argument 'max_batch' must be an integer from 2 to 4096, got '1.5'",
        ),
        (
            "kv_cache_growth",
            {"models": "llama-3.1-8b,gpt-5"},
            r"argument 'models' must be a comma list",
        ),
        ("kv_cache_growth", {"models": "llama-3.1-8b,llama-3.1-8b"}, r"lists a model twice"),
        (
            "speculative_speedup",
            {"ks": "2,4,x"},
            r"argument 'ks' must be a comma list .* got '2,4,x'",
        ),
        (
            "speculative_speedup",
            {"draft_cost": "1.5"},
            r"argument 'draft_cost' must be a number from 0 to 1",
        ),
        ("cost_per_million", {"gpu_price": "nan"}, r"argument 'gpu_price'"),
        ("seed_experiment", {"n": "3"}, r"unknown argument 'n'; arguments: none"),
        # Combinations the per-argument checks cannot see come back from the math as FigureError.
        (
            "memory_budget",
            {"gpu": "l4", "model": "qwen2.5-7b", "context": "65536"},
            r"longer than Qwen2.5 7B's 32,768",
        ),
    ],
)
def test_bad_arguments_name_the_argument_and_what_is_allowed(name, args, message):
    with pytest.raises(FigureError, match=message):
        render_figure(name=name, args=args, alt="x")


def test_alt_text_is_required():
    with pytest.raises(FigureError, match="alt text is required"):
        render_figure(name="paged_kv", args={}, alt="   ")


def test_validate_figure_parses_without_drawing():
    values = validate_figure(name="cost_per_million", args={"throughputs": "100,200"})
    assert values == {"gpu_price": 2.5, "throughputs": (100.0, 200.0)}
    assert validate_figure(name="roofline", args={"gpu": "l4"})["model"] is None


def test_render_caches_by_content_hash(tmp_path, monkeypatch):
    args = {"gpu": "h100-sxm", "precision": "fp8"}
    first = render_figure(name="roofline", args=args, alt="cached", cache_dir=tmp_path)
    files = list(tmp_path.glob("roofline-*.svg"))
    assert len(files) == 1
    assert files[0].read_text() == first
    # A second render must come from the file: make drawing impossible and ask again.
    spec = registry.FIGURES["roofline"]

    def refuse(**_values):
        raise AssertionError("drew instead of reading the cache")

    monkeypatch.setitem(
        registry.FIGURES,
        "roofline",
        registry.FigureSpec(name=spec.name, summary=spec.summary, draw=refuse, args=spec.args),
    )
    assert render_figure(name="roofline", args=args, alt="cached", cache_dir=tmp_path) == first
    # Equivalent spellings of the same value share the entry; a different alt text does not.
    monkeypatch.setitem(registry.FIGURES, "roofline", spec)
    render_figure(
        name="roofline",
        args={"gpu": "h100-sxm", "precision": "fp8"},
        alt="cached",
        cache_dir=tmp_path,
    )
    assert len(list(tmp_path.glob("roofline-*.svg"))) == 1
    render_figure(name="roofline", args=args, alt="different alt", cache_dir=tmp_path)
    assert len(list(tmp_path.glob("roofline-*.svg"))) == 2
    assert not list(tmp_path.glob(".tmp-*"))


def test_number_spellings_share_a_cache_key():
    spec = registry.FIGURES["cost_per_million"]
    one = registry.cache_key(
        name="cost_per_million", values=spec.parse({"gpu_price": "2.5"}), alt="a"
    )
    two = registry.cache_key(
        name="cost_per_million", values=spec.parse({"gpu_price": "2.50"}), alt="a"
    )
    three = registry.cache_key(
        name="cost_per_million", values=spec.parse({"gpu_price": "3"}), alt="a"
    )
    assert one == two != three


def test_rendering_in_threads_is_safe():
    jobs = [("roofline", {"gpu": slug}) for slug in ("l4", "h100-sxm", "h200", "mi300x")] + [
        ("batching_schedules", {}),
        ("paged_kv", {}),
    ]
    with ThreadPoolExecutor(max_workers=4) as pool:
        results = list(
            pool.map(lambda job: render_figure(name=job[0], args=job[1], alt=job[0]), jobs)
        )
    for (name, args), svg in zip(jobs, results, strict=True):
        root = ET.fromstring(svg)
        assert root.get("aria-label") == name
        if name == "roofline":
            assert registry.get_gpu(slug=args["gpu"]).name in svg


def test_figures_never_touch_pyplot():
    code = (
        "import sys; from courses.figures import render_figure; "
        "render_figure(name='roofline', args={'gpu': 'l4', 'model': 'llama-3.2-1b'}, alt='x'); "
        "render_figure(name='percentile_spread', args={'ns': '20'}, alt='x'); "
        "assert 'matplotlib.pyplot' not in sys.modules, 'pyplot was imported'"
    )
    completed = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert completed.returncode == 0, completed.stderr


def test_p99_estimates_are_seeded_and_tighten_with_n():
    assert np.array_equal(
        p99_estimates(n=50, repeats=20, seed=1), p99_estimates(n=50, repeats=20, seed=1)
    )
    small = p99_estimates(n=20, repeats=300, seed=7)
    large = p99_estimates(n=1000, repeats=300, seed=7)
    # True P99 of the log-normal (median 200 ms, sigma 0.8): 0.2 × e^(0.8 × 2.3263) = 1.286 s.
    assert np.median(large) == pytest.approx(1.286, rel=0.05)
    # With n = 20 the estimate is both biased low (the sample rarely holds a true 1-in-100 value)
    # and spread out: over twice as wide as with n = 1,000.
    assert np.median(small) < 0.8 * 1.286
    assert np.percentile(small, 95) - np.percentile(small, 5) > 2 * (
        np.percentile(large, 95) - np.percentile(large, 5)
    )


def test_figures_command_lists_every_figure_with_its_arguments():
    out = StringIO()
    call_command("figures", stdout=out)
    text = out.getvalue()
    for name in EXPECTED_FIGURES:
        assert re.search(rf"^{name}$", text, re.MULTILINE)
    assert "gpu (required): GPU from the catalogue; a GPU slug: l4" in text
    assert "precision (default bf16): weight precision; one of bf16, fp16, fp8, int8" in text
    assert "ks (default 2,4,8)" in text


def test_figures_command_renders_to_a_file(tmp_path):
    target = tmp_path / "paged.svg"
    call_command(
        "figures",
        "--render",
        "paged_kv",
        "--alt",
        "Paged KV",
        "--out",
        str(target),
        stdout=StringIO(),
    )
    assert ET.fromstring(target.read_text()).get("aria-label") == "Paged KV"
    with pytest.raises(CommandError, match="figure 'roofline': argument 'gpu' must be") as error:
        call_command("figures", "--render", "roofline", "gpu=h1", "--alt", "x", stdout=StringIO())
    assert error.value.returncode == 2


def test_lesson_1_timeline_caption_counts_the_decode_steps_drawn_and_the_key_names_both_colours():
    # 16 output tokens: the first comes out of prefill, so n − 1 = 15 decode steps are drawn.
    lesson = (ROOT / "courses/content/lessons/how-generation-works.md").read_text()
    caption = re.search(r"!figure\[([^\]]*)\]\(prefill_decode_timeline [^)]*output_tokens=16\)", lesson)
    assert caption is not None
    assert "fifteen equal decode steps" in caption.group(1)
    assert "sixteen" not in caption.group(1)
    svg = render_figure(
        name="prefill_decode_timeline",
        args={"gpu": "h100-sxm", "model": "llama-3.1-8b", "prompt_tokens": "1024", "output_tokens": "16"},
        alt="timeline",
    )
    assert "each of the 15 decode steps" in svg
    assert "decode steps 1, 3, 5, … (memory-bound)" in svg
    assert "decode steps 2, 4, 6, …" in svg


def test_moe_weights_read_refuses_a_dense_model():
    with pytest.raises(FigureError, match=r"Llama 3\.1 8B is dense"):
        render_figure(
            name="moe_weights_read", args={"models": "deepseek-v3,llama-3.1-8b"}, alt="x"
        )


def test_kv_growth_bends_at_the_sliding_window():
    # gpt-oss-120b at 131,072 tokens: 36,864 × 131,072 + 36,864 × 128 bytes = 4.50 GiB.
    svg = render_figure(
        name="kv_cache_growth", args={"models": "gpt-oss-120b"}, alt="gpt-oss cache"
    )
    assert "4.50 GiB" in svg
    assert "36 KiB/token" in svg


def test_decode_step_split_marks_where_cache_reads_pass_weight_reads():
    # Llama 3.1 8B BF16: 16,060,522,496 weight bytes ÷ 131,072 per token = 122,532.6 tokens.
    svg = render_figure(
        name="decode_step_split", args={"gpu": "h100-sxm", "model": "llama-3.1-8b"}, alt="x"
    )
    assert "near 122,533 tokens" in svg
