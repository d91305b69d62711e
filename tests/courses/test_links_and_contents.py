"""Links where a reader expects them, on the repository's real lessons: references and [n]
citation markers are links, reference URLs are links that break on a phone, the contents fold
below the title on a narrow screen, durations never wrap, and the home page's module cards link
to their module."""

import re

import pytest
from django.core.management import call_command

from courses.models import Module
from courses.rendering import render_lesson_body

LESSON = "/learn/lessons/kv-cache-memory/"


@pytest.fixture
def repository_content(db):
    call_command("sync_content", verbosity=0)


def test_citation_markers_link_to_their_numbered_reference():
    html = render_lesson_body(
        body="MQA shares one head [3]; GQA a group [3, 4]. Not a cite: x[3] or [5].\n\n"
        "## References\n\n1. A\n2. B\n3. Shazeer, 2019. https://arxiv.org/abs/1911.02150.\n4. Ainslie, 2023.\n"
    ).html
    assert '<span class="cite">[<a href="#ref-3" title="Reference 3">3</a>]</span>' in html
    assert '[<a href="#ref-3" title="Reference 3">3</a>, <a href="#ref-4" title="Reference 4">4</a>]' in html
    assert "x[3]" in html and "[5]" in html  # an index and a number with no reference stay text
    assert '<li id="ref-3">Shazeer, 2019. <a class="url" href="https://arxiv.org/abs/1911.02150"' in html
    assert 'https://arxiv.org/abs/1911.02150</a>.</li>' in html  # the full stop is not part of the link


def test_urls_in_code_are_left_alone():
    html = render_lesson_body(body="Run `curl https://example.org/v1/models` and see.\n").html
    assert '<code>curl https://example.org/v1/models</code>' in html


def test_a_real_lesson_links_its_references_and_citations(client, repository_content):
    html = client.get(LESSON).content.decode()
    references = re.search(r'<h2 id="references">.*?</ol>', html, re.S).group(0)
    items = re.findall(r'<li id="ref-(\d+)">(.*?)</li>', references, re.S)
    assert len(items) >= 5
    for number, item in items:
        if "https://" in item:
            assert '<a class="url" href="https://' in item, (number, item)
    for number in re.findall(r'<a href="#ref-(\d+)" title="Reference', html):
        assert f'id="ref-{number}"' in html


def test_the_contents_fold_below_the_title_and_durations_do_not_wrap(client, repository_content):
    html = client.get(LESSON).content.decode()
    title = html.index("<h1>")
    folded = html.index('data-testid="toc-inline"')
    assert title < folded < html.index('class="objectives"')
    assert '<span class="nowrap">25 min</span>' in html
    course = client.get("/learn/").content.decode()
    assert re.search(r'<span class="small muted nowrap">\d+ min</span>', course)


def test_home_module_cards_are_links_to_their_module(client, repository_content):
    html = client.get("/").content.decode()
    cards = re.findall(r'data-testid="module-card">\s*<h3><a href="([^"]+)">([^<]+)</a>', html)
    modules = list(Module.objects.live().order_by("order"))
    assert len(cards) == len(modules)
    for (href, title), module in zip(cards, modules, strict=True):
        assert href == f"/learn/#module-{module.slug}" and title == module.title
    course_page = client.get("/learn/").content.decode()
    assert all(f'id="module-{module.slug}"' in course_page for module in modules)
