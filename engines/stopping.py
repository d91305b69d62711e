"""Stop signals that can never deadlock: the handler records the signal and wakes a self-pipe.

A Python signal handler runs between two bytecodes of the main thread, wherever that thread is,
possibly inside a lock. A handler that takes a lock (``threading.Event.set()`` does) deadlocks
when the interrupted code holds the same lock: a second SIGTERM that arrives while the first
handler runs ``Event.set()`` leaves the process hung in ``Condition.__enter__`` forever. And a
handler that raises on every signal can abort the very cleanup that the first one started, which
leaves children running. So the handler here only assigns an attribute (and, in the phase where
the caller asked for it, raises once); the main thread notices through ``wait()``, which sleeps
in ``select`` on a pipe that the C-level handler writes to (``signal.set_wakeup_fd``), so a stop
is seen at once rather than at the next poll.

Standard library only: ``scripts.services`` and the engines both use it.
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import subprocess
import time
from collections.abc import Iterable
from types import FrameType

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


class StopSignals:
    """Turn SIGINT/SIGTERM (or the given signals) into a flag the main loop can wait on.

    ``raise_first=True`` makes the first signal raise ``KeyboardInterrupt`` too, for a phase of
    blocking work (a build, a startup) that must unwind through its ``finally`` blocks; call
    ``stop_raising()`` before cleanup, so a second signal cannot cut the cleanup short.
    Later signals are only counted.
    """

    def __init__(self, signals: Iterable[int] = STOP_SIGNALS, *, raise_first: bool = False):
        self.signals = tuple(signals)
        self.received: int | None = None
        self.count = 0
        self._raise_first = raise_first
        self._read_fd, self._write_fd = os.pipe()
        os.set_blocking(self._read_fd, False)
        os.set_blocking(self._write_fd, False)
        self._previous_handlers: dict[int, object] = {}
        self._previous_wakeup_fd: int | None = None

    @property
    def requested(self) -> bool:
        return self.received is not None

    def _handle(self, signum: int, _frame: FrameType | None) -> None:
        # Attribute assignments only: no lock, no I/O (the wakeup byte is written in C).
        self.count += 1
        if self.received is None:
            self.received = signum
            if self._raise_first:
                self._raise_first = False
                raise KeyboardInterrupt

    def install(self) -> StopSignals:
        """Install the handlers (main thread only, as Python requires)."""
        for signum in self.signals:
            self._previous_handlers[signum] = signal.signal(signum, self._handle)
        self._previous_wakeup_fd = signal.set_wakeup_fd(self._write_fd, warn_on_full_buffer=False)
        return self

    def stop_raising(self) -> None:
        self._raise_first = False

    def wait(self, timeout: float) -> bool:
        """Sleep up to ``timeout`` seconds or until a stop signal arrives; True once one has."""
        if self.requested:
            return True
        with contextlib.suppress(InterruptedError):
            select.select([self._read_fd], [], [], timeout)
        with contextlib.suppress(BlockingIOError, OSError):
            while os.read(self._read_fd, 512):
                pass
        return self.requested

    def restore(self) -> None:
        """Put back the previous handlers and wakeup fd; close the pipe."""
        for signum, previous in self._previous_handlers.items():
            signal.signal(signum, previous)  # type: ignore[arg-type]
        self._previous_handlers.clear()
        if self._previous_wakeup_fd is not None:
            signal.set_wakeup_fd(self._previous_wakeup_fd)
            self._previous_wakeup_fd = None
        for fd in (self._read_fd, self._write_fd):
            with contextlib.suppress(OSError):
                os.close(fd)

    def __enter__(self) -> StopSignals:
        return self.install()

    def __exit__(self, *exc: object) -> None:
        self.restore()


def stop_process_group(process: subprocess.Popen, *, timeout: float) -> None:
    """Stop a server started in a process group of its own, and everything it spawned there
    (llama.cpp's model servers, vLLM's engine core): SIGTERM, then SIGKILL for what outlives
    ``timeout``, so nothing is left behind even when the leader exited first."""
    group = process.pid
    with contextlib.suppress(ProcessLookupError):
        os.killpg(group, signal.SIGTERM)
    try:
        process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(group, signal.SIGKILL)
        process.wait(timeout=timeout)
    deadline = time.monotonic() + timeout
    while _group_alive(group) and time.monotonic() < deadline:
        time.sleep(0.05)
    if _group_alive(group):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(group, signal.SIGKILL)


def _group_alive(group: int) -> bool:
    try:
        os.killpg(group, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
