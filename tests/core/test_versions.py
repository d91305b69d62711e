"""Derived caches are keyed by the code that renders them, and the per-process cache is thread-safe."""

import threading
from pathlib import Path

from django.conf import settings

from core.lru import BoundedLRU
from core.versions import RENDERING_SOURCES, rendering_version, source_fingerprint


def test_the_version_changes_when_rendering_code_changes_and_only_then(tmp_path):
    (tmp_path / "courses" / "figures").mkdir(parents=True)
    (tmp_path / "courses" / "rendering.py").write_text("RENDER = 1\n")
    (tmp_path / "courses" / "figures" / "roofline.py").write_text("DRAW = 1\n")
    sources = ("courses/rendering.py", "courses/figures")
    before = source_fingerprint(root=tmp_path, sources=sources)
    assert source_fingerprint(root=tmp_path, sources=sources) == before
    (tmp_path / "courses" / "figures" / "roofline.py").write_text("DRAW = 2\n")
    after_figure = source_fingerprint(root=tmp_path, sources=sources)
    assert after_figure != before
    (tmp_path / "courses" / "figures" / "new_figure.py").write_text("")
    assert source_fingerprint(root=tmp_path, sources=sources) != after_figure
    assert source_fingerprint(root=tmp_path, sources=sources, extra=["matplotlib==9"]) != source_fingerprint(
        root=tmp_path, sources=sources, extra=["matplotlib==10"]
    )


def test_every_rendering_source_exists():
    """A renamed file must not silently drop out of the version."""
    for source in RENDERING_SOURCES:
        assert (Path(settings.BASE_DIR) / source).exists(), source
    assert len(rendering_version()) == 16


def test_the_local_render_cache_stays_bounded_and_consistent_under_threads():
    cache = BoundedLRU(max_items=8)
    errors: list[BaseException] = []

    def hammer(offset: int) -> None:
        try:
            for i in range(3000):
                key = f"lesson-{(i + offset) % 40}"
                if cache.get(key) is None:
                    cache.put(key, {"html": key})
        except BaseException as error:  # what the old dict raised (KeyError) would land here
            errors.append(error)

    threads = [threading.Thread(target=hammer, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert len(cache) == 8


def test_the_least_recently_used_lesson_is_evicted_first():
    cache = BoundedLRU(max_items=2)
    cache.put("a", {"html": "a"})
    cache.put("b", {"html": "b"})
    assert cache.get("a") == {"html": "a"}  # a is now the most recent
    cache.put("c", {"html": "c"})
    assert cache.get("b") is None
    assert cache.get("a") == {"html": "a"} and cache.get("c") == {"html": "c"}
