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
otherwise it reads them itself, as it would started cold.

The fork server also loads the parent's main script (MAIN_VARIABLE) once, as `__mp_main__`:
multiprocessing runs it again in every child whose `__main__` is not that file, and CPython 3.11's
fork server, which is meant to load it once when "__main__" is preloaded, never does (it looks for a
"main_path" key that the preparation data does not have). Started from the `etl-craft` console
script, every task process ran the script again: 2 ms of CPU and 300 copied pages each.

Environment variables are the only channel there is: multiprocessing passes a fork server nothing
but module names to import, and it inherits the environment it starts with.
"""

from __future__ import annotations

import multiprocessing.spawn
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
MAIN_VARIABLE = "ETL_CRAFT_FORK_SERVER_MAIN"


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
        from etl_craft.execution.processes.task_process import rehearse  # it imports this module

        rehearse(db)
    finally:
        db.engine.dispose()
    _prepared[path] = Prepared(sources, config, db)


def name_for_fork_server(config_path: Path) -> None:
    """Name the project, and the main script its children would run again, for a fork server this
    process starts later (one already running keeps what it prepared)."""
    os.environ[CONFIG_VARIABLE] = str(config_path)
    # The very path multiprocessing will hand each child, so the child finds its __main__ is that file.
    main_path = multiprocessing.spawn.get_preparation_data("etl-craft").get("init_main_from_path")
    if main_path:
        os.environ[MAIN_VARIABLE] = main_path
    else:
        os.environ.pop(MAIN_VARIABLE, None)


def load_main_from_environment() -> None:
    """Load the main script MAIN_VARIABLE names as `__mp_main__`, as each child would otherwise."""
    path = os.environ.get(MAIN_VARIABLE)
    if not path:
        return
    try:
        multiprocessing.spawn.import_main_path(path)
    except Exception as error:  # each task process then runs it itself, as before
        print(
            f"etl-craft fork server: could not load {path} ({type(error).__name__}: {first_line(error)});"
            " each task process will run it itself",
            file=sys.stderr,
        )


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
