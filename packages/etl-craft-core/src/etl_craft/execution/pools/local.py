"""The local provider (S5.B): each attempt in its own child process on this host.

Children are forked from a fork server that imported the engine, the Engine DB's driver and the
handlers the run needs once, loaded the parent's main script once, and read the project and
initialized its Engine DB engine once (warm_start.py), and holds no connection or thread, so a
task process starts without paying for any of it. The child then calls setsid, so its whole
process group can be stopped without touching the supervisor.

Slots are counted by kind (ingestion for PYTHON, warehouse for the rest) over the processes alive.
`cancel` never blocks: it sends SIGTERM to the group at once and SIGKILL when the grace has passed,
enforced whenever the pool is asked anything (a supervisor asks at least every second).
"""

from __future__ import annotations

import contextlib
import multiprocessing
import multiprocessing.connection
import os
import signal
import time
from collections import OrderedDict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from etl_craft.config.model import ConnectorConfig
from etl_craft.core.enums import Handler
from etl_craft.engine.dialects import EngineDialect
from etl_craft.execution.pools.interface import (
    AttemptSpec,
    Capacity,
    ExecutionHandle,
    HandleState,
    HandleStatus,
    SlotKind,
)
from etl_craft.execution.processes import warm_start
from etl_craft.execution.processes.identity import group_alive, is_alive, process_start, signal_group
from etl_craft.execution.processes.task_process import child_main
from etl_craft.handlers import dispatch

# The fork server loads the parent's main script itself (warm_start.load_main_from_environment).
_BASE_PRELOAD = ("etl_craft.execution.processes.task_process",)
_PREPARING_MODULE = "etl_craft.execution.processes.fork_server_start"  # last: it needs the others imported
_preloaded: dict[str, None] = {}  # an ordered set
# Exit statuses kept after a process ended, so a late `status` still answers EXITED (bounded memory).
_ENDED_KEPT = 4096


@dataclass
class _Process:
    handle: ExecutionHandle
    process: multiprocessing.process.BaseProcess
    start: str | None


@dataclass
class _Kill:
    pid: int
    start: str | None
    at: float  # monotonic


class LocalPool:
    name = "local"
    owner_claims = True

    def __init__(
        self,
        config_path: Path,
        engine_dialect: EngineDialect,
        slots: Mapping[SlotKind, int],
        handlers: Iterable[Handler] = (),
    ) -> None:
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
        self._slots = dict(slots)
        self._live: dict[int, _Process] = {}
        self._ended: OrderedDict[int, int] = OrderedDict()
        self._kills: list[_Kill] = []

    # --- the interface ---------------------------------------------------------------------------

    def capacity(self) -> Capacity:
        self._enforce_kills()
        used = dict.fromkeys(self._slots, 0)
        for entry in self._live.values():
            if entry.process.is_alive():
                used[entry.handle.slot_kind] = used.get(entry.handle.slot_kind, 0) + 1
        return Capacity(dict(self._slots), {k: max(0, n - used.get(k, 0)) for k, n in self._slots.items()})

    def submit(self, spec: AttemptSpec) -> ExecutionHandle:
        known = self._live.get(spec.attempt_id)
        if known is not None:
            return known.handle
        process = self._context.Process(
            target=child_main, args=(spec.child,), name=f"etl-craft-attempt-{spec.attempt_id}"
        )
        process.start()
        assert process.pid is not None
        handle = ExecutionHandle(self.name, spec.attempt_id, spec.slot_kind, process.pid)
        self._live[spec.attempt_id] = _Process(handle, process, process_start(process.pid))
        return handle

    def status(self, handle: ExecutionHandle) -> HandleStatus:
        self._enforce_kills()
        entry = self._live.get(handle.attempt_id)
        if entry is not None and entry.handle == handle:
            if entry.process.is_alive():
                return HandleStatus(handle, HandleState.RUNNING)
            entry.process.join(0)
            del self._live[handle.attempt_id]
            self._ended[handle.attempt_id] = entry.process.exitcode if entry.process.exitcode is not None else -9
            while len(self._ended) > _ENDED_KEPT:
                self._ended.popitem(last=False)
        if handle.attempt_id in self._ended:
            return HandleStatus(handle, HandleState.EXITED, self._ended[handle.attempt_id])
        return HandleStatus(handle, HandleState.UNKNOWN, detail="this pool started no process for it")

    def cancel(self, handle: ExecutionHandle, grace_seconds: float) -> None:
        entry = self._live.get(handle.attempt_id)
        if entry is None or not signal_group(entry.handle.pid or 0, entry.start, signal.SIGTERM):
            return
        self._kills.append(_Kill(entry.handle.pid or 0, entry.start, time.monotonic() + max(0.0, grace_seconds)))
        if grace_seconds <= 0:
            self._enforce_kills()

    def reconcile(self) -> list[HandleStatus]:
        """Every process this pool started and still knows: a local pool confirms each one."""
        live = [self.status(entry.handle) for entry in list(self._live.values())]
        return live + [
            HandleStatus(ExecutionHandle(self.name, a, SlotKind.WAREHOUSE), HandleState.EXITED, code)
            for a, code in self._ended.items()
        ]

    def wait(self, extra: Sequence[int], timeout: float) -> None:
        """Block until a task process ends, an extra file descriptor is readable, a stop's grace is
        over, or the timeout passes."""
        self._enforce_kills()
        if self._kills:
            timeout = min(timeout, min(k.at for k in self._kills) - time.monotonic())
        sentinels = [e.process.sentinel for e in self._live.values() if e.process.exitcode is None]
        multiprocessing.connection.wait(sentinels + list(extra), timeout=max(0.0, timeout))

    # --- stops -----------------------------------------------------------------------------------

    def _enforce_kills(self) -> None:
        """SIGKILL the groups whose grace has passed; forget those already gone."""
        if not self._kills:
            return
        now = time.monotonic()
        left = []
        for kill in self._kills:
            if not is_alive(kill.pid, kill.start) and not group_alive(kill.pid):
                continue
            if now < kill.at:
                left.append(kill)
                continue
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(kill.pid, signal.SIGKILL)
        self._kills = left


def local_pool(config: ConnectorConfig, engine_dialect: EngineDialect, handlers: Iterable[Handler]) -> LocalPool:
    """The local pool of a project: Orchestration.Local_ingestion_slots and Local_warehouse_slots
    (each defaults to Max_parallel_tasks)."""
    orchestration = config.orchestration
    slots = {
        SlotKind.INGESTION: orchestration.local_ingestion_slots,
        SlotKind.WAREHOUSE: orchestration.local_warehouse_slots,
    }
    return LocalPool(config.path, engine_dialect, slots, handlers)
