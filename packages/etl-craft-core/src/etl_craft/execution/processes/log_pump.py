"""The task process's output on its way to the attempt's log file, with resolved secrets masked.

File descriptors 1 and 2 (where the task's logging, the script's prints, C libraries and child
processes write) point at a pipe; a thread copies the pipe to the log file through a StreamMask.
`sync()` copies what is still in the pipe from the calling thread, so once it returns everything this
process wrote so far is in the file: the task process calls it before it composes TASK_LOG and again
before `os._exit`. The thread is started without waiting for it to be scheduled, and `sync` never
waits for it either, which keeps the pump's cost on a task's start to the pipe and the thread's
creation (measured with `python -m benchmarks.task_chain`).
"""

from __future__ import annotations

import _thread
import os
import select
import threading
import time
from collections.abc import Callable, Iterable

from etl_craft.core.redaction import StreamMask

SYNC_SECONDS = 5.0  # the longest sync() copies a pipe that a child process keeps filling
_READ_SIZE = 1 << 16


class LogPump:
    def __init__(self, read_fd: int, log_fd: int, secrets: Callable[[], Iterable[str]]) -> None:
        self._read_fd, self._log_fd = read_fd, log_fd
        self._mask = StreamMask(secrets)
        self._lock = threading.Lock()  # one copier at a time, so the file keeps the pipe's order
        self._ended = False

    def start(self) -> None:
        _thread.start_new_thread(self._run, ())

    def _write(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            try:
                written = os.write(self._log_fd, view)
            except InterruptedError:
                continue
            except OSError:
                return  # the disk is full or the file is gone: output is dropped, the task goes on
            view = view[written:]

    def _copy_pending(self, deadline: float | None = None) -> None:
        """Copy what the pipe holds now (the caller holds the lock); notes the end of the stream."""
        while not self._ended and (deadline is None or time.monotonic() < deadline):
            try:
                data = os.read(self._read_fd, _READ_SIZE)
            except BlockingIOError:
                return
            except InterruptedError:
                continue
            except OSError:
                data = b""
            if not data:
                self._ended = True
                self._write(self._mask.flush())
                return
            self._write(self._mask.feed(data))

    def _run(self) -> None:
        while not self._ended:
            try:
                select.select([self._read_fd], [], [])
            except InterruptedError:
                continue
            except (OSError, ValueError):
                return
            with self._lock:
                try:
                    self._copy_pending()
                except Exception:  # keep draining: a stuck pipe would block the task's writes
                    continue

    def sync(self) -> None:
        """Copy everything written to the pipe so far, held-back bytes included."""
        with self._lock:
            self._copy_pending(time.monotonic() + SYNC_SECONDS)
            self._write(self._mask.flush())


def start_pump(log_path: str, secrets: Callable[[], Iterable[str]]) -> LogPump:
    """Point fds 1 and 2 at a pipe drained into `log_path` (appended) by a masking thread."""
    log_fd = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o640)
    read_fd, write_fd = os.pipe()
    os.set_blocking(read_fd, False)
    os.dup2(write_fd, 1)
    os.dup2(write_fd, 2)
    os.close(write_fd)
    pump = LogPump(read_fd, log_fd, secrets)
    pump.start()
    return pump
