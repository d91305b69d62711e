"""Prompts of a requested token length, one per request, built before the clock starts.

Length: with a tokenize endpoint (vLLM, llama.cpp) every prompt is counted by the target's own
tokenizer and trimmed or padded a word at a time until it has exactly the asked number of
tokens. Without one, a few untimed one-token requests calibrate tokens per word from the
server's reported ``prompt_tokens``; each measured request then reports its actual prompt
tokens from the server's usage. Chat templates add tokens the content does not show; that
overhead is learned from one calibration request and subtracted.

Caching: a prefix cache (vLLM's, llama.cpp's slot cache) reuses work only for a prompt whose
first tokens match one it has seen, so every prompt opens with the run's nonce, drawn from the
seed: no two runs (and no two learners) share a cacheable block, however alike their workloads.
The warm-up and the calibration requests open with nonces of their own, so they never warm
what the measured requests then hit. Within a run, every request continues with text no other
request has; a shared prefix, when a lab asks for one, follows the nonce and is what the run's
requests (and only they) can share.

Everything is seeded: the same seed gives the same prompts. Callers draw a fresh seed per run
(and record it) unless they mean to repeat a workload exactly.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Awaitable, Callable
from typing import Any

import httpx

from workers.measure.client import RequestPlan
from workers.measure.spec import RunSpec, TargetSpec

CountFn = Callable[[str], Awaitable[int | None]]

# Nonce scopes: each opens its prompts differently, so none warms a cache another then hits.
MEASURED = "measured"
WARMUP = "warmup"
CALIBRATION = "calibration"

# Plain words so prompts look like text to any tokenizer (no rare byte sequences).
_WORDS = (
    "time",
    "year",
    "people",
    "way",
    "day",
    "man",
    "thing",
    "woman",
    "life",
    "child",
    "world",
    "school",
    "state",
    "family",
    "student",
    "group",
    "country",
    "problem",
    "hand",
    "part",
    "place",
    "case",
    "week",
    "company",
    "system",
    "program",
    "question",
    "work",
    "government",
    "number",
    "night",
    "point",
    "home",
    "water",
    "room",
    "mother",
    "area",
    "money",
    "story",
    "fact",
    "month",
    "lot",
    "right",
    "study",
    "book",
    "eye",
    "job",
    "word",
    "business",
    "issue",
    "side",
    "kind",
    "head",
    "house",
    "service",
    "friend",
    "father",
    "power",
    "hour",
    "game",
    "line",
    "end",
    "member",
    "law",
    "car",
    "city",
    "community",
    "name",
    "president",
    "team",
    "minute",
    "idea",
    "kid",
    "body",
    "information",
    "back",
    "parent",
    "face",
    "others",
    "level",
    "office",
    "door",
    "health",
    "person",
    "art",
    "war",
    "history",
    "party",
    "result",
    "change",
    "morning",
    "reason",
    "research",
    "girl",
    "guy",
    "moment",
    "air",
    "teacher",
    "force",
    "education",
    "garden",
    "river",
    "market",
    "window",
    "music",
    "paper",
    "engine",
    "signal",
    "memory",
    "battery",
    "forest",
    "bridge",
    "letter",
    "picture",
    "science",
    "energy",
    "planet",
    "winter",
    "summer",
    "island",
    "village",
    "kitchen",
    "library",
    "journey",
    "machine",
    "network",
    "pattern",
    "weather",
    "morning",
    "quickly",
    "slowly",
    "bright",
    "quiet",
    "simple",
    "careful",
    "early",
    "late",
    "small",
    "large",
    "green",
    "blue",
    "warm",
    "cold",
    "open",
    "close",
    "strong",
    "gentle",
    "clear",
    "make",
    "take",
    "give",
    "find",
    "tell",
    "ask",
    "seem",
    "feel",
    "try",
    "leave",
    "call",
    "keep",
    "begin",
    "help",
    "show",
    "hear",
    "play",
    "run",
    "move",
    "live",
    "believe",
    "bring",
    "write",
    "sit",
    "stand",
    "lose",
    "pay",
    "meet",
    "include",
    "continue",
    "learn",
    "and",
    "the",
    "of",
    "to",
    "in",
    "for",
    "with",
    "on",
    "at",
    "by",
    "from",
    "about",
)
_FILL = ("a", "the", "of", "and", "to", "in")
DEFAULT_TOKENS_PER_WORD = 1.3
MAX_ROUNDS = 8


async def count_with_tokenize(http: httpx.AsyncClient, *, target: TargetSpec, text: str) -> int | None:
    """Token count from the target's /tokenize, in whichever dialect it speaks."""
    dialect = target.capabilities.tokenize
    if dialect is None:
        return None
    # Counted as the engine will count the prompt, BOS included: vLLM adds special tokens by
    # default, llama.cpp's /tokenize only when asked.
    body: dict[str, Any] = (
        {"content": text, "add_special": True} if dialect == "llamacpp" else {"model": target.model, "prompt": text}
    )
    response = await http.post(target.url("/tokenize"), json=body)
    if response.status_code != 200:
        return None
    data = response.json()
    if isinstance(data.get("count"), int):
        return int(data["count"])
    tokens = data.get("tokens")
    return len(tokens) if isinstance(tokens, list) else None


