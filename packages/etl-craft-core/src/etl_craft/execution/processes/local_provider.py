"""The local provider: each attempt in its own child process on this host.

Children are forked from a fork server that imported the engine, the Engine DB's driver and the
handlers the run needs once, loaded the parent's main script once, and read the project and
initialized its Engine DB engine once (warm_start.py), and holds no connection or thread, so a
task process starts without paying for any of it. The child then calls setsid, so its whole
process group can be stopped without touching the supervisor.
"""

from __future__ import annotations

import multiprocessing
import multiprocessing.connection
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from etl_craft.core.enums import Handler
from etl_craft.engine.dialects import EngineDialect
from etl_craft.execution.processes import warm_start
from etl_craft.execution.processes.identity import process_start, stop_group
from etl_craft.execution.processes.task_process import ChildSpec, child_main
from etl_craft.handlers import dispatch

# The fork server loads the parent's main script itself (warm_start.load_main_from_environment).
_BASE_PRELOAD = ("etl_craft.execution.processes.task_process",)


@dataclass
class RunningChild:
    spec: ChildSpec
    process: multiprocessing.process.BaseProcess
    pid: int
    start: str | None
    started_monotonic: float
    deadline: float | None = None  # monotonic time after which the attempt is timed out
    task_id: int = 0
    timeout_seconds: int = 0

    @property
    def sentinel(self) -> int:
        return self.process.sentinel

    def exit_status(self) -> int | None:
        """None while running; the exit code, or -signal when killed."""
        if self.process.is_alive():
            return None
        self.process.join(0)
        return self.process.exitcode

    def stop(self, grace_seconds: float) -> None:
        stop_group(self.pid, self.start, grace_seconds)
        self.process.join(grace_seconds + 5)


_preloaded: dict[str, None] = {}  # an ordered set
_PREPARING_MODULE = "etl_craft.execution.processes.fork_server_start"  # last: it needs the others imported


class LocalProvider:
    def __init__(self, config_path: Path, engine_dialect: EngineDialect, handlers: Iterable[Handler] = ()) -> None:
        self._context = multiprocessing.get_context("forkserver")
        # The fork server is one per process and takes its preload list when it starts (the first
        # child): keep the union, so an overseer that announced every handler first keeps them all.
        # Importing the Engine DB's driver was most of a PostgreSQL task process's start before it was
        # preloaded.
        for module in (*engine_dialect.driver_modules, *dispatch.modules(sorted(handlers))):
            _preloaded.setdefault(module)
        self._context.set_forkserver_preload([*_BASE_PRELOAD, *_preloaded, _PREPARING_MODULE])
        # A task process of another project than the one its fork server prepared reads its own.
        warm_start.name_for_fork_server(config_path)

    def start(self, spec: ChildSpec, task_id: int, now_monotonic: float, timeout_seconds: int | None) -> RunningChild:
        process = self._context.Process(target=child_main, args=(spec,), name=f"etl-craft-attempt-{spec.attempt_id}")
        process.start()
        assert process.pid is not None
        return RunningChild(
            spec=spec,
            process=process,
            pid=process.pid,
            start=process_start(process.pid),
            started_monotonic=now_monotonic,
            deadline=now_monotonic + timeout_seconds if timeout_seconds else None,
            task_id=task_id,
            timeout_seconds=timeout_seconds or 0,
        )

    @staticmethod
    def wait(children: Sequence[RunningChild], extra: Sequence[int], timeout: float) -> None:
        """Block until a child ends, an extra file descriptor is readable, or the timeout passes."""
        multiprocessing.connection.wait([c.sentinel for c in children] + list(extra), timeout=max(0.0, timeout))
