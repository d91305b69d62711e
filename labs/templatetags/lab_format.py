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
def sig(value) -> str:
    """A number to three significant figures, as the findings write them (1,234; 12.3; 0.0456)."""
    from courses.inference.units import significant

    if value is None or value == "":
        return "–"
    return significant(value=float(value), digits=3, strip=True)
