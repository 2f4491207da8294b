"""Imported only by the local provider's fork server, as its last preload: importing it prepares the
project for the task processes the fork server will fork (warm_start.py)."""

import gc

from etl_craft.execution.processes import warm_start

warm_start.load_main_from_environment()
warm_start.prepare_from_environment()
# Nothing the fork server holds is garbage: left out of every collection, in a task process a
# collection never writes to (and so copies) the pages it shares with the fork server.
gc.freeze()
