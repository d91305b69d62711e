"""From a lab's plan and a learner's validated parameters to the measurement steps of a run.

A lab file's `[plan]` table says which parameter is swept and how the others map onto the
measurement library's RunSpec; each swept value becomes one step, measured in turn.
Parameter names with a meaning here: prompt_tokens, max_tokens, concurrency, repeats (requests
per step), shared_prefix_tokens, shared_prefix (0/1 steps), rate_rpm (open-loop arrivals per
minute), slo_ttft_ms, slo_tpot_ms, model, output_length ("forced" keeps the plan's ignore_eos,
"model stops" lets a real model end at its end-of-sequence token, the seed experiment's confound).
A plan's `prompt_cache = true` marks a lab that measures prefix caching: llama.cpp may then
reuse a cached prompt prefix, and cache hits are the effect, not a threat to the conclusion.
"""

from dataclasses import dataclass
from typing import Any

from workers.measure import SLO, RunSpec

# Targets cap what a learner may ask; these names are the params the caps apply to.
CAPPED_PARAMS = {
    "prompt_tokens": "max_prompt_tokens",
    "shared_prefix_tokens": "max_prompt_tokens",
    "max_tokens": "max_output_tokens",
    "concurrency": "max_concurrency",
}


# What a lab file's [plan] table may say, and the parameter names build_steps gives a meaning.
# A name outside these would be ignored by the run, so content sync refuses it instead.
PLAN_KEYS = {
    "sweep": str,
    "ignore_eos": bool,
    "requests_per_concurrency": int,
    "repeats": int,
    "warmup": int,
    "prefer_models": list,
    "fixed": dict,
    "arrival": str,
    "prompt_cache": bool,
    "needs_forced_output": bool,
    # Send chat turns to targets serving a real model (labs/execution.py): a real model ends an answer.
    "chat": bool,
}
PARAM_NAMES = {
    "prompt_tokens",
    "max_tokens",
    "concurrency",
    "repeats",
    "shared_prefix_tokens",
    "shared_prefix",
    "rate_rpm",
    "slo_ttft_ms",
    "slo_tpot_ms",
    "model",
    "models",
    "seed",
    "output_length",
}
ARRIVALS = {"poisson", "constant"}


def plan_problems(*, plan: dict, param_names: set[str]) -> list[tuple[str, str]]:
    """What is wrong with a lab's [plan] for its [[params]]: (key, message) pairs, empty if
    nothing. Checked when content is synced, so a typo fails there, not at a learner's submit."""
    problems: list[tuple[str, str]] = []
    for key, value in plan.items():
        kind = PLAN_KEYS.get(key)
        if kind is None:
            problems.append((key, f"[plan] key '{key}' is unknown; known keys: {', '.join(sorted(PLAN_KEYS))}"))
        elif not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
            problems.append((key, f"[plan] {key} must be {kind.__name__}, not {type(value).__name__}"))
    sweep = plan.get("sweep")
    if isinstance(sweep, str) and sweep != "model" and sweep not in param_names:
        problems.append(
            (
                "sweep",
                f"[plan] sweep = '{sweep}' is not one of this lab's parameters ({', '.join(sorted(param_names))})",
            )
        )
    for name in (plan.get("fixed") or {}) if isinstance(plan.get("fixed"), dict) else {}:
        if name not in PARAM_NAMES:
            problems.append(
                ("fixed", f"[plan.fixed] '{name}' means nothing to a run; known: {', '.join(sorted(PARAM_NAMES))}")
            )
    if isinstance(plan.get("arrival"), str) and plan["arrival"] not in ARRIVALS:
        problems.append(("arrival", f"[plan] arrival must be one of {', '.join(sorted(ARRIVALS))}"))
    for name in sorted(param_names - PARAM_NAMES):
        problems.append(
            ("params", f"parameter '{name}' means nothing to a run; known: {', '.join(sorted(PARAM_NAMES))}")
        )
    return problems


def needs_forced_output(*, plan: dict) -> bool:
    """Whether the lab's conclusion rests on every request decoding exactly max_tokens (a target
    that cannot force that, such as Ollama without ignore_eos, runs it uncontrolled)."""
    return bool(plan.get("needs_forced_output", False))


@dataclass(frozen=True)
class Step:
    key: str
    params: dict[str, Any]
    model: str
    spec: RunSpec


# The `output_length` choice that lets the model stop on its own end-of-sequence token.
UNFORCED = "model stops"


class PlanError(ValueError):
    """The parameters do not make a run this target accepts; the message says why."""


