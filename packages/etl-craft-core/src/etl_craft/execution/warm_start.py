"""What the local provider's fork server prepares once for every task process it forks.

Left to itself, each task process reads and checks craft-connector.yml, creates an SQLAlchemy engine,
lets the dialect ask the server about itself on the first connection (four round trips on
PostgreSQL) and compiles each of its statements: together about half of a no-op task process's CPU,
the same work every time. The fork server does it once instead: its last preload, `fork_server_start`,
calls `prepare_from_environment`, which reads the project file that CONFIG_VARIABLE names, opens its
Engine DB, rehearses the task process's statements in a transaction that changes nothing (the
compiled forms stay in the engine's cache) and closes that connection again, so no socket is shared
across a fork.

A task process takes the prepared config and engine only when its ChildSpec names the same file and
that file and its .env file (Secrets.Path) still hold what they held when the fork server read them;
otherwise it reads them itself, as it would started cold. The environment variable is the only
channel there is: multiprocessing passes a fork server nothing but module names to import, and it
inherits the environment it starts with.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from etl_craft.config.loader import load_config
from etl_craft.config.model import ConnectorConfig
from etl_craft.engine.database import EngineDb, open_engine_db
from etl_craft.engine.retry import first_line

CONFIG_VARIABLE = "ETL_CRAFT_FORK_SERVER_CONFIG"


@dataclass(frozen=True)
class Prepared:
    sources: dict[Path, bytes | None]  # what the files the config was read from held, before that read
    config: ConnectorConfig
    db: EngineDb


_prepared: dict[str, Prepared] = {}  # by the path named in CONFIG_VARIABLE: one in a fork server


def _contents(paths: Iterable[Path]) -> dict[Path, bytes | None]:
    found: dict[Path, bytes | None] = {}
    for path in paths:
        try:
            found[path] = path.read_bytes()
        except OSError:
            found[path] = None
    return found


def prepare(path: str) -> None:
    """Read the project at `path` and initialize its Engine DB engine, leaving no connection open."""
    # The files are read before the config that is kept: a change made meanwhile shows as a
    # difference later (and the task process reads the project itself), never as stale values kept.
    first = load_config(Path(path))  # names the .env file, when secrets come from one
    env_file = first.secrets.env_file if first.secrets is not None else None
    files = [Path(path)] + ([env_file] if env_file is not None else [])
    sources = _contents(files)
    config = load_config(Path(path))
    db = open_engine_db(config, check=False, ping=False)  # as task_process.run_attempt opens it
    try:
        from etl_craft.execution.task_process import rehearse  # it imports this module

        rehearse(db)
    finally:
        db.engine.dispose()
    _prepared[path] = Prepared(sources, config, db)


def prepare_from_environment() -> None:
    path = os.environ.get(CONFIG_VARIABLE)
    if not path:
        return
    try:
        prepare(path)
    except Exception as error:  # each task process then does it itself, and reports what fails
        print(
            f"etl-craft fork server: could not prepare {path} for the task processes"
            f" ({type(error).__name__}: {first_line(error)}); each task process will read it itself",
            file=sys.stderr,
        )


def prepared_for(path: str) -> tuple[ConnectorConfig, EngineDb] | None:
    """The prepared config and Engine DB when the files they were read from still hold what they
    held then (craft-connector.yml and its .env file: a few small reads), else None."""
    prepared = _prepared.get(path)
    if prepared is None or _contents(prepared.sources) != prepared.sources:
        return None
    return prepared.config, prepared.db
