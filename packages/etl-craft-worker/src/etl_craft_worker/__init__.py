"""The etl-craft worker agent (`etl-craft worker`): claims task attempts of a pool from the PostgreSQL
queue and runs each in its own task process (agent.py), after registration.py checked the Engine DB."""

from __future__ import annotations

__version__ = "0.1.0"
