"""Running a background process below the web's CPU priority, in a way Linux actually honours.

`nice` alone is not enough. With autogroup scheduling (on by default in Debian's and Ubuntu's
kernels: /proc/sys/kernel/sched_autogroup_enabled), the scheduler first shares the CPU evenly
between sessions and only then, inside a session, by nice value. `make run` and the compose
services start every worker in a session of its own (so a stop can signal its whole process
group), so a worker that only calls os.nice() still competes with gunicorn one session against
one: on two busy cores the grading worker takes as much CPU as the whole web tier. A session's
share is set by its autogroup's nice value, which the process writes to /proc/self/autogroup.
"""

from __future__ import annotations

import os
from pathlib import Path

AUTOGROUP = Path("/proc/self/autogroup")


def lower_cpu_priority(*, niceness: int, autogroup: Path = AUTOGROUP) -> bool:
    """Raise this process's nice value by `niceness` (its future children inherit it) and, when it
    leads its own session, its session's autogroup nice value to the same level. Returns whether
    the session's share was lowered too.

    The autogroup is only touched by a session leader: a worker started by hand from a terminal
    shares its session with the shell and anything else started there (perhaps gunicorn), which
    must not be slowed with it. Kernels without autogroup (or a read-only /proc in a container)
    leave plain nice, which is then all the scheduler looks at anyway.
    """
    if niceness <= 0:
        return False
    os.nice(niceness)
    if os.getsid(0) != os.getpid():
        return False
    try:
        current = int(autogroup.read_text().split("nice")[-1])
        autogroup.write_text(str(min(19, max(current, niceness))))
    except (OSError, ValueError):
        return False
    return True
