"""The core commands, in the order `etl-craft --help` lists them."""

from __future__ import annotations

from etl_craft.cli.commands.engine_db import DOCTOR, INIT_DB, MIGRATE, SETUP
from etl_craft.cli.framework import Command

CORE_COMMANDS: tuple[Command, ...] = (DOCTOR, SETUP, INIT_DB, MIGRATE)
