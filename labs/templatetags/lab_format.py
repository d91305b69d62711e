"""Template filters for lab results; the formatting itself is courses.inference.units (one mark for missing)."""

from django import template

from courses.inference.units import MISSING, decimal_or_missing, milliseconds_or_missing, significant

register = template.Library()


@register.filter
def ms(seconds) -> str:
    """Seconds to a readable millisecond figure: 3 significant digits, the missing mark when absent."""
    return milliseconds_or_missing(seconds)


@register.filter
def pct(summary: dict | None, key: str):
    """summary|pct:'p50' for a describe() dict that may be None."""
    if not summary:
        return None
    return summary.get(key)


@register.filter
def rate(value) -> str:
    return decimal_or_missing(value)


@register.filter
def cache_hits(cache: dict | None) -> str:
    """A summary's prefix_cache as 'share of prompt tokens served from cache', '–' when the engine
    reports nothing, so 'none' and 'unknown' never look alike."""
    if not cache or not cache.get("prompt_tokens"):
        return MISSING
    rate = float(cache["hit_rate"])
    if rate == 0:
        return "0%"
    return f"{rate:.0%}" if rate >= 0.01 else "<1%"


@register.filter
def sig(value) -> str:
    """A number to three significant figures, as the findings write them (1,234; 12.3; 0.0456)."""
    if value is None or value == "":
        return MISSING
    return significant(value=float(value), digits=3, strip=True)
