"""Stopping a foreground overseer: SIGTERM, SIGHUP and Ctrl-C set a reason and wake it at once.

The handlers only record the reason and write to a pipe the overseer waits on, so a signal never
interrupts a transaction half-way; the overseer stops its task processes at its next step.
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import threading
from collections.abc import Iterator
from types import FrameType

STOP_SIGNALS = (signal.SIGTERM, signal.SIGHUP, signal.SIGINT)


class StopSignals:
    def __init__(self, process: str = "etl-craft run") -> None:
        self.process = process
        self.reason: str | None = None
        self.received = 0  # a second signal asks an overseer shutting down gracefully to stop at once
        self.wake_fd, self._wake_w = os.pipe()
        os.set_blocking(self.wake_fd, False)
        os.set_blocking(self._wake_w, False)

    def wake(self) -> None:
        with contextlib.suppress(BlockingIOError, OSError):
            os.write(self._wake_w, b"x")

    def _on_signal(self, signum: int, _frame: FrameType | None) -> None:
        self.reason = f"stopped: the parent {self.process} received {signal.Signals(signum).name}"
        self.received += 1
        self.wake()

    def stop(self, reason: str) -> None:
        """Stop the overseer from inside the process, as a signal would (the first reason stays)."""
        if self.reason is None:
            self.reason = reason
        self.wake()

    def drain(self) -> None:
        with contextlib.suppress(BlockingIOError, OSError):
            os.read(self.wake_fd, 4096)

    def sleep(self, seconds: float) -> bool:
        """Wait up to `seconds`; False when a stop was requested."""
        if self.reason is None and seconds > 0:
            select.select([self.wake_fd], [], [], seconds)
            self.drain()
        return self.reason is None

    @contextlib.contextmanager
    def installed(self) -> Iterator[StopSignals]:
        # Only the main thread may set signal handlers. Off it (an HTTP API request running a service
        # in a worker thread) the process's own handlers stay: the server stops itself, and a stop
        # reaches this supervisor through `stop`.
        on_main = threading.current_thread() is threading.main_thread()
        previous = {sig: signal.signal(sig, self._on_signal) for sig in STOP_SIGNALS} if on_main else {}
        try:
            yield self
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)
            os.close(self.wake_fd)
            os.close(self._wake_w)
