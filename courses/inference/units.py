"""Human-readable numbers for bounds: bytes in decimal and binary units, rates, durations.

Sizes are shown in both GB and GiB because datasheets use the first and `nvidia-smi`, PyTorch
and most engines' logs use the second; a learner comparing the two should see both.
"""

from __future__ import annotations

import math

_DECIMAL = ((1e12, "TB"), (1e9, "GB"), (1e6, "MB"), (1e3, "kB"))
_BINARY = ((1024**4, "TiB"), (1024**3, "GiB"), (1024**2, "MiB"), (1024, "KiB"))


def significant(*, value: float, digits: int = 3, strip: bool = False) -> str:
    """`value` rounded to `digits` significant figures, thousands separated, no exponent.

    `strip` drops trailing zeros ("80.00" -> "80") where the precision carries no information.
    """
    if value == 0 or not math.isfinite(value):
        return f"{value:g}"
    magnitude = math.floor(math.log10(abs(value)))
    decimals = max(digits - 1 - magnitude, 0)
    text = f"{round(value, decimals):,.{decimals}f}"
    if strip and "." in text:
        text = text.rstrip("0").rstrip(".")
    return text


def _scaled(*, value: float, units: tuple[tuple[float, str], ...], digits: int) -> str:
    for size, name in units:
        if abs(value) >= size:
            return f"{significant(value=value / size, digits=digits, strip=True)} {name}"
    return f"{significant(value=value, digits=digits, strip=True)} bytes"


def format_bytes(*, value: float, digits: int = 4) -> str:
    """'16.06 GB (14.96 GiB)'; below a megabyte the exact count: '131,072 bytes (128 KiB)'."""
    if abs(value) < 1e6:
        binary = _scaled(value=value, units=_BINARY, digits=digits)
        exact = f"{round(value):,} bytes"
        return exact if binary.endswith("bytes") else f"{exact} ({binary})"
    decimal = _scaled(value=value, units=_DECIMAL, digits=digits)
    binary = _scaled(value=value, units=_BINARY, digits=digits)
    return f"{decimal} ({binary})"


def format_bytes_decimal(*, value: float, digits: int = 4) -> str:
    """Decimal units only ('16.06 GB'), for arithmetic lines that would be too long with both."""
    if abs(value) < 1e6:
        return f"{round(value):,} bytes"
    return _scaled(value=value, units=_DECIMAL, digits=digits)


def format_bandwidth(*, value: float) -> str:
    if value >= 1e12:
        return f"{significant(value=value / 1e12, digits=3, strip=True)} TB/s"
    return f"{significant(value=value / 1e9, digits=4, strip=True)} GB/s"


def format_flops(*, value: float, per_second: bool = True) -> str:
    suffix = "FLOP/s" if per_second else "FLOP"
    for size, prefix in ((1e18, "E"), (1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M")):
        if abs(value) >= size:
            return f"{significant(value=value / size, digits=4, strip=True)} {prefix}{suffix}"
    return f"{significant(value=value, digits=4, strip=True)} {suffix}"


def format_seconds(*, value: float) -> str:
    if value < 0:
        # A fitted line's intercept can fall below zero: -0.19 s reads "−195 ms", not "-194,547 µs".
        return f"−{format_seconds(value=-value)}"
    if value >= 1:
        return f"{significant(value=value, digits=3)} s"
    if value >= 1e-3:
        return f"{significant(value=value * 1e3, digits=3)} ms"
    return f"{significant(value=value * 1e6, digits=3)} µs"


def format_count(*, value: float) -> str:
    """'8.03 billion' for big counts, '1,024' below a million."""
    if abs(value) >= 1e9:
        return f"{significant(value=value / 1e9, digits=3)} billion"
    if abs(value) >= 1e6:
        return f"{significant(value=value / 1e6, digits=3)} million"
    return f"{round(value):,}"


def format_rate(*, value: float, unit: str = "tokens/s") -> str:
    return f"{significant(value=value, digits=3)} {unit}"


# --- Values that may be missing ---------------------------------------------------------------
# One mark everywhere (lab summaries, findings, chart labels, result tables) for a value that was
# not measured or does not apply: an en dash, as printed tables use it.
MISSING = "–"


def seconds_or_missing(value: float | None) -> str:
    return format_seconds(value=value) if value is not None else MISSING


def milliseconds_or_missing(seconds: float | str | None) -> str:
    """Seconds as a millisecond figure without unit, about 3 significant digits: '412', '41.2', '4.12'."""
    if seconds is None or seconds == "":
        return MISSING
    value = float(seconds) * 1000
    if value >= 100:
        return f"{value:,.0f}"
    if value >= 10:
        return f"{value:.1f}"
    return f"{value:.2f}"


def rate_or_missing(value: float | None, unit: str = "tokens/s") -> str:
    """A throughput; zero counts as missing (nothing was produced to measure a rate from)."""
    return f"{significant(value=value)} {unit}" if value else MISSING


def decimal_or_missing(value: float | str | None) -> str:
    return f"{float(value):,.1f}" if value is not None else MISSING


def percent_or_missing(value: float | None) -> str:
    """A fraction as a whole percentage: 0.42 -> '42%'."""
    return f"{value:.0%}" if value is not None else MISSING


def number_or_missing(value: float | None) -> str:
    if value is None:
        return MISSING
    return f"{value:,.0f}" if float(value).is_integer() else significant(value=value)
