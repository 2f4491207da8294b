"""Why reconciliation judges an attempt's owner gone, as the LOST message says it: never a lease time
that has not come yet."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from datetime import UTC, datetime, timedelta

import pytest

from etl_craft.execution.processes.identity import my_owner_id, process_start
from etl_craft.execution.run_loop.leases import LEASE_SECONDS
from etl_craft.execution.run_loop.reconcile import _why_gone

pytestmark = pytest.mark.unit

NOW = datetime(2026, 11, 30, 7, 0, tzinfo=UTC)
HOST = socket.gethostname()


def _dead_owner() -> str:
    """The owner id of a real process of this host that has ended."""
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    start = process_start(child.pid)
    child.kill()
    child.wait()
    return f"{HOST}:{child.pid}:{start}:0badc0de"


def test_a_dead_process_on_this_host_is_named_while_its_lease_still_runs() -> None:
    owner = _dead_owner()
    pid = owner.split(":")[1]
    later = NOW + timedelta(seconds=50)
    assert _why_gone(owner, later, NOW) == f"is gone: its process {pid} no longer runs on {HOST}"


def test_an_expired_lease_is_given_with_the_time_it_expired() -> None:
    alive = str(my_owner_id())  # this test's own process: alive, but its lease has run out
    assert os.getpid() == int(alive.split(":")[1])
    expired = NOW - timedelta(seconds=5)
    assert _why_gone(alive, expired, NOW) == "stopped renewing its lease, which expired at 2026-11-30 06:59:55Z"
    assert _why_gone(alive, NOW + timedelta(seconds=5), NOW) is None


def test_an_owner_on_another_host_gets_a_second_lease_period() -> None:
    elsewhere = "other-host:4121:boot:88231:0badc0de"
    within_grace = NOW - timedelta(seconds=LEASE_SECONDS - 1)
    assert _why_gone(elsewhere, within_grace, NOW) is None
    past_grace = NOW - timedelta(seconds=LEASE_SECONDS + 1)
    assert _why_gone(elsewhere, past_grace, NOW) == (
        f"stopped renewing its lease, which expired at {past_grace:%Y-%m-%d %H:%M:%S}Z"
    )


def test_a_claim_without_a_lease_says_so() -> None:
    assert _why_gone(str(my_owner_id()), None, NOW) == "holds it without a lease"
