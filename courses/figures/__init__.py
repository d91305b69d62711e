# Multiplication and minus signs in learner-facing text and worked arithmetic are intended.
"""Figures drawn from code for lesson pages.

Reference one from Markdown on a line of its own:

    !figure[Alt text: one sentence saying what the figure shows](name key=value key=value)

Values are numbers, slugs, or comma lists without spaces. `render_figure` validates the
arguments (raising `FigureError` naming the bad one and what is allowed), draws with matplotlib
on a `Figure` object (no pyplot state), and returns inline SVG whose <title> and aria-label are
the alt text, readable in light and dark mode. With `cache_dir` the SVG is cached on disk by a
hash of the figure, its arguments, the alt text and the catalogues. `python manage.py figures`
lists every figure with its arguments.

Figures (GPU and model slugs come from courses/inference/catalogue/):

- roofline gpu=SLUG (required) precision=bf16|fp16|fp8|int8 (default bf16) model=SLUG (optional)
  Attainable FLOP/s against arithmetic intensity with the ridge point; with a model, marks decode
  at batch 1 and prefill of 1,024 prompt tokens.
- decode_batch_scaling gpu model precision=bf16 context=2048 max_batch=256
  Per-sequence and aggregate decode tokens/s bounds against batch (log x), where the step turns
  compute-bound (if it does) and where the KV cache runs out of memory.
- kv_cache_growth models=a,b,c kv_precision=bf16 max_context=131072
  KV GiB per sequence against context; lines stop at each model's maximum context.
- memory_budget gpu model precision=bf16 context=8192 kv_precision=bf16
  Stacked weights + KV (+ 10 % runtime reserve) for batch 1..N against the GPU's memory.
- seed_experiment (no arguments)
  Ollama llama3.2 with max_tokens 128 / 512 / 2048: TTFT 2.93 / 3.33 / 4.35 s, total
  6.36 / 55.75 / 87.79 s, as stacked TTFT + decode bars.
- prefill_decode_timeline gpu=h100-sxm model=llama-3.1-8b prompt_tokens=1024 output_tokens=16
  One request: the prefill block then each decode step, lower bounds from the math.
- batching_schedules (no arguments)
  Static vs continuous batching of eight requests in four slots; idle slots hatched.
- paged_kv (no arguments)
  Contiguous reservation (internal/external fragmentation) vs paged blocks with block tables.
- speculative_speedup draft_cost=0.05 ks=2,4,8
  Expected speedup against acceptance rate α: (1 − α^(k+1)) / ((1 − α)(k·c + 1)).
- cost_per_million gpu_price=2.50 throughputs=500,2000,8000
  $ per million output tokens against utilisation.
- percentile_spread ns=20,100,1000
  Spread of P99 estimates from repeated samples of n long-tailed latencies (seeded).
- tensor_parallel model=llama-3.1-70b gpu=h100-sxm precision=bf16
  Weights per GPU and the batch-1 decode bound for TP = 1, 2, 4, 8; all-reduce not included.
- moe_weights_read models=a,b (MoE only) max_batch=256
  Share of all weights a decode step reads against batch: the expected union of routed experts.
- weight_formats gpu model
  Checkpoint GB in BF16, FP8, INT4 g128, NVFP4, MXFP4 (embeddings/head in BF16) and the
  batch-1 decode bound each gives.
- decode_step_split gpu model precision=bf16 kv_precision=bf16
  Batch-1 decode step bound against context (log x), split into weight reads and KV reads.
"""

from courses.figures import concepts, inference  # noqa: F401  (importing registers the figures)
from courses.figures.registry import (
    FIGURES,
    Arg,
    FigureError,
    FigureSpec,
    render_figure,
    validate_figure,
)

__all__ = ["FIGURES", "Arg", "FigureError", "FigureSpec", "render_figure", "validate_figure"]
