"""Benchmarks: each compares with a baseline measured in the same run; results go to release/benchmarks/."""

from __future__ import annotations

import os
import platform


def machine() -> dict[str, object]:
    """What every result records about where it ran: a busy machine explains a slow number."""
    return {
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
        "platform": platform.platform(),
        "load_average_1m": round(os.getloadavg()[0], 2),
    }