async def prompt_tokens_from_server(http: httpx.AsyncClient, *, target: TargetSpec, text: str) -> int | None:
    """Prompt tokens as the server counts them, from one untimed one-token generation."""
    api = target.api
    if api.is_ollama:
        body: dict[str, Any] = {
            "model": target.model,
            "stream": False,
            "options": {"num_predict": 1},
        }
    else:
        body = {"model": target.model, "stream": False, "max_tokens": 1}
    if api.is_chat:
        body["messages"] = [{"role": "user", "content": text}]
    else:
        body["prompt"] = text
    response = await http.post(target.url(api.path), json=body)
    if response.status_code != 200:
        return None
    data = response.json()
    usage = data if api.is_ollama else (data.get("usage") or {})
    value = usage.get("prompt_eval_count" if api.is_ollama else "prompt_tokens")
    return int(value) if isinstance(value, int) else None


class PromptFactory:
    """Builds prompts of an exact (tokenize) or calibrated token length."""

    def __init__(self, *, seed: int, count: CountFn | None, server_count: CountFn | None) -> None:
        self._seed = seed
        self._count = count
        self._server_count = server_count
        self.tokens_per_word = DEFAULT_TOKENS_PER_WORD
        self.template_overhead = 0
        self.calibration_requests = 0
        self.method = "estimate"
        self._prefix_cache: dict[tuple[int, str], str] = {}

    def _words(self, key: str, n: int) -> list[str]:
        rng = random.Random(f"{self._seed}:{key}")
        return rng.choices(_WORDS, k=n)

    def nonce(self, scope: str = MEASURED) -> str:
        """The opening every prompt of ``scope`` shares and no other run's prompts have.

        Scopes: MEASURED (the requests whose timings count), WARMUP, CALIBRATION. A nonce is
        a few tokens, less than one vLLM block (16 tokens), and each request's own text
        follows it at once, so requests of one run share no full block either.
        """
        rng = random.Random(f"{self._seed}:nonce:{scope}")
        return f"Run {rng.randrange(16**8):08x}."

    def opening(self, index: int) -> str:
        """What makes request ``index`` differ from the others of its run, right after the nonce."""
        rng = random.Random(f"{self._seed}:open:{index}")
        return f"Note {index}-{rng.randrange(10**4):04d}:"

    async def calibrate(self, *, chat: bool) -> None:
        """Learn tokens per word (and a chat template's overhead) before building prompts.

        Requests the engine generates for open with the calibration nonce, so they leave
        nothing in a prefix cache that a measured request could reuse.
        """
        words = " ".join(self._words("calibration", 200))
        served_sample = f"{self.nonce(CALIBRATION)} {words}"
        if self._count is not None:
            counted = await self._count(words)
            if counted:
                self.method = "tokenize"
                self.tokens_per_word = counted / 200
                if chat and self._server_count is not None:
                    served = await self._server_count(served_sample)
                    self.calibration_requests += 1
                    counted_served = await self._count(served_sample)
                    if served is not None and counted_served is not None:
                        self.template_overhead = max(0, served - counted_served)
                return
        if self._server_count is not None:
            short = f"{self.nonce(CALIBRATION)} {' '.join(self._words('calibration-short', 20))}"
            long_count = await self._server_count(served_sample)
            short_count = await self._server_count(short)
            self.calibration_requests += 2
            if long_count is not None and short_count is not None and long_count > short_count:
                # Two points give both the slope (tokens per word) and the fixed overhead
                # (BOS, chat template), which one point would mix together; the nonce's words
                # are content, not overhead.
                self.method = "calibrated"
                self.tokens_per_word = (long_count - short_count) / 180
                self.template_overhead = max(0, round(short_count - len(short.split()) * self.tokens_per_word))

    async def build(
        self, *, index: int, tokens: int, shared_prefix_tokens: int = 0, warmup: bool = False
    ) -> tuple[str, int]:
        """A prompt of ``tokens`` tokens for request ``index``, and its length: counted by the
        target's tokenizer, or estimated (see ``method``). It opens with the run's nonce (the
        warm-up's own for a warm-up request), then the shared prefix if asked, then text of
        this request alone."""
        content_tokens = max(1, tokens - self.template_overhead)
        nonce = self.nonce(WARMUP if warmup else MEASURED)
        if shared_prefix_tokens:
            prefix = await self._shared_prefix(min(shared_prefix_tokens, content_tokens - 1), nonce=nonce)
        else:
            prefix = nonce
        head = prefix + " " + self.opening(index)
        filler = self._words(f"body:{index}", int(content_tokens / self.tokens_per_word) + 64)
        return await self._fit(head, filler, content_tokens)

    async def _shared_prefix(self, tokens: int, *, nonce: str) -> str:
        """``tokens`` tokens, the nonce included, that every request of the scope begins with."""
        key = (tokens, nonce)
        if key not in self._prefix_cache:
            words = self._words("shared-prefix", int(tokens / self.tokens_per_word) + 64)
            text, _ = await self._fit(f"{nonce} Shared context:", words, tokens)
            self._prefix_cache[key] = text
        return self._prefix_cache[key]

    async def _fit(self, head: str, filler: list[str], target: int) -> tuple[str, int]:
        """``head`` plus as many filler words as make ``target`` tokens, and the count.

        With tokenize the count is exact (the target's own tokenizer); otherwise it is the
        calibrated estimate.
        """
        tpw = self.tokens_per_word
        n = max(0, round((target - len(head.split()) * tpw) / tpw))
        if self._count is None or self.method != "tokenize":
            text = _join(head, filler, n)
            return text, round(len(text.split()) * tpw)

        def grow(count: int) -> None:
            while count > len(filler):
                filler.extend(self._words(f"more:{len(filler)}", 64))

        grow(n)
        counted = await self._count(_join(head, filler, n))
        for _ in range(MAX_ROUNDS):
            if counted is None:
                break
            step = round((target - counted) / tpw)
            if step == 0:
                break
            n = max(0, n + step)
            grow(n)
            counted = await self._count(_join(head, filler, n))
        # Land exactly: drop words while over (each is one to three tokens), then add short
        # words that are one token each while under.
        while counted is not None and counted > target and n > 0:
            n -= 1
            counted = await self._count(_join(head, filler, n))
        text = _join(head, filler, n)
        if counted is None:
            return text, round(len(text.split()) * tpw)
        for word in _FILL * 8:
            if counted >= target:
                break
            got = await self._count(text + " " + word)
            if got is None or got > target:
                break
            text, counted = text + " " + word, got
        return text, counted


