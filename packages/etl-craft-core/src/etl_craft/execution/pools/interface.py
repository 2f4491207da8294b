"""The pool interface (S5.A): what the overseer and `run` may ask of wherever attempts run.

Rules every provider keeps: `submit` twice with the same attempt id returns the same handle and starts
nothing new; `status` of a handle the provider does not know is UNKNOWN, never an exception;
`reconcile` reports what the provider can confirm and says UNKNOWN for what it can't.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Protocol

from etl_craft.core.enums import Handler
from etl_craft.execution.processes.task_process import ChildSpec


class SlotKind(StrEnum):
    INGESTION = "ingestion"  # PYTHON tasks: they hold a host's CPU and memory
    WAREHOUSE = "warehouse"  # everything else: they wait on a warehouse


def slot_kind(handler: Handler | str) -> SlotKind:
    return SlotKind.INGESTION if Handler(handler) is Handler.PYTHON else SlotKind.WAREHOUSE


@dataclass(frozen=True)
class AttemptSpec:
    """A claimed attempt to run. `child` is what its task process starts from (its subject and
    parameters as the supervisor decided them)."""

    attempt_id: int
    task_run_id: int
    pipeline_run_id: int
    task_id: int
    pipeline_code: str
    task_code: str
    handler: str
    timeout_seconds: int
    lease_seconds: int
    child: ChildSpec

    @property
    def slot_kind(self) -> SlotKind:
        return slot_kind(self.handler)


@dataclass(frozen=True)
class Capacity:
    slots: dict[SlotKind, int]
    free: dict[SlotKind, int]

    def has_room(self, kind: SlotKind) -> bool:
        return self.free.get(kind, 0) > 0


@dataclass(frozen=True)
class ExecutionHandle:
    pool: str
    attempt_id: int
    slot_kind: SlotKind
    pid: int | None = None  # the task process, where the provider runs it on this host


class HandleState(StrEnum):
    RUNNING = "RUNNING"  # the provider holds a live process for it
    EXITED = "EXITED"  # its process ended (exit_code says how)
    UNKNOWN = "UNKNOWN"  # the provider cannot confirm anything about it


@dataclass(frozen=True)
class HandleStatus:
    handle: ExecutionHandle
    state: HandleState
    exit_code: int | None = None  # when EXITED: the exit status, or -signal when killed
    detail: str = ""


class Pool(Protocol):
    name: str
    # True: the caller claims each attempt for its own owner id before submitting it (the local
    # pool's processes are the caller's). False: the pool's workers claim what the caller queued.
    owner_claims: bool

    def capacity(self) -> Capacity: ...

    def submit(self, spec: AttemptSpec) -> ExecutionHandle: ...

    def status(self, handle: ExecutionHandle) -> HandleStatus: ...

    def cancel(self, handle: ExecutionHandle, grace_seconds: float) -> None: ...

    def reconcile(self) -> list[HandleStatus]: ...

    def wait(self, extra: Sequence[int], timeout: float) -> None: ...
