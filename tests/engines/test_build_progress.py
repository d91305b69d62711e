"""How far llama-server's build has got, read from the files the build writes (its progress record
and its log), as `make run`'s status block and the Labs page show it."""

import json
import os
import time

from engines.llamacpp import LLAMA_CPP_PYTHON_VERSION
from engines.llamacpp.build import PROGRESS_FILE, build_progress


def _root(tmp_path, monkeypatch):
    monkeypatch.setenv("PREFILL_ENGINE_CACHE", str(tmp_path))
    root = tmp_path / LLAMA_CPP_PYTHON_VERSION
    root.mkdir()
    return root


def _record(root, *, phase="compiling", started_ago_s=150.0, pid=None):
    record = {"phase": phase, "started_at": time.time() - started_ago_s, "pid": pid or os.getpid(),
              "log": str(root / "build.log")}
    (root / PROGRESS_FILE).write_text(json.dumps(record))


def test_ninja_units_elapsed_and_the_last_builds_time(tmp_path, monkeypatch):
    root = _root(tmp_path, monkeypatch)
    (root / "build.json").write_text(json.dumps({"seconds": 1019.0}))
    (root / "build.log").write_text("$ cmake ...\n[1/206] Building C object a.o\n[103/206] Building CXX object b.o\n")
    _record(root)
    progress = build_progress()
    assert (progress.phase, progress.done, progress.total, progress.percent) == ("compiling", 103, 206, 50)
    assert progress.describe() == "compiling, 103/206 units (50%), 2 min 30 s elapsed of about 16 min 59 s"


def test_make_percent_when_built_with_unix_makefiles(tmp_path, monkeypatch):
    root = _root(tmp_path, monkeypatch)
    (root / "build.log").write_text("[  3%] Building C object a.o\n[ 45%] Building CXX object b.o\n")
    _record(root, started_ago_s=30)
    progress = build_progress()
    assert (progress.done, progress.percent) == (None, 45)
    assert progress.describe() == "compiling, 45%, 30 s elapsed of about 7 min 00 s"


def test_a_build_whose_process_is_gone_failed_and_a_finished_one_is_built(tmp_path, monkeypatch):
    root = _root(tmp_path, monkeypatch)
    (root / "build.log").write_text("[5/206] Building C object a.o\nerror: out of memory\n")
    _record(root, pid=2**22 + 12345)  # no such process
    failed = build_progress()
    assert failed.phase == "failed" and f"see {root / 'build.log'}" in failed.describe()
    (root / PROGRESS_FILE).unlink()
    assert build_progress().describe() == "llama-server not built"
    (root / "bin").mkdir()
    (root / "bin" / "llama-server").write_bytes(b"")
    assert build_progress().describe() == "llama-server built"
