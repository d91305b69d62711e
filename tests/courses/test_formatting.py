"""One formatter for numbers, durations and missing values: the same mark for "missing" everywhere."""

from django.template import Context, Template

from courses.inference.units import (
    MISSING,
    format_seconds,
    milliseconds_or_missing,
    number_or_missing,
    percent_or_missing,
    rate_or_missing,
    seconds_or_missing,
)
from labs import charts, checks


def test_missing_values_read_as_an_en_dash_in_every_formatter():
    assert MISSING == "–"
    assert seconds_or_missing(None) == MISSING
    assert milliseconds_or_missing(None) == MISSING
    assert rate_or_missing(None) == MISSING
    assert rate_or_missing(0.0) == MISSING  # nothing produced, no rate
    assert percent_or_missing(None) == MISSING
    assert number_or_missing(None) == MISSING


def test_lab_findings_charts_and_result_tables_share_the_mark():
    assert checks._s(None) == checks._t(None) == checks._n(None) == MISSING
    assert charts._seconds_text(None) == charts._rate_text(None) == charts._percent(None) == MISSING
    html = Template("{% load lab_format %}{{ none|ms }} {{ none|rate }}").render(Context({"none": None}))
    assert html == f"{MISSING} {MISSING}"


def test_present_values_keep_their_units_and_precision():
    assert seconds_or_missing(0.0412) == "41.2 ms"
    assert seconds_or_missing(2.5) == "2.50 s"
    assert milliseconds_or_missing(0.4123) == "412"
    assert milliseconds_or_missing(0.0412) == "41.2"
    assert milliseconds_or_missing(0.00412) == "4.12"
    assert rate_or_missing(1234.5, unit="tok/s") == "1,234 tok/s"
    assert percent_or_missing(0.42) == "42%"
    assert number_or_missing(1024.0) == "1,024"
    assert number_or_missing(3.14159) == "3.14"


def test_a_negative_duration_reads_in_the_unit_of_its_size():
    # A prompt-length fit whose line crosses zero tokens below zero: the finding quotes the intercept.
    assert format_seconds(value=-0.1947) == "−195 ms"
    assert format_seconds(value=-2.5) == "−2.50 s"
    assert format_seconds(value=0.1947) == "195 ms"
