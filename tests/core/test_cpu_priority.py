"""The grading worker's lower priority must hold against gunicorn in another session: Linux's
autogroup scheduling shares the CPU between sessions before it looks at nice values."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from core.cpu_priority import AUTOGROUP, lower_cpu_priority

ROOT = Path(__file__).resolve().parents[2]
REPORT = (
    "import json, os, sys; from core.cpu_priority import lower_cpu_priority; "
    "lowered = lower_cpu_priority(niceness=int(sys.argv[1])); "
    "print(json.dumps({'lowered': lowered, 'nice': os.nice(0), "
    "'autogroup': open('/proc/self/autogroup').read().strip()}))"
)

needs_autogroup = pytest.mark.skipif(
    not AUTOGROUP.exists(), reason="this kernel has no autogroup scheduling (/proc/self/autogroup)"
)


def _child_report(*, niceness: int, own_session: bool) -> dict:
    done = subprocess.run(
        [sys.executable, "-c", REPORT, str(niceness)],
        cwd=ROOT, capture_output=True, text=True, check=True, start_new_session=own_session,
    )
    return json.loads(done.stdout)


@needs_autogroup
def test_a_worker_in_its_own_session_lowers_its_sessions_share_too():
    report = _child_report(niceness=5, own_session=True)
    assert report["lowered"] is True
    assert report["nice"] == os.nice(0) + 5
    assert report["autogroup"].endswith("nice 5")


@needs_autogroup
def test_a_worker_started_in_a_shared_session_leaves_the_session_alone():
    before = AUTOGROUP.read_text()
    report = _child_report(niceness=5, own_session=False)
    assert report["lowered"] is False
    assert report["nice"] == os.nice(0) + 5
    assert AUTOGROUP.read_text() == before


def test_without_autogroup_plain_nice_still_applies(tmp_path):
    done = subprocess.run(
        [sys.executable, "-c",
         "import os, sys; from pathlib import Path; from core.cpu_priority import lower_cpu_priority; "
         "print(lower_cpu_priority(niceness=3, autogroup=Path(sys.argv[1])), os.nice(0))",
         str(tmp_path / "missing")],
        cwd=ROOT, capture_output=True, text=True, check=True, start_new_session=True,
    )
    lowered, nice = done.stdout.split()
    assert lowered == "False"
    assert int(nice) == os.nice(0) + 3


def test_no_niceness_changes_nothing():
    assert lower_cpu_priority(niceness=0) is False