def _step_values(*, plan: dict, params: dict[str, Any], models: list[str]) -> tuple[str | None, list[Any]]:
    sweep = plan.get("sweep")
    if not sweep:
        return None, [None]
    if sweep == "model":
        preferred = [name for name in plan.get("prefer_models", []) if name in models]
        chosen = params.get("models") or preferred or models
        return "model", list(chosen)
    values = params.get(sweep)
    if not isinstance(values, list):
        values = [values]
    return sweep, values


def build_steps(
    *, plan: dict, params: dict[str, Any], models: list[str], limits: dict[str, int], seed: int = 0
) -> list[Step]:
    """One Step per swept value. `limits` are the target's caps (max_requests_per_run, ...).

    ``seed`` is the run's workload seed: drawn fresh for every run (see LabRun.workload_seed),
    so its prompts open with a nonce no other run's have and no engine cache carries one run's
    prefill into another's. Each step gets its own (seed + step index).
    """
    if not models:
        raise PlanError("this target serves no model; staff must add one before it can run labs")
    # A lab may prefer models the target serves (e.g. a model bigger than the CPU's cache for the
    # speed-of-light lab); targets without them fall back to their default model.
    preferred = [name for name in plan.get("prefer_models", []) if name in models]
    default_model = preferred[0] if preferred else models[0]
    sweep, values = _step_values(plan=plan, params=params, models=models)
    fixed = dict(plan.get("fixed", {}))
    repeats = int(params.get("repeats", plan.get("repeats", 5)))
    per_stream = int(plan.get("requests_per_concurrency", 0))
    steps: list[Step] = []
    for index, value in enumerate(values):
        merged: dict[str, Any] = {**fixed, **{k: v for k, v in params.items() if not isinstance(v, list)}}
        step_params: dict[str, Any] = {}
        if sweep is not None:
            merged[sweep] = value
            step_params[sweep] = value
        model = str(merged.pop("model", None) or default_model)
        concurrency = int(merged.get("concurrency", 1))
        requests = max(repeats, concurrency * per_stream) if per_stream else repeats
        shared_prefix = int(merged.get("shared_prefix_tokens", 0)) if int(merged.get("shared_prefix", 1)) else 0
        rate = float(merged["rate_rpm"]) / 60 if merged.get("rate_rpm") else None
        slo = None
        if merged.get("slo_ttft_ms") or merged.get("slo_tpot_ms"):
            slo = SLO(
                ttft_s=float(merged["slo_ttft_ms"]) / 1000 if merged.get("slo_ttft_ms") else None,
                tpot_s=float(merged["slo_tpot_ms"]) / 1000 if merged.get("slo_tpot_ms") else None,
            )
        try:
            spec = RunSpec(
                requests=requests,
                prompt_tokens=int(merged.get("prompt_tokens", 128)),
                max_tokens=int(merged.get("max_tokens", 128)),
                concurrency=concurrency
                if rate is None
                else int(merged.get("concurrency", limits.get("max_concurrency", 64))),
                rate=rate,
                arrival=str(plan.get("arrival", "poisson")),
                # A model sweep loads a different model at each step: each gets its own warm-up,
                # so no step's first request pays for loading weights.
                warmup=int(plan.get("warmup", 1)) if index == 0 or sweep == "model" else 0,
                ignore_eos=bool(plan.get("ignore_eos", True)) and merged.get("output_length") != UNFORCED,
                seed=seed + index,
                # Only a lab about caching lets llama.cpp reuse a cached prompt prefix.
                prompt_cache=bool(plan.get("prompt_cache", False)),
                shared_prefix_tokens=shared_prefix,
                slo=slo,
                max_duration_s=float(limits.get("max_run_seconds", 600)),
                max_errors=max(3, requests // 2),
            )
        except ValueError as error:
            raise PlanError(str(error)) from None
        key = f"{sweep}={value}" if sweep is not None else "run"
        steps.append(Step(key=key, params=step_params, model=model, spec=spec))
    total = sum(step.spec.requests + step.spec.warmup for step in steps)
    cap = limits.get("max_requests_per_run")
    if cap and total > cap:
        raise PlanError(
            f"this run would send {total} requests; the target allows {cap} per run. Use fewer repeats or steps."
        )
    return steps


def planned_requests(steps: list[Step]) -> int:
    """Measured requests the plan sends; warm-ups are counted apart (planned_warmups), as the
    results count them: a warm-up is sent but never measured."""
    return sum(step.spec.requests for step in steps)


def planned_warmups(steps: list[Step]) -> int:
    return sum(step.spec.warmup for step in steps)
