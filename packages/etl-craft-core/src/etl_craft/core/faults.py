"""Fault points for crash tests: a no-op unless ETL_CRAFT_FAULT names the point.

`ETL_CRAFT_FAULT=name` raises InjectedFault at that point; `name:kill` ends the process at once with
status 137, as `kill -9` would, leaving whatever the Engine DB holds at that moment; `name:sleep:N`
pauses there for N seconds, so a race can be staged at that exact step.
"""

from __future__ import annotations

import os
import sys
import time

from etl_craft.core.errors import InjectedFault


def fault_point(name: str) -> None:
    spec = os.environ.get("ETL_CRAFT_FAULT")
    if not spec:
        return
    point, _, mode = spec.partition(":")
    if point != name:
        return
    if mode.startswith("sleep:"):
        time.sleep(float(mode.removeprefix("sleep:")))
        return
    if mode == "kill":
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(137)
    raise InjectedFault(f"fault point {name}", found="ETL_CRAFT_FAULT set", remedy="unset ETL_CRAFT_FAULT")
