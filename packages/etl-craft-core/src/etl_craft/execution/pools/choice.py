"""Which pool runs a task: the POOL task parameter names a queue pool whose workers claim its
attempts; without it (or with `local`) the local pool runs it on this host."""

from __future__ import annotations

import re

from etl_craft.core.errors import ConfigurationError, TaskParameterError
from etl_craft.engine.database import EngineDb
from etl_craft.execution.graph import TaskNode
from etl_craft.execution.pools.interface import ExecutionHandle, Pool
from etl_craft.execution.pools.local import LocalPool
from etl_craft.execution.pools.queue import QueuePool

LOCAL = "local"
_POOL_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_.-]{0,63}")


def pool_name(node: TaskNode) -> str:
    raw = node.parameters.get("POOL")
    if raw is None or raw.strip() in ("", LOCAL):
        return LOCAL
    name = raw.strip()
    if not _POOL_NAME.fullmatch(name):
        raise TaskParameterError(
            f"task {node.code}: parameter POOL",
            found=repr(raw),
            expected="a pool name: a letter, then up to 63 letters, digits, _ . or -",
            remedy="correct POOL in a project migration (or remove it to run the task on the local pool)",
        )
    return name


class Pools:
    """The local pool and the queue pools the tasks of a supervisor's runs name."""

    def __init__(self, db: EngineDb, local: LocalPool) -> None:
        self.db, self.local = db, local
        self._queues: dict[str, QueuePool] = {}

    def named(self, name: str) -> Pool:
        if name == LOCAL:
            return self.local
        refusal = self.db.dialect.queue_refusal
        if refusal is not None:
            raise ConfigurationError(
                f"pool {name}",
                found=f"a {self.db.dialect.display_name} Engine DB: {refusal}",
                expected="a PostgreSQL Engine DB, which queue pools and their workers share",
                remedy="move the Engine DB to PostgreSQL, or remove the task's POOL parameter to run it locally",
            )
        if name not in self._queues:
            self._queues[name] = QueuePool(self.db, name)
        return self._queues[name]

    def for_task(self, node: TaskNode) -> Pool:
        return self.named(pool_name(node))

    def of(self, handle: ExecutionHandle) -> Pool:
        return self.named(handle.pool)
