"""Shared page parts: built once per content version and code version, kept in Redis for every
process and in this process's memory, rebuilt after a content change or a deploy."""

from core import shared
from core.versions import bump_content_version


def test_a_part_is_built_once_then_read_from_memory_or_redis_and_rebuilt_after_a_content_change(db):
    builds = []

    def build():
        builds.append(1)
        return {"title": f"build {len(builds)}"}

    assert shared.shared_part(name="page:x", build=build) == {"title": "build 1"}
    assert shared.shared_part(name="page:x", build=build) == {"title": "build 1"}  # this process's memory
    shared.forget_local_parts()  # as another process would: only Redis has it
    assert shared.shared_part(name="page:x", build=build) == {"title": "build 1"}
    assert len(builds) == 1
    bump_content_version()  # sync_content changed something
    assert shared.shared_part(name="page:x", build=build) == {"title": "build 2"}


def test_none_is_remembered_and_a_deploy_does_not_read_parts_of_the_code_before(db, monkeypatch):
    builds = []

    def build():
        builds.append(1)
        return None  # e.g. no such lesson

    assert shared.shared_part(name="page:gone", build=build) is None
    shared.forget_local_parts()
    assert shared.shared_part(name="page:gone", build=build) is None
    assert len(builds) == 1
    shared.forget_local_parts()
    monkeypatch.setattr(shared, "shared_code_version", lambda: "another-build")
    shared.shared_part(name="page:gone", build=build)
    assert len(builds) == 2
