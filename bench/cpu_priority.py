"""CPU priority: how much CPU a busy niced background worker leaves to a busy web tier.

    python bench/cpu_priority.py [--seconds 10] [--niceness 5]

Three CPU-bound processes on this machine's cores, each as `make run` starts its services, in a
session of its own: two stand in for gunicorn's two workers (one session, as gunicorn's workers
share their master's), one for the grading worker, which lowers its priority once started. Run
twice: the grader lowering only its nice value (what the grading worker did until session 13),
then the grader calling core.cpu_priority.lower_cpu_priority (nice value and, as the leader of
its own session, its session's autogroup). Prints each process's share of a core over the
window. With autogroup scheduling on (/proc/sys/kernel/sched_autogroup_enabled), plain nice
changes nothing between sessions: the scheduler shares the cores between sessions first.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SPIN = "import time\nend = time.monotonic() + {seconds}\nwhile time.monotonic() < end:\n    pass\n"
WEB = (
    "import os, sys\n"
    "child = os.fork()\n"  # two workers in one session, like gunicorn's
    + SPIN
    + "if child:\n    os.waitpid(child, 0)\n"
)
GRADER = {
    "nice only": "import os\nos.nice({niceness})\n" + SPIN,
    "nice and autogroup": (
        "import sys\nsys.path.insert(0, {root!r})\nfrom core.cpu_priority import lower_cpu_priority\n"
        "assert lower_cpu_priority(niceness={niceness})\n" + SPIN
    ),
}


def trial(*, grader: str, seconds: float, niceness: int) -> dict[str, float]:
    values = {"seconds": seconds, "niceness": niceness, "root": str(ROOT)}
    web = subprocess.Popen([sys.executable, "-c", WEB.format(**values)], start_new_session=True)
    worker = subprocess.Popen([sys.executable, "-c", GRADER[grader].format(**values)], start_new_session=True)
    # The web session's CPU includes its forked second worker (reaped, so counted with it).
    shares = {"web (2 processes)": cpu_seconds_of_exited(web), "grader": cpu_seconds_of_exited(worker)}
    return {name: used / seconds for name, used in shares.items()}


def cpu_seconds_of_exited(process: subprocess.Popen) -> float:
    _, status, usage = os.wait4(process.pid, 0)
    process.returncode = os.waitstatus_to_exitcode(status)
    return usage.ru_utime + usage.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=10.0, help="length of each trial (default 10)")
    parser.add_argument("--niceness", type=int, default=5, help="the grader's nice increment (default 5)")
    args = parser.parse_args()
    autogroup = Path("/proc/sys/kernel/sched_autogroup_enabled")
    enabled = autogroup.read_text().strip() if autogroup.exists() else "absent"
    print(f"{os.cpu_count()} CPUs; autogroup scheduling: {enabled}; load average before {os.getloadavg()[0]:.2f}")
    for grader in GRADER:
        shares = trial(grader=grader, seconds=args.seconds, niceness=args.niceness)
        line = ", ".join(f"{name} {share:.2f} cores" for name, share in shares.items())
        print(f"grader at nice +{args.niceness}, {grader}: {line}")
        time.sleep(1)


if __name__ == "__main__":
    main()
