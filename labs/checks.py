"""'What you should see': a lab run's result compared with the shape its lesson predicts.

``evaluate`` takes the run summary the lab stores (``{"overall", "sweep_param", "steps"}``, each
summary in the measurement library's format) and returns findings: whether the expected shape
showed up, and when it did not, the likely reason. Every message quotes the numbers it used, so
a learner can check the reasoning against the results table. No Django: plain data in and out.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from courses.inference.units import (
    number_or_missing,
    rate_or_missing,
    seconds_or_missing,
    significant,
)
from labs.analysis import (
    KNEE_PEAK_FRACTION,
    SATURATION_GOODPUT,
    StepView,
    as_number,
    concurrency_knee,
    decode_tokens_per_s,
    goodput_fraction,
    is_shared,
    linear_fit,
    prefix_ratio,
    saturation_rate,
    stat,
    sweep_steps,
    weight_bits,
)

# ttft-vs-output-length: with one fixed prompt, prefill work is the same at every output length,
# so TTFT may drift by noise and cache effects but not by half again; total time must grow with
# the tokens decoded (×3 over the default 128 -> 2,048 sweep, a quarter of the length ratio
# when a learner sweeps a narrower range).
TTFT_FLAT_RATIO = 1.5
E2E_GROWTH_RATIO = 3.0
# Output within 10 % of what was asked counts as forced (usage can differ by a stop token).
OUTPUT_FORCED_FRACTION = 0.9

# prompt-length-ttft: a step may come in up to 10 % below the previous one (noise) and the
# sweep still counts as rising; TPOT counts as flat within 25 % across prompt lengths.
TTFT_DROP_TOLERANCE = 0.10
# Over the sweep TTFT must rise by a fifth at least, or prefill is lost in fixed costs and noise.
TTFT_RISE_MIN = 1.2
TPOT_FLAT_RATIO = 1.25
FIT_R2_GOOD = 0.9

# decode-speed-of-light: below 20 % of the bandwidth bound something other than reading the
# weights dominates each step; above 100 % the bound does not describe what actually ran.
EFFICIENCY_LOW = 0.20
EFFICIENCY_HIGH = 1.00

# batching-almost-free: over a sweep that at least doubles concurrency, aggregate tokens/s must
# grow by half again to count as rising.
AGGREGATE_RISE_RATIO = 1.5

# continuous-batching: a batching engine admits a new request at its next step, so P95 TTFT
# under load stays within ×3 of the lightest step; serving one request at a time it grows with
# the length of every answer queued ahead.
HOL_TTFT_RATIO = 3.0

# prefix-caching: a cache hit should save at least a fifth of TTFT.
PREFIX_HIT_RATIO = 0.8

# quantization: decode tokens/s within 5 % counts as equal (noise between steps).
QUANT_TOLERANCE = 0.05

# P99 needs about 100 samples before it is more than the worst one or two requests.
P99_MIN_SAMPLES = 100

# Prompt tokens an engine may serve from its prefix cache, beyond a chat template's fixed
# opening, before a lab that is not about caching says its TTFT is not all prefill: 1 %.
PREFIX_HITS_THREAT = 0.01


@dataclass(frozen=True, slots=True)
class Finding:
    """One check: ``ok`` when the result has the expected shape; ``detail`` gives the numbers.

    A ``note`` is neither a pass nor a failure (a caveat about reading the results, such as a P99
    from too few samples): the page shows it in a neutral style.
    """

    id: str
    ok: bool
    title: str
    detail: str
    note: bool = False


def evaluate(
    *,
    lab_slug: str,
    summary: Mapping[str, Any],
    bound: Mapping[str, Any] | None = None,
    measures_prefix_cache: bool = False,
) -> list[Finding]:
    """The lab's own checks first, then the checks that apply to any run.

    ``bound`` is the decode speed-of-light of the target, ``{"decode_tokens_per_s": x,
    "label": "..."}``, or None when the target's hardware or model size is unknown.
    ``measures_prefix_cache`` (the lab's plan says ``prompt_cache = true``): cache hits are the
    effect under study; for every other lab they are a threat to what TTFT means.
    """
    param, steps = sweep_steps(summary=summary)
    overall = summary.get("overall") or (steps[0].summary if len(steps) == 1 else {})
    findings: list[Finding] = []
    if stat(summary=overall, metric="ttft_s") is None:
        findings.append(
            Finding(
                id="no-results",
                ok=False,
                title="No request succeeded, so there is nothing to compare",
                detail=(
                    f"{_count(overall, 'failed')} of {_count(overall, 'total')} measured "
                    "requests failed; the errors below say why."
                    if _count(overall, "total")
                    else "No measured request was recorded for this run."
                ),
            )
        )
    else:
        check = LAB_CHECKS.get(lab_slug)
        if check is not None:
            findings.extend(check(steps=steps, overall=overall, bound=bound))
    findings.extend(_generic(param=param, steps=steps, overall=overall))
    findings.extend(_prefix_cache_hits(steps=steps, overall=overall, expected=measures_prefix_cache))
    return findings


def _prefix_cache_hits(*, steps: list[StepView], overall: Mapping[str, Any], expected: bool) -> list[Finding]:
    """What the engine said about its prefix cache, read against what the lab measures."""
    cache = overall.get("prefix_cache")
    if not cache or not cache.get("prompt_tokens"):
        return []
    per_step = "; ".join(
        f"{s.key}: {s.summary['prefix_cache']['hit_rate']:.0%}" for s in steps if s.summary.get("prefix_cache")
    )
    template = cache.get("template_tokens") or 0
    said = (
        f"The engine reported {cache['cached_tokens']:,} of {cache['prompt_tokens']:,} prompt tokens "
        f"({cache['hit_rate']:.0%}) served from its prefix cache ({cache['source']})"
        + (f"; per step: {per_step}" if len(steps) > 1 and per_step else "")
        + (f"; up to {template:,} may be the chat template's opening, shared by every request" if template else "")
        + "."
    )
    if expected:
        return [
            Finding(
                id="prefix-cache-hit-rate",
                ok=cache["cached_tokens"] > 0,
                title=f"{cache['hit_rate']:.0%} of prompt tokens came from the prefix cache",
                detail=said
                + (
                    " Only requests that share the prefix can hit, and only after the first of them has "
                    "computed it; the step without a shared prefix should show none."
                    if cache["cached_tokens"]
                    else " No hits at all: the engine's prefix cache is off, or each request landed where "
                    "the prefix was not cached (llama.cpp caches per slot)."
                ),
            )
        ]
    rate = cache.get("beyond_template_rate", cache["hit_rate"])
    if rate <= PREFIX_HITS_THREAT:
        return [
            Finding(
                id="prefix-cache-hits",
                ok=True,
                title="Every TTFT here is a full prefill: no prompt came from a cache",
                detail=said + " Every prompt of this run opened with the run's own nonce, so no cached work "
                "from another run (or another learner) could shorten its prefill.",
            )
        ]
    return [
        Finding(
            id="prefix-cache-hits",
            ok=False,
            title=f"{rate:.0%} of prompt tokens came from the engine's prefix cache, so TTFT is not all prefill",
            detail=said + " Cached tokens skip prefill, so this run's TTFT understates prefill and the "
            "conclusions above that rest on TTFT do too. This run's prompts opened with its own nonce, so "
            "the hits come from inside the run (repeated prompts) or from an engine that matches more "
            "than exact prefixes. Run it again: a new run draws a new nonce.",
        )
    ]


# --- lab checks -----------------------------------------------------------------------------


def _ttft_vs_output_length(
    *, steps: list[StepView], overall: Mapping[str, Any], bound: Mapping[str, Any] | None
) -> list[Finding]:
    usable = _with(steps=steps, metric="ttft_s")
    if len(usable) < 2:
        return [_need_steps(lab="output lengths", steps=steps)]
    short, long = usable[0], usable[-1]
    asked_short, asked_long = as_number(short.value), as_number(long.value)
    ttft_a = _p(short, "ttft_s")
    ttft_b = _p(long, "ttft_s")
    ttft_ratio = ttft_b / ttft_a
    where = f"from max_tokens={_n(asked_short)} to max_tokens={_n(asked_long)}"
    findings = []
    if ttft_ratio <= TTFT_FLAT_RATIO:
        findings.append(
            Finding(
                id="ttft-flat",
                ok=True,
                title="TTFT stayed nearly flat as output length grew",
                detail=(
                    f"P50 TTFT went {_s(ttft_a)} -> {_s(ttft_b)} (×{_r(ttft_ratio)}) {where}, "
                    f"within ×{TTFT_FLAT_RATIO}: the first token waits only for prefill of the "
                    "prompt, and the prompt was the same."
                ),
            )
        )
    else:
        prompt_a = stat(summary=short.summary, metric="prompt_tokens")
        prompt_b = stat(summary=long.summary, metric="prompt_tokens")
        queue = stat(summary=long.summary, metric="queue_s")
        if prompt_a and prompt_b and abs(prompt_b - prompt_a) / prompt_a > 0.05:
            reason = (
                f"your prompt was not fixed: prompt tokens P50 went {_n(prompt_a)} -> "
                f"{_n(prompt_b)}, so the longer step did more prefill work"
            )
        else:
            same = f" (prompt tokens P50 {_n(prompt_a)} in both)" if prompt_a else ""
            reason = (
                f"your prompt was not fixed, or the engine was busy{same}: client queue time "
                f"P50 = {_s(queue)} at max_tokens={_n(asked_long)}, and waiting inside a busy "
                "engine counts as TTFT too (another run, a background job, or a cold cache)"
            )
        findings.append(
            Finding(
                id="ttft-flat",
                ok=False,
                title="TTFT grew with output length",
                detail=(
                    f"P50 TTFT went {_s(ttft_a)} -> {_s(ttft_b)} (×{_r(ttft_ratio)}) {where}; "
                    f"with one fixed prompt it should stay within ×{TTFT_FLAT_RATIO}. Likely "
                    f"{reason}."
                ),
            )
        )
    e2e_a = stat(summary=short.summary, metric="e2e_s")
    e2e_b = stat(summary=long.summary, metric="e2e_s")
    if e2e_a and e2e_b and asked_short and asked_long:
        expected = min(E2E_GROWTH_RATIO, 1 + (asked_long / asked_short - 1) / 4)
        e2e_ratio = e2e_b / e2e_a
        out_b = stat(summary=long.summary, metric="output_tokens")
        growth = f"P50 end-to-end went {_s(e2e_a)} -> {_s(e2e_b)} (×{_r(e2e_ratio)}) {where}"
        if e2e_ratio > expected:
            findings.append(
                Finding(
                    id="e2e-grows",
                    ok=True,
                    title="Total time grew with output length",
                    detail=(
                        f"{growth}, more than ×{_r(expected)}: every output token is one more "
                        f"decode step (P50 TPOT {_s(stat(summary=long.summary, metric='tpot_s'))} "
                        f"at max_tokens={_n(asked_long)})."
                    ),
                )
            )
        elif out_b is not None and out_b < OUTPUT_FORCED_FRACTION * asked_long:
            findings.append(
                Finding(
                    id="e2e-grows",
                    ok=False,
                    title="Total time barely grew: the engine stopped early",
                    detail=(
                        f"{growth}, expected more than ×{_r(expected)}: output length was not "
                        f"forced — the engine stopped early (output tokens P50 = {_n(out_b)} of "
                        f"{_n(asked_long)} asked), so the long step decoded few extra tokens. The "
                        "engine must honour ignore_eos or min_tokens for this lab."
                    ),
                )
            )
        else:
            findings.append(
                Finding(
                    id="e2e-grows",
                    ok=False,
                    title="Total time barely grew although the output was as long as asked",
                    detail=(
                        f"{growth}, expected more than ×{_r(expected)}, yet output tokens P50 = "
                        f"{_n(out_b)} at max_tokens={_n(asked_long)}. Prefill dominates here: "
                        f"P50 TTFT {_s(ttft_b)} of {_s(e2e_b)} in total, so decoding the extra "
                        "tokens adds little. Use a shorter prompt or longer outputs."
                    ),
                )
            )
    return findings


def _prompt_length_ttft(
    *, steps: list[StepView], overall: Mapping[str, Any], bound: Mapping[str, Any] | None
) -> list[Finding]:
    usable = [s for s in _with(steps=steps, metric="ttft_s") if as_number(s.value) is not None]
    if len({as_number(s.value) for s in usable}) < 2:
        return [_need_steps(lab="prompt lengths", steps=steps)]
    xs = [as_number(s.value) or 0.0 for s in usable]
    ys = [_p(s, "ttft_s") for s in usable]
    slope, intercept, r2 = linear_fit(xs=xs, ys=ys)
    drops = [
        f"{_n(xs[i])} -> {_n(xs[i + 1])} tokens: {_s(ys[i])} -> {_s(ys[i + 1])}"
        for i in range(len(ys) - 1)
        if ys[i + 1] < ys[i] * (1 - TTFT_DROP_TOLERANCE)
    ]
    series = ", ".join(f"{_n(x)}: {_s(y)}" for x, y in zip(xs, ys, strict=True))
    rise = ys[-1] / ys[0]
    findings = []
    if slope > 0 and not drops and rise >= TTFT_RISE_MIN:
        quality = (
            "the points sit close to the line"
            if r2 >= FIT_R2_GOOD
            else "the points scatter around the line; more repeats per length would steady it"
        )
        findings.append(
            Finding(
                id="ttft-rises",
                ok=True,
                title="TTFT rose with prompt length",
                detail=(
                    f"P50 TTFT per prompt length ({series}). The fitted line gives prefill at "
                    f"{significant(value=1 / slope)} tokens/s {_fixed_cost(intercept)}, r² = {r2:.2f}: {quality}."
                ),
            )
        )
    else:
        if drops:
            why = f"it fell between steps ({'; '.join(drops)})"
        elif slope <= 0:
            why = f"the fitted slope is not positive (r² = {r2:.2f})"
        else:
            why = (
                f"it rose only ×{_r(rise)} from the shortest to the longest prompt, under "
                f"×{TTFT_RISE_MIN} (r² = {r2:.2f})"
            )
        findings.append(
            Finding(
                id="ttft-rises",
                ok=False,
                title="TTFT did not rise steadily with prompt length",
                detail=(
                    f"P50 TTFT per prompt length ({series}): {why}. At these lengths fixed "
                    f"per-request costs ({_s(max(intercept, 0.0))} from the fit) may hide "
                    "prefill, the engine may have reused a cached prefix, or it was busy "
                    "during some steps. Try longer prompts and more repeats."
                ),
            )
        )
    tpots = [(s, stat(summary=s.summary, metric="tpot_s")) for s in usable]
    known = [(s, t) for s, t in tpots if t]
    if len(known) >= 2:
        low = min(t for _, t in known)
        high = max(t for _, t in known)
        spread = ", ".join(f"{_n(as_number(s.value))}: {_s(t)}" for s, t in known)
        if high / low <= TPOT_FLAT_RATIO:
            findings.append(
                Finding(
                    id="tpot-flat",
                    ok=True,
                    title="Time per output token stayed flat",
                    detail=(
                        f"P50 TPOT per prompt length ({spread}) varies by ×{_r(high / low)}, "
                        f"within ×{TPOT_FLAT_RATIO}: each decode step reads the same weights "
                        "whatever the prompt was."
                    ),
                )
            )
        else:
            findings.append(
                Finding(
                    id="tpot-flat",
                    ok=False,
                    title="Time per output token changed with prompt length",
                    detail=(
                        f"P50 TPOT per prompt length ({spread}) varies by ×{_r(high / low)}, "
                        f"more than ×{TPOT_FLAT_RATIO}. Each decode step also reads the KV "
                        "cache of the whole context, which becomes a visible share of the step "
                        "for long prompts on a small model; otherwise the engine was shared "
                        "during part of the run."
                    ),
                )
            )
    return findings


def _decode_speed_of_light(
    *, steps: list[StepView], overall: Mapping[str, Any], bound: Mapping[str, Any] | None
) -> list[Finding]:
    summary = steps[0].summary if len(steps) == 1 else overall
    measured = decode_tokens_per_s(summary=summary)
    tpot = stat(summary=summary, metric="tpot_s")
    if measured is None:
        return [
            Finding(
                id="decode-efficiency",
                ok=False,
                title="No decode speed: no request produced two or more tokens",
                detail="TPOT needs at least two output tokens per request; raise max_tokens.",
            )
        ]
    limit = (bound or {}).get("decode_tokens_per_s")
    if not limit:
        return [
            Finding(
                id="decode-efficiency",
                ok=False,
                title="No bound to compare with on this target",
                detail=(
                    f"Measured {_t(measured)} (P50 TPOT {_s(tpot)}). The target has no memory "
                    "bandwidth or model size recorded, so the bandwidth bound and the efficiency "
                    "cannot be computed; staff can add them to the target."
                ),
            )
        ]
    efficiency = measured / float(limit)
    label = (bound or {}).get("label") or "the target's hardware"
    numbers = (
        f"Measured {_t(measured)} (P50 TPOT {_s(tpot)}) against a bound of {_t(float(limit))} "
        f"({label}): {efficiency:.0%} of the bound."
    )
    chunks = _chunk_counted(summary=summary)
    if efficiency > EFFICIENCY_HIGH:
        extra = (
            f" Here {chunks} requests counted tokens from stream chunks, which can undercount "
            "or overcount what the engine produced."
            if chunks
            else ""
        )
        return [
            Finding(
                id="decode-efficiency",
                ok=False,
                title="Faster than the bandwidth bound: the bound does not match what ran",
                detail=(
                    f"{numbers} The bound assumes every weight byte is read from memory once per "
                    "token, so nothing can beat it. Above 100 % means its inputs are wrong for "
                    "this run: the served model is smaller or more heavily quantized than the "
                    "bound assumes, the engine decodes several tokens per step (speculative "
                    "decoding), or a small model fits in a CPU's cache and is not read from "
                    f"main memory.{extra}"
                ),
            )
        ]
    if efficiency < EFFICIENCY_LOW:
        return [
            Finding(
                id="decode-efficiency",
                ok=False,
                title="Far below the bandwidth bound",
                detail=(
                    f"{numbers} Below {EFFICIENCY_LOW:.0%} something other than reading the "
                    "weights dominates each step: fixed per-token work (scheduling, sampling, "
                    "detokenising and streaming, kernel launches), which matters most for tiny "
                    "models; the model running partly or wholly off the accelerator; or other "
                    "work competing for the same memory bandwidth."
                ),
            )
        ]
    return [
        Finding(
            id="decode-efficiency",
            ok=True,
            title=f"Decode reached {efficiency:.0%} of the bandwidth bound",
            detail=(
                f"{numbers} Well-tuned engines at batch 1 often land around 50-85 % on a GPU; "
                "CPU engines and tiny models usually sit lower because fixed per-token costs "
                "weigh more. The gap to 100 % is the KV cache reads, activations and overheads "
                "the bound leaves out."
            ),
        )
    ]


def _batching_almost_free(
    *, steps: list[StepView], overall: Mapping[str, Any], bound: Mapping[str, Any] | None
) -> list[Finding]:
    usable = [
        s for s in _with(steps=steps, metric="tpot_s") if as_number(s.value) and s.summary.get("output_tokens_per_s")
    ]
    # One step per level (a level listed twice is measured twice; the first one counts), so no
    # finding compares a level with itself.
    usable = list({as_number(s.value): s for s in reversed(usable)}.values())[::-1]
    if len(usable) < 2:
        return [_need_steps(lab="concurrency levels", steps=steps)]
    low, high = usable[0], usable[-1]
    c_low, c_high = as_number(low.value) or 1.0, as_number(high.value) or 1.0
    agg_low = float(low.summary["output_tokens_per_s"])
    agg_high = float(high.summary["output_tokens_per_s"])
    tpot_low = _p(low, "tpot_s")
    ttft_low = _p(low, "ttft_s")
    # Judged at the peak, not at the last level: on an engine with a few server slots throughput
    # peaks at the slot count and falls back a little above it, and that is still batching paying.
    peak = max(usable, key=lambda s: float(s.summary["output_tokens_per_s"]))
    c_peak = as_number(peak.value) or 1.0
    agg_peak = float(peak.summary["output_tokens_per_s"])
    compared = peak if peak is not low else high
    c_cmp = as_number(compared.value) or 1.0
    agg_cmp = float(compared.summary["output_tokens_per_s"])
    tpot_cmp, ttft_cmp = _p(compared, "tpot_s"), _p(compared, "ttft_s")
    agg_ratio = agg_cmp / agg_low
    where_peak = ", its peak," if compared is peak and peak is not high else ""
    span = f"from concurrency {_n(c_low)} to {_n(c_cmp)}{where_peak} (×{_r(c_cmp / c_low)} the concurrency)"
    after_peak = (
        f"; above it, at concurrency {_n(c_high)}, it fell back to {_t(agg_high)}: the extra requests "
        "waited for a server slot or slowed the batch more than they added"
        if peak is not high and peak is not low and agg_high < agg_peak
        else ""
    )
    findings = []
    if agg_ratio >= AGGREGATE_RISE_RATIO:
        findings.append(
            Finding(
                id="aggregate-rises",
                ok=True,
                title="Aggregate throughput rose with concurrency",
                detail=(
                    f"Aggregate output went {_t(agg_low)} -> {_t(agg_cmp)} (×{_r(agg_ratio)}) "
                    f"{span}: one decode step serves every request in the batch, reading the "
                    f"weights once for all of them{after_peak}."
                ),
            )
        )
    else:
        if tpot_cmp / tpot_low <= TPOT_FLAT_RATIO:
            reason = (
                f"this engine serves one request at a time: P50 TPOT stayed at {_s(tpot_low)} "
                f"-> {_s(tpot_cmp)} while P50 TTFT went {_s(ttft_low)} -> {_s(ttft_cmp)}, "
                "because each request waited inside the engine for the ones ahead to finish"
            )
        else:
            reason = (
                f"the engine batches but was already saturated at concurrency {_n(c_low)}: "
                f"P50 TPOT went {_s(tpot_low)} -> {_s(tpot_cmp)}, so each request slowed by "
                "as much as the batch grew"
            )
        findings.append(
            Finding(
                id="aggregate-rises",
                ok=False,
                title="Aggregate throughput did not rise with concurrency",
                detail=(
                    f"Aggregate output went {_t(agg_low)} -> {_t(agg_cmp)} (×{_r(agg_ratio)}) "
                    f"{span}, less than ×{AGGREGATE_RISE_RATIO} at its best (peak {_t(agg_peak)} at "
                    f"concurrency {_n(c_peak)}): {reason}."
                ),
            )
        )
        # The chart marks the knee whatever the gain; the finding names the same one.
        findings.append(_knee_finding(usable=usable))
        return findings
    knee = concurrency_knee(steps=usable)
    # TPOT is compared between two different levels: the lowest and the knee, or the highest
    # when throughput was still rising (the knee is then beyond the sweep).
    reference = high
    if knee is not None and knee.concurrency != c_low:
        reference = next(s for s in usable if as_number(s.value) == knee.concurrency)
    c_ref = as_number(reference.value) or c_high
    tpot_ratio = _p(reference, "tpot_s") / tpot_low
    c_ratio = c_ref / c_low
    agg_ref = float(reference.summary["output_tokens_per_s"])
    measured = (
        f"From concurrency {_n(c_low)} to {_n(c_ref)} (×{_r(c_ratio)}), P50 TPOT went "
        f"{_s(tpot_low)} -> {_s(_p(reference, 'tpot_s'))} (×{_r(tpot_ratio)}) while aggregate "
        f"output went {_t(agg_low)} -> {_t(agg_ref)} (×{_r(agg_ref / agg_low)})"
    )
    if tpot_ratio < c_ratio:
        findings.append(
            Finding(
                id="tpot-slower-than-concurrency",
                ok=True,
                title="Each request slowed far less than the batch grew",
                detail=(
                    f"{measured}. While decode is memory-bound, adding a request to the batch "
                    "adds little to a step, which is why batching is almost free."
                ),
            )
        )
    else:
        findings.append(
            Finding(
                id="tpot-slower-than-concurrency",
                ok=False,
                title="Each request slowed as fast as the batch grew",
                detail=(
                    f"{measured}. TPOT grew at least as fast as concurrency, so batching bought "
                    "no throughput per request: the engine is compute-bound already at these "
                    "sizes (a large model on a small device, or long contexts) or it serialises "
                    "part of each step."
                ),
            )
        )
    findings.append(_knee_finding(usable=usable))
    return findings


def _knee_finding(*, usable: list[StepView]) -> Finding:
    """The knee the concurrency chart marks, with every number that placed it."""
    knee = concurrency_knee(steps=usable)
    high = usable[-1]
    c_high, agg_high = as_number(high.value) or 1.0, float(high.summary["output_tokens_per_s"])
    per_level = ", ".join(f"{_n(as_number(s.value))}: {_t(float(s.summary['output_tokens_per_s']))}" for s in usable)
    if knee is None:
        return Finding(
            id="knee",
            ok=True,
            title="No knee within this sweep",
            detail=(
                f"Aggregate output was still rising at the highest level: {_t(agg_high)} at "
                f"concurrency {_n(c_high)}, and no lower level reached {KNEE_PEAK_FRACTION:.0%} "
                f"of it (aggregate per level: {per_level}). Sweep higher, within the target's "
                "limit, to find the knee."
            ),
        )
    knee_tpot = stat(summary=next(s for s in usable if as_number(s.value) == knee.concurrency).summary, metric="tpot_s")
    reached = (
        f"Concurrency {_n(knee.concurrency)} is the lowest level reaching {KNEE_PEAK_FRACTION:.0%} of that "
        f"peak: {_t(knee.tokens_per_s)} ({knee.fraction_of_peak:.0%}), at P50 TPOT {_s(knee_tpot)}"
    )
    if knee.before is None:
        return Finding(
            id="knee",
            ok=True,
            title=(
                f"No gain from concurrency: {_n(knee.concurrency)} already gives "
                f"{knee.fraction_of_peak:.0%} of the peak"
            ),
            detail=(
                f"Aggregate output peaked at {_t(knee.peak_tokens_per_s)} at concurrency "
                f"{_n(knee.peak_concurrency)}. {reached}, so more requests in flight bought less than "
                f"a tenth more (aggregate per level: {per_level})."
            ),
        )
    return Finding(
        id="knee",
        ok=True,
        title=f"The knee is at about {_n(knee.concurrency)} concurrent requests",
        detail=(
            f"Aggregate output peaked at {_t(knee.peak_tokens_per_s)} at concurrency "
            f"{_n(knee.peak_concurrency)}. {reached}, while concurrency {_n(knee.before[0])} reached "
            f"{_t(knee.before[1])} ({knee.before[1] / knee.peak_tokens_per_s:.0%}). Aggregate per level: "
            f"{per_level}. Beyond the knee more concurrency mostly makes each request slower or makes "
            "it wait: the batch has turned compute-bound, the KV cache has run out of room, or the "
            "engine has no free slot."
        ),
    )


def _continuous_batching(
    *, steps: list[StepView], overall: Mapping[str, Any], bound: Mapping[str, Any] | None
) -> list[Finding]:
    usable = _with(steps=steps, metric="ttft_s")
    if len(usable) < 2:
        return [_need_steps(lab="load levels", steps=steps)]
    low, high = usable[0], usable[-1]
    p95_low = _p(low, "ttft_s", "p95")
    p95_high = _p(high, "ttft_s", "p95")
    queue_low = stat(summary=low.summary, metric="queue_s", key="p95") or 0.0
    queue_high = stat(summary=high.summary, metric="queue_s", key="p95") or 0.0
    ratio = p95_high / p95_low
    numbers = (
        f"P95 TTFT went {_s(p95_low)} at {low.key} -> {_s(p95_high)} at {high.key} "
        f"(×{_r(ratio)}); P95 client queue {_s(queue_low)} -> {_s(queue_high)}"
    )
    if ratio <= HOL_TTFT_RATIO:
        return [
            Finding(
                id="ttft-p95-under-load",
                ok=True,
                title="New requests started promptly under load",
                detail=(
                    f"{numbers}, within ×{HOL_TTFT_RATIO}. An engine that batches continuously "
                    "admits a new request at its next step, so a short request does not wait "
                    "for the long answers already running."
                ),
            )
        ]
    where = (
        f" Most of the wait was in the client's own queue (P95 {_s(queue_high)}): all concurrency slots were busy."
        if queue_high > 0.5 * p95_high
        else " The wait happened inside the engine, not in the client's queue."
    )
    return [
        Finding(
            id="ttft-p95-under-load",
            ok=False,
            title="Requests waited behind others (head-of-line blocking)",
            detail=(
                f"{numbers}, more than ×{HOL_TTFT_RATIO}.{where} An engine that serves one "
                "request at a time makes a short request wait for every long answer ahead of "
                "it; on such a target this is the expected result, so compare with a run on a "
                "target that batches. On a batching engine, check how many sequences it may "
                "run at once (vLLM max_num_seqs, llama.cpp --parallel)."
            ),
        )
    ]


def _prefix_caching(
    *, steps: list[StepView], overall: Mapping[str, Any], bound: Mapping[str, Any] | None
) -> list[Finding]:
    ratio = prefix_ratio(steps=steps)
    if ratio is None:
        return [
            Finding(
                id="prefix-cache-speedup",
                ok=False,
                title="Need one step with a shared prefix and one without",
                detail=(
                    "Steps measured: "
                    + (", ".join(s.key for s in steps) or "none")
                    + ". Run both shared_prefix = 0 and 1 to compare."
                ),
            )
        ]
    shared = next(s for s in steps if is_shared(s.value))
    unique = next(s for s in steps if not is_shared(s.value))
    numbers = (
        f"P50 TTFT {_s(_p(shared, 'ttft_s'))} with a shared prefix against "
        f"{_s(_p(unique, 'ttft_s'))} with unique prompts (×{_r(ratio)}); P95 "
        f"{_s(stat(summary=shared.summary, metric='ttft_s', key='p95'))} against "
        f"{_s(stat(summary=unique.summary, metric='ttft_s', key='p95'))}"
    )
    if ratio <= PREFIX_HIT_RATIO:
        return [
            Finding(
                id="prefix-cache-speedup",
                ok=True,
                title=f"Cache hits cut TTFT by {1 - ratio:.0%}",
                detail=(
                    f"{numbers}. With the prefix's KV already cached, prefill only computes "
                    "the part of each prompt after it."
                ),
            )
        ]
    return [
        Finding(
            id="prefix-cache-speedup",
            ok=False,
            title="No clear saving from the shared prefix",
            detail=(
                f"{numbers}; a cache hit should bring it under ×{PREFIX_HIT_RATIO}. Either the "
                "engine's prefix cache is off or not shared between requests (vLLM "
                "--enable-prefix-caching; llama.cpp keeps a prompt cache per slot, so a "
                "request on another slot recomputes), the cache was evicted between requests, "
                "or the shared part is short next to the unique part, so there is little "
                "prefill to save. A longer shared prefix makes the effect plain."
            ),
        )
    ]


def _open_loop_slo(
    *, steps: list[StepView], overall: Mapping[str, Any], bound: Mapping[str, Any] | None
) -> list[Finding]:
    rated = [s for s in steps if as_number(s.value)]
    if len(rated) < 2:
        return [_need_steps(lab="arrival rates", steps=steps)]
    points = [(s, goodput_fraction(summary=s.summary)) for s in rated]
    if all(fraction is None for _, fraction in points):
        p95 = ", ".join(
            f"{_n(as_number(s.value))}/min: {_s(_p(s, 'ttft_s', 'p95'))}"
            for s in rated
            if stat(summary=s.summary, metric="ttft_s")
        )
        return [
            Finding(
                id="saturation",
                ok=False,
                title="No SLO was set, so there is no goodput to read",
                detail=(
                    f"P95 TTFT per offered rate ({p95}). Set a TTFT or TPOT target so each "
                    "request can be counted as good or not."
                ),
            )
        ]
    measured = [(s, f) for s, f in points if f is not None]
    series = "; ".join(
        f"{_n(as_number(s.value))}/min: goodput {f:.0%}, P95 TTFT "
        f"{_s(stat(summary=s.summary, metric='ttft_s', key='p95'))}"
        for s, f in measured
    )
    slo = (measured[0][0].summary.get("goodput") or {}).get("slo") or {}
    target = ", ".join(
        f"{name} ≤ {_s(slo[key])}"
        for key, name in (("ttft_s", "TTFT"), ("tpot_s", "TPOT"), ("e2e_s", "end-to-end"))
        if slo.get(key)
    )
    saturated = saturation_rate(points=[(as_number(s.value) or 0.0, f) for s, f in measured])
    if saturated is None:
        return [
            Finding(
                id="saturation",
                ok=False,
                title="No saturation within the offered rates",
                detail=(
                    f"Goodput stayed at or above {SATURATION_GOODPUT:.0%} at every rate "
                    f"({series}; SLO {target}). The engine has headroom at "
                    f"{_n(as_number(measured[-1][0].value))} requests per minute; offer higher "
                    "rates."
                ),
            )
        ]
    index = next(i for i, (s, _) in enumerate(measured) if as_number(s.value) == saturated)
    if index == 0:
        first = measured[0][0]
        return [
            Finding(
                id="saturation",
                ok=False,
                title="Goodput was low even at the lowest rate",
                detail=(
                    f"Goodput was {measured[0][1]:.0%} at {_n(saturated)} requests per minute "
                    f"({series}). The SLO ({target}) is tighter than this engine without load: "
                    f"P50 TTFT {_s(stat(summary=first.summary, metric='ttft_s'))}, P50 TPOT "
                    f"{_s(stat(summary=first.summary, metric='tpot_s'))}. Loosen the SLO or "
                    "start at a lower rate."
                ),
            )
        ]
    before = measured[index - 1]
    return [
        Finding(
            id="saturation",
            ok=True,
            title=f"Saturation at about {_n(saturated)} requests per minute",
            detail=(
                f"Goodput fell below {SATURATION_GOODPUT:.0%} at {_n(saturated)}/min "
                f"({measured[index][1]:.0%}) after {before[1]:.0%} at "
                f"{_n(as_number(before[0].value))}/min ({series}; SLO {target}). Past this rate "
                "requests arrive faster than the engine finishes them, queues build and "
                "latency climbs."
            ),
        )
    ]


def _quantization(
    *, steps: list[StepView], overall: Mapping[str, Any], bound: Mapping[str, Any] | None
) -> list[Finding]:
    usable = _with(steps=steps, metric="tpot_s")
    if len(usable) < 2:
        return [_need_steps(lab="models", steps=steps)]
    rows = [(str(s.value), weight_bits(name=str(s.value)), decode_tokens_per_s(summary=s.summary), s) for s in usable]
    listing = "; ".join(
        f"{name} ({f'{bits} bits' if bits else 'precision unknown'}): {_t(speed)}, P50 TTFT "
        f"{_s(stat(summary=s.summary, metric='ttft_s'))}"
        for name, bits, speed, s in rows
    )
    known = sorted(
        [(name, bits, speed) for name, bits, speed, _ in rows if bits and speed],
        key=lambda row: -row[1],
    )
    unknown = [name for name, bits, _, _ in rows if not bits]
    if len({bits for _, bits, _ in known}) < 2:
        return [
            Finding(
                id="fewer-bits-faster",
                ok=False,
                title="Could not tell the models' precisions apart",
                detail=(
                    f"Decode per model: {listing}. The precision is read from the model name "
                    f"(q4, q8, int8, fp8, fp16, bf16, ...); it could not be read from "
                    f"{', '.join(unknown) or 'enough of them'}."
                ),
            )
        ]
    slower = [
        (a, b) for a, b in itertools.combinations(known, 2) if b[1] < a[1] and b[2] < a[2] * (1 - QUANT_TOLERANCE)
    ]
    if not slower:
        return [
            Finding(
                id="fewer-bits-faster",
                ok=True,
                title="Fewer bits decoded faster",
                detail=(
                    f"Decode per model: {listing}. Each decode step reads every weight, so "
                    "fewer bytes per weight means a shorter step. TTFT gains less: prefill is "
                    "compute-bound, and the arithmetic does not shrink with the weights: llama.cpp on a "
                    "CPU quantizes the activations to 8 bits and multiplies with integer dot products, "
                    "GPU weight-only kernels (Marlin, AWQ) unpack the weights to 16 bits first."
                ),
            )
        ]
    pairs = "; ".join(f"{b[0]} ({b[1]} bits) {_t(b[2])} vs {a[0]} ({a[1]} bits) {_t(a[2])}" for a, b in slower)
    return [
        Finding(
            id="fewer-bits-faster",
            ok=False,
            title="Fewer bits did not decode faster",
            detail=(
                f"{pairs} (all models: {listing}). Fewer bits means fewer bytes to read per "
                "step, but the kernels do extra work per weight (unpacking blocks and their "
                "scales; on a CPU, llama.cpp also quantizes the activations to 8 bits for integer "
                "dot products): on a tiny model the bytes saved are few and fixed per-step costs "
                "plus that arithmetic dominate, and on a CPU some low-bit kernels are compute-bound."
            ),
        )
    ]


def _engines_compared(
    *, steps: list[StepView], overall: Mapping[str, Any], bound: Mapping[str, Any] | None
) -> list[Finding]:
    """One engine's side of the comparison: its kernels at one stream, its batching, its queue.

    The lab compares two runs on the compare page; each run on its own is checked for the shape
    both engines share (aggregate throughput grows with streams) and states the two numbers the
    guide asks a learner to set against the other engine's: one-stream TTFT and TPOT, and how much
    of a request's time came before its first token at the most streams.
    """
    findings = _batching_almost_free(steps=steps, overall=overall, bound=bound)
    if any(f.id == "need-steps" for f in findings):
        return findings
    usable = list({as_number(s.value): s for s in reversed(_with(steps=steps, metric="tpot_s"))}.values())[::-1]
    low, high = usable[0], usable[-1]
    tpot_low = _p(low, "tpot_s")
    limit = (bound or {}).get("decode_tokens_per_s")
    against_bound = (
        f" A decode step that only read the weights once would take {_s(1 / float(limit))} "
        f"({(bound or {}).get('label') or 'the bandwidth bound'}), so this engine reached "
        f"{(1 / tpot_low) / float(limit):.0%} of that bound."
        if limit
        else ""
    )
    findings.insert(
        0,
        Finding(
            id="one-stream-kernels",
            ok=True,
            note=True,
            title=(
                f"At {_n(as_number(low.value))} stream{'s' if as_number(low.value) != 1 else ''}: "
                f"P50 TTFT {_s(_p(low, 'ttft_s'))}, P50 TPOT {_s(tpot_low)}"
            ),
            detail=(
                f"Set these against the other engine's run at the same level. TTFT here is the "
                f"prompt's prefill, compute-bound work; TPOT is one decode step, which reads every "
                f"weight once, so the engine that stores fewer bytes per weight has the edge.{against_bound}"
            ),
        ),
    )
    ttft_high, e2e_high = _p(high, "ttft_s"), stat(summary=high.summary, metric="e2e_s")
    if e2e_high:
        share = ttft_high / e2e_high
        findings.append(
            Finding(
                id="time-before-first-token",
                ok=True,
                note=True,
                title=(
                    f"At {_n(as_number(high.value))} streams, {share:.0%} of a request's time came before "
                    "its first token"
                ),
                detail=(
                    f"P50 TTFT {_s(ttft_high)} of a P50 end-to-end {_s(e2e_high)}. Before the first token "
                    "a request waits for the engine to admit it and then for its prefill: an engine "
                    "with fewer server slots than streams makes the extra requests wait for whole "
                    "answers to finish, one that admits every stream makes them wait only for the "
                    "batched prefill. The timeline shows which it was."
                ),
            )
        )
    return findings


LAB_CHECKS: dict[str, Callable[..., list[Finding]]] = {
    "ttft-vs-output-length": _ttft_vs_output_length,
    "prompt-length-ttft": _prompt_length_ttft,
    "decode-speed-of-light": _decode_speed_of_light,
    "batching-almost-free": _batching_almost_free,
    "continuous-batching": _continuous_batching,
    "prefix-caching": _prefix_caching,
    "open-loop-slo": _open_loop_slo,
    "quantization": _quantization,
    "engines-compared": _engines_compared,
}

# --- checks for any lab ---------------------------------------------------------------------


def _generic(*, param: str | None, steps: list[StepView], overall: Mapping[str, Any]) -> list[Finding]:
    findings: list[Finding] = []
    failed = _count(overall, "failed")
    if failed:
        kinds = overall.get("errors_by_kind") or {}
        named = ", ".join(f"{kind} ×{count}" for kind, count in sorted(kinds.items()))
        findings.append(
            Finding(
                id="errors",
                ok=False,
                title=f"{failed} request{'s' if failed != 1 else ''} failed",
                detail=(
                    f"{failed} of {_count(overall, 'total')} measured requests failed "
                    f"({named or 'kind not recorded'}). Failures are counted, never dropped; "
                    f"the percentiles cover the {_count(overall, 'succeeded')} that succeeded."
                ),
            )
        )
    short = []
    for step in steps:
        asked = as_number(step.value) if param == "max_tokens" else None
        produced = stat(summary=step.summary, metric="output_tokens")
        shortest = stat(summary=step.summary, metric="output_tokens", key="min")
        if asked and produced is not None and produced < OUTPUT_FORCED_FRACTION * asked:
            short.append(f"{step.key}: output tokens P50 = {_n(produced)} of {_n(asked)} asked")
        elif asked and shortest is not None and shortest < asked:
            # One short answer hides under a P50 that reached the cap; it still is not what was asked.
            short.append(f"{step.key}: the shortest output was {_n(shortest)} of {_n(asked)} asked")
    mismatched = (overall.get("warnings_by_kind") or {}).get("length_mismatch", 0)
    if short or mismatched:
        parts = list(short)
        if mismatched:
            parts.append(
                f"{mismatched} request{'s' if mismatched != 1 else ''} returned a different number of tokens than asked"
            )
        findings.append(
            Finding(
                id="output-short",
                ok=False,
                title="Output was shorter than asked",
                detail=(
                    f"{'; '.join(parts)}. The engine stopped at an end-of-sequence token or a "
                    "stop string instead of decoding the full length, so TPOT and throughput "
                    "cover fewer tokens than planned."
                ),
            )
        )
    samples = stat(summary=overall, metric="ttft_s", key="n")
    if samples is not None and samples < P99_MIN_SAMPLES:
        smallest = min(
            ((int(n), s.key) for s in steps if (n := stat(summary=s.summary, metric="ttft_s", key="n")) is not None),
            default=(int(samples), "run"),
        )
        findings.append(
            Finding(
                id="small-sample",
                ok=True,
                note=True,
                title=f"P99 not meaningful (n < {P99_MIN_SAMPLES})",
                detail=(
                    f"n = {int(samples)} successful requests in all (smallest step: "
                    f"{smallest[1]} with n = {smallest[0]}). With under {P99_MIN_SAMPLES} "
                    "samples, P99 is the worst one or few requests, not a tail you can plan "
                    "for; read P50 and P90, and treat P99 as the worst case seen."
                ),
            )
        )
    chunks = _chunk_counted(summary=overall)
    if chunks:
        findings.append(
            Finding(
                id="tokens-from-chunks",
                ok=False,
                title="Output tokens were counted from stream chunks",
                detail=(
                    f"{chunks} requests had no token usage from the engine, so their output "
                    "tokens are counted chunks. A chunk may carry more than one token, so TPOT "
                    "and tokens/s for them are estimates."
                ),
            )
        )
    return findings


# --- helpers --------------------------------------------------------------------------------


def _with(*, steps: Sequence[StepView], metric: str) -> list[StepView]:
    return [s for s in steps if stat(summary=s.summary, metric=metric)]


def _need_steps(*, lab: str, steps: Sequence[StepView]) -> Finding:
    measured = ", ".join(s.key for s in steps) or "none"
    return Finding(
        id="need-steps",
        ok=False,
        title=f"Need at least two {lab} with successful requests",
        detail=f"Steps with results: {measured}. Add another step and run again to compare.",
    )


def _p(step: StepView, metric: str, key: str = "p50") -> float:
    value = stat(summary=step.summary, metric=metric, key=key)
    if value is None:
        raise ValueError(f"step {step.key} has no {metric} {key}")
    return value


def _fixed_cost(intercept: float) -> str:
    """The fitted line's intercept as words: a negative one is not a negative cost, it means the
    longest prompts sit above the line (attention grows faster than linearly)."""
    if intercept > 0:
        return f"plus {_s(intercept)} fixed per request"
    return (
        f"with no fixed cost visible (the line crosses zero tokens at {_s(intercept)}: the longest "
        "prompts sit above it, as attention work grows faster than the prompt)"
    )


def _chunk_counted(*, summary: Mapping[str, Any]) -> int:
    return int((summary.get("output_tokens_source") or {}).get("chunks", 0))


def _count(summary: Mapping[str, Any], name: str) -> int:
    return int((summary.get("requests") or {}).get(name, 0))


def _s(value: float | None) -> str:
    return seconds_or_missing(value)


def _t(value: float | None) -> str:
    return rate_or_missing(value, unit="tokens/s")


def _r(value: float) -> str:
    return significant(value=value, digits=2, strip=True)


def _n(value: float | None) -> str:
    return number_or_missing(value)