def _join(head: str, filler: list[str], n: int) -> str:
    return head + (" " + " ".join(filler[:n]) if n else "")


async def build_plans(
    *,
    spec: RunSpec,
    target: TargetSpec,
    factory: PromptFactory,
    parallel: int = 8,
) -> list[RequestPlan]:
    """Warm-up plans first (flagged), then the measured ones, in the order they will run."""
    points: list[dict[str, int]] = [{spec.sweep.param: v} for v in spec.sweep.values] if spec.sweep else [{}]
    source = factory.method
    jobs: list[tuple[int, bool, dict[str, int]]] = []
    for i in range(spec.warmup):
        jobs.append((i, True, points[0]))
    index = spec.warmup
    for point in points:
        for _ in range(spec.requests):
            jobs.append((index, False, point))
            index += 1
    limiter = asyncio.Semaphore(parallel)

    async def make(job: tuple[int, bool, dict[str, int]]) -> RequestPlan:
        i, warmup, point = job
        prompt_tokens = point.get("prompt_tokens", spec.prompt_tokens)
        async with limiter:
            prompt, counted = await factory.build(
                index=i, tokens=prompt_tokens, shared_prefix_tokens=spec.shared_prefix_tokens, warmup=warmup
            )
        counted += factory.template_overhead
        return RequestPlan(
            index=i,
            prompt=prompt,
            max_tokens=point.get("max_tokens", spec.max_tokens),
            prompt_tokens_target=prompt_tokens,
            prompt_tokens_counted=counted,
            prompt_tokens_source=source,
            warmup=warmup,
            params=dict(point),
        )

    return list(await asyncio.gather(*(make(job) for job in jobs)))


def make_factory(*, http: httpx.AsyncClient, target: TargetSpec, seed: int) -> PromptFactory:
    async def count(text: str) -> int | None:
        try:
            return await count_with_tokenize(http, target=target, text=text)
        except (httpx.HTTPError, ValueError):
            return None

    async def server_count(text: str) -> int | None:
        try:
            return await prompt_tokens_from_server(http, target=target, text=text)
        except (httpx.HTTPError, ValueError):
            return None

    return PromptFactory(
        seed=seed,
        count=count if target.capabilities.tokenize else None,
        server_count=server_count,
    )
