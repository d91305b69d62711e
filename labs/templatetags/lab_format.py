from django import template

register = template.Library()


@register.filter
def ms(seconds) -> str:
    """Seconds to a readable millisecond figure: 3 significant digits, '–' when missing."""
    if seconds is None or seconds == "":
        return "–"
    value = float(seconds) * 1000
    if value >= 100:
        return f"{value:,.0f}"
    if value >= 10:
        return f"{value:.1f}"
    return f"{value:.2f}"


@register.filter
def pct(summary: dict | None, key: str):
    """summary|pct:'p50' for a describe() dict that may be None."""
    if not summary:
        return None
    return summary.get(key)


@register.filter
def rate(value) -> str:
    if value is None:
        return "–"
    return f"{float(value):,.1f}"


@register.filter
def cache_hits(cache: dict | None) -> str:
    """A summary's prefix_cache as 'share of prompt tokens served from cache', '–' when the engine
    reports nothing, so 'none' and 'unknown' never look alike."""
    if not cache or not cache.get("prompt_tokens"):
        return "–"
    rate = float(cache["hit_rate"])
    if rate == 0:
        return "0%"
    return f"{rate:.0%}" if rate >= 0.01 else "<1%"
