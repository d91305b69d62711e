"""Quantities in learners' answers: "16 GiB", "16GB", "1.6e10 bytes", "~120 tokens/s", "$2.50".

Every unit belongs to a dimension and has a factor to that dimension's base unit (bytes,
seconds, tokens per second, ...). Some spellings are ambiguous ("FLOPs" is used both for a
count and for a rate; "8B" is a model size more often than eight bytes), so a spelling can
name several units and the question's own unit picks between them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class Unit:
    name: str
    dimension: str
    factor: float
    # Byte units: which family, so that GB written for GiB can be recognised.
    family: str | None = None


def _units() -> dict[str, Unit]:
    table: dict[str, Unit] = {}

    def add(name: str, dimension: str, factor: float, family: str | None = None) -> None:
        table[name.lower()] = Unit(name=name, dimension=dimension, factor=factor, family=family)

    add("B", "bytes", 1)
    for index, prefix in enumerate("KMGTP", start=1):
        add(f"{prefix}B", "bytes", 1000.0**index, "decimal")
        add(f"{prefix}iB", "bytes", 1024.0**index, "binary")
        add(f"{prefix}B/s", "bytes/s", 1000.0**index)
        add(f"{prefix}iB/s", "bytes/s", 1024.0**index)
    add("B/s", "bytes/s", 1)
    add("s", "seconds", 1)
    add("ms", "seconds", 1e-3)
    add("us", "seconds", 1e-6)
    add("ns", "seconds", 1e-9)
    add("min", "seconds", 60)
    add("h", "seconds", 3600)
    add("tokens/s", "tokens/s", 1)
    add("requests/s", "requests/s", 1)
    add("tokens", "tokens", 1)
    add("requests", "count", 1)
    add("FLOP", "flop", 1)
    for index, prefix in enumerate("KMGTPE", start=1):
        add(f"{prefix}FLOP", "flop", 1000.0**index)
        add(f"{prefix}FLOP/s", "flop/s", 1000.0**index)
    add("FLOP/s", "flop/s", 1)
    add("FLOP/byte", "flop/byte", 1)
    add("USD", "usd", 1)
    add("%", "percent", 1)
    add("x", "ratio", 1)
    add("count", "count", 1)
    add("GPUs", "count", 1)
    add("users", "count", 1)
    add("sequences", "count", 1)
    return table


UNITS = _units()


def known_unit(name: str) -> bool:
    return name.lower() in UNITS


def unit(name: str) -> Unit:
    return UNITS[name.lower()]


def _aliases() -> list[tuple[str, tuple[str, ...]]]:
    """(regex, unit names it may mean), longest spellings first so "GB/s" beats "GB"."""
    entries: list[tuple[str, tuple[str, ...]]] = []
    words = {"K": "kilo", "M": "mega", "G": "giga", "T": "tera", "P": "peta"}
    binary = {"K": "kibi", "M": "mebi", "G": "gibi", "T": "tebi", "P": "pebi"}
    per_second = r"\s*(?:/\s*s(?:ec(?:ond)?)?|per\s+s(?:ec(?:ond)?)?|ps)"
    for prefix in "KMGTP":
        entries += [
            (rf"{prefix}iB{per_second}", (f"{prefix}iB/s",)),
            (rf"{prefix}B{per_second}", (f"{prefix}B/s",)),
            (rf"{prefix}iB|{binary[prefix]}bytes?", (f"{prefix}iB",)),
            (rf"{prefix}B|{words[prefix]}bytes?", (f"{prefix}B",)),
            (rf"{prefix}(?:flop)s?(?:\s*/\s*s|\s+per\s+second)", (f"{prefix}FLOP/s",)),
            (rf"{prefix}flops", (f"{prefix}FLOP/s", f"{prefix}FLOP")),
            (rf"{prefix}flop", (f"{prefix}FLOP",)),
        ]
    entries += [
        (r"flops?\s*(?:/|per)\s*byte", ("FLOP/byte",)),
        (r"flop\s*/\s*s|flops\s*/\s*s|flops?\s+per\s+second", ("FLOP/s",)),
        (r"flops", ("FLOP", "FLOP/s")),
        (r"flop", ("FLOP",)),
        (r"bytes?\s*(?:/\s*s|per\s+second)", ("B/s",)),
        (r"bytes?", ("B",)),
        (
            r"(?:output\s+)?(?:tokens?|toks?|t)\s*"
            r"(?:/\s*s(?:ec(?:ond)?)?|per\s+s(?:ec(?:ond)?)?|a\s+second)",
            ("tokens/s",),
        ),
        (r"tps", ("tokens/s",)),
        (r"(?:requests?|reqs?)\s*(?:/\s*s(?:ec(?:ond)?)?|per\s+second)|rps|qps", ("requests/s",)),
        (r"(?:milliseconds?|msecs?|ms)", ("ms",)),
        (r"(?:microseconds?|µs|us)", ("us",)),
        (r"(?:nanoseconds?|ns)", ("ns",)),
        (r"(?:seconds?|secs?|s)", ("s",)),
        (r"(?:minutes?|mins?)", ("min",)),
        (r"(?:hours?|hrs?|h)", ("h",)),
        (r"(?:usd|dollars?)", ("USD",)),
        (r"tokens?|toks?", ("tokens",)),
        (r"gpus?", ("GPUs",)),
        (r"users?", ("users",)),
        (r"(?:sequences?|seqs?)", ("sequences",)),
        (r"requests?", ("requests",)),
        (r"%|percent", ("%",)),
        (r"x|\u00d7|times", ("x",)),
        (r"b", ("B",)),
    ]
    return entries


_ALIASES = [
    (re.compile(rf"(?:{pattern})(?![A-Za-z])", re.IGNORECASE), names)
    for pattern, names in _aliases()
]

_NUMBER = re.compile(
    r"(?P<approx>(?:~|≈|about|around|roughly|approximately|approx\.?|circa|almost|nearly)\s*)?"
    r"(?P<dollar>\$\s*)?"
    r"(?<![\w.])(?P<number>[-+]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?:e[-+]?\d+)?|[-+]?\.\d+)"
    r"(?:\s*(?P<mult>thousand|million|billion|trillion|bn|k|m|b|t)(?![A-Za-z]))?",
    re.IGNORECASE,
)
_MULTIPLIERS = {
    "thousand": 1e3, "k": 1e3, "million": 1e6, "m": 1e6, "billion": 1e9, "bn": 1e9, "b": 1e9,
    "trillion": 1e12, "t": 1e12,
}
_MODEL_SIZE = re.compile(r"\s*(?:-\s*)?(?:param|parameter|model|weights|llama|mistral|qwen)", re.I)


@dataclass(frozen=True)
class Quantity:
    value: float  # in `unit`, as written
    unit: Unit | None
    start: int
    end: int
    text: str


def find_quantities(text: str, *, dimension: str | None = None) -> list[Quantity]:
    """Every number in `text` with the unit written after it (or a leading `$`).

    `dimension` resolves spellings that name several units (FLOPs) and decides whether a
    bare `B`/`M` after a number is a unit or a multiplier.
    """
    found: list[Quantity] = []
    for match in _NUMBER.finditer(text):
        value = float(match.group("number").replace(",", ""))
        end = match.end()
        multiplier = (match.group("mult") or "").lower()
        rest = text[end:]
        if multiplier:
            # "16 M" is ambiguous; "16 MB" has its unit split off by the multiplier group.
            joined = text[match.start("mult") :]
            unit_here = _unit_at(joined, dimension)
            if unit_here is not None and len(unit_here[1]) > len(multiplier):
                end = match.start("mult")
                multiplier = ""
                rest = text[end:]
            elif (
                multiplier == "b"
                and dimension == "bytes"
                and match.start("mult") > match.end("number")
                and not _MODEL_SIZE.match(rest)
            ):
                # "16 B" is sixteen bytes; "8B" (attached) is how model sizes are written.
                end = match.start("mult")
                multiplier = ""
                rest = text[end:]
            else:
                value *= _MULTIPLIERS[multiplier]
        resolved: Unit | None = None
        if match.group("dollar"):
            resolved = UNITS["usd"]
        else:
            unit_here = _unit_at(rest, dimension)
            if unit_here is not None:
                resolved, spelled = unit_here
                end += len(rest) - len(rest.lstrip()) + len(spelled)
        found.append(
            Quantity(
                value=value, unit=resolved, start=match.start("number"), end=end,
                text=text[match.start() : end].strip(),
            ),
        )
    return found


def _unit_at(rest: str, dimension: str | None) -> tuple[Unit, str] | None:
    stripped = rest.lstrip()
    if len(rest) - len(stripped) > 1:
        return None
    for pattern, names in _ALIASES:
        match = pattern.match(stripped)
        if not match:
            continue
        candidates = [UNITS[name.lower()] for name in names]
        chosen = next((u for u in candidates if u.dimension == dimension), candidates[0])
        return chosen, match.group()
    return None


def convert(*, value: float, from_unit: Unit, to_unit: Unit) -> float:
    if from_unit.dimension != to_unit.dimension:
        raise ValueError(f"cannot convert {from_unit.name} to {to_unit.name}")
    return value * from_unit.factor / to_unit.factor


def swapped_family(u: Unit) -> Unit | None:
    """The byte unit of the other family with the same prefix: GB <-> GiB."""
    if u.family == "decimal":
        return UNITS.get(u.name.lower().replace("b", "ib", 1))
    if u.family == "binary":
        return UNITS.get(u.name.lower().replace("ib", "b", 1))
    return None
