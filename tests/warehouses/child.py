"""Run a SQL task in a separate process, as the task process would (used by concurrency tests)."""

from __future__ import annotations

import logging
import os
from datetime import date
from pathlib import Path
from typing import Any

from etl_craft.config.loader import load_config
from etl_craft.core.enums import Handler, TriggerKind
from etl_craft.engine.database import open_engine_db
from etl_craft.handlers.context import TaskContext


def run_sql_task(config_path: str, fields: dict[str, Any], results: Any) -> None:
    from tests.fixtures import emulation

    emulation.install()
    config = load_config(Path(config_path), dict(os.environ))
    db = open_engine_db(config, pooled=False)
    from etl_craft.handlers import sql

    context = TaskContext(
        config=config,
        engine_db=db,
        log=logging.getLogger("etl_craft.task.child"),
        trigger_kind=TriggerKind.MANUAL,
        handler=Handler.SQL,
        run_date=date.fromisoformat(fields.pop("run_date")),
        **fields,
    )
    try:
        result = sql.run(context)
        results.put(("ok", result.counts.inserted))
    except Exception as exc:  # reported to the parent, which fails the test with it
        results.put(("error", f"{type(exc).__name__}: {exc}"))
    finally:
        db.dispose()
