"""Before a worker claims anything: the Engine DB must host the queue (PostgreSQL) and be at exactly
the schema version this worker was built for; then it registers in AUD_WORKERS."""

from __future__ import annotations

import os
import socket

from etl_craft import __version__ as core_version
from etl_craft.core.actor import Actor, acting_as
from etl_craft.core.clock import utc_now
from etl_craft.core.enums import ActorKind
from etl_craft.core.errors import ConfigurationError, MigrationError
from etl_craft.engine import transitions
from etl_craft.engine.database import EngineDb
from etl_craft.engine.schema import migrations
from etl_craft.execution.pools.interface import SlotKind
from etl_craft.execution.processes.identity import OwnerId
from etl_craft_worker.agent import WorkerSettings


def refuse_unless_queue(db: EngineDb) -> None:
    refusal = db.dialect.queue_refusal
    if refusal is not None:
        raise ConfigurationError(
            "etl-craft worker",
            found=f"a {db.dialect.display_name} Engine DB ({db.display_url}): {refusal}",
            expected="a PostgreSQL Engine DB shared by the overseer and its workers",
            remedy="point the Engine profile of craft-connector.yml at PostgreSQL (etl-craft doctor checks it), "
            "or run tasks with the local pool (etl-craft server or etl-craft run) instead",
        )


def worker_version(db: EngineDb) -> str:
    """What AUD_WORKERS.VERSION records: the core release and the last ENGINE migration it ships."""
    return f"{core_version}+{migrations.packaged_migrations(db.dialect.name)[-1].version.removesuffix('.sql')}"


def refuse_other_schema(db: EngineDb) -> None:
    """A worker runs attempts only against the exact schema it was built for: missing, newer or
    changed ENGINE migrations stop it before it registers."""
    try:
        migrations.require_current(db)
    except MigrationError as error:
        raise MigrationError(
            f"etl-craft worker {worker_version(db)}",
            found=error.message,
            expected="an Engine DB whose applied ENGINE migrations are exactly the ones this worker ships",
            remedy="install on this host the etl-craft release the overseer runs (pip install etl-craft-worker=="
            "<its version>), or migrate the Engine DB with etl-craft migrate",
        ) from error


def register(db: EngineDb, owner: OwnerId, settings: WorkerSettings) -> tuple[Actor, int, str]:
    refuse_other_schema(db)
    actor = Actor(f"etl-craft worker@{socket.gethostname()}", ActorKind.WORKER)
    version = worker_version(db)
    with acting_as(actor), db.write() as conn:
        worker_id = transitions.register_worker(
            conn,
            owner_id=str(owner),
            pool=settings.pool,
            host=socket.gethostname(),
            pid=os.getpid(),
            version=version,
            ingestion_slots=settings.slots[SlotKind.INGESTION],
            warehouse_slots=settings.slots[SlotKind.WAREHOUSE],
            now=utc_now(),
        )
    return actor, worker_id, version
