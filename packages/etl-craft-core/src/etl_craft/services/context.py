"""What every operation runs with: the loaded configuration, the Engine DB and the acting identity."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from etl_craft.config.loader import find_config, load_config
from etl_craft.config.model import ConnectorConfig
from etl_craft.core.actor import Actor, current_actor
from etl_craft.engine.database import EngineDb, open_engine_db
from etl_craft.engine.schema import migrations


@dataclass
class OperationContext:
    config: ConnectorConfig
    db: EngineDb
    actor: Actor

    def close(self) -> None:
        self.db.dispose()


def load_configuration(explicit: str | None, environ: Mapping[str, str] | None = None) -> ConnectorConfig:
    env = os.environ if environ is None else environ
    return load_config(find_config(explicit, env, Path.cwd()), env)


def open_context(
    explicit_config: str | None, *, require_schema: bool = True, ping: bool = True, create: bool = False
) -> OperationContext:
    """Load the config, connect to the Engine DB and, unless told otherwise, check its schema is current.
    `ping` and `create` are open_engine_db's: only init-db, setup and demo create an Engine DB."""
    config = load_configuration(explicit_config)
    db = open_engine_db(config, ping=ping, create=create)
    try:
        if require_schema:
            migrations.require_current(db)
    except BaseException:
        db.dispose()
        raise
    return OperationContext(config=config, db=db, actor=current_actor())
