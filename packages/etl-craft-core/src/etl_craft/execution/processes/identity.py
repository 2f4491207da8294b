"""Process identity and process-group control (POSIX; birth identities from Linux /proc).

A PID can be reused, so a process is identified by its PID plus its birth identity: the boot id and
its start time in clock ticks. Nothing is signalled unless both still match.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import socket
from dataclasses import dataclass
from functools import cache


@cache
def boot_id() -> str:
    try:
        with open("/proc/sys/kernel/random/boot_id", encoding="ascii") as fh:
            return fh.read().strip()[:8]
    except OSError:
        return "noboot"


def process_start(pid: int) -> str | None:
    """The birth identity of a live process, or None when there is no such process."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as fh:
            stat = fh.read()
    except OSError:
        return None
    # Field 22 (starttime) counts from the field after the command, which may hold spaces or ")".
    fields = stat[stat.rindex(")") + 2 :].split()
    if fields[0] == "Z":  # a zombie has ended; only its exit status is left to collect
        return None
    return f"{boot_id()}:{fields[19]}"


def is_alive(pid: int, start: str | None) -> bool:
    return start is not None and process_start(pid) == start


@dataclass(frozen=True)
class OwnerId:
    """`<host>:<pid>:<process start>:<8 hex>`: who holds a lease, and how to check it is still alive."""

    host: str
    pid: int
    start: str
    token: str

    def __str__(self) -> str:
        return f"{self.host}:{self.pid}:{self.start}:{self.token}"

    @classmethod
    def parse(cls, text: str) -> OwnerId | None:
        parts = text.split(":")
        if len(parts) != 5:
            return None
        host, pid, boot, ticks, token = parts
        try:
            return cls(host, int(pid), f"{boot}:{ticks}", token)
        except ValueError:
            return None

    def verifiably_dead(self) -> bool:
        """True only for an owner on this host whose process is gone (or was replaced)."""
        return self.host == socket.gethostname() and not is_alive(self.pid, self.start)


@cache
def my_owner_id() -> OwnerId:
    pid = os.getpid()
    return OwnerId(socket.gethostname(), pid, process_start(pid) or "noboot:0", secrets.token_hex(4))


def descendants(pid: int) -> list[int]:
    """Every live descendant of a process, read from /proc (children of children included)."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", encoding="ascii", errors="replace") as fh:
                stat = fh.read()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2 :].split()
        if fields[0] != "Z":
            children.setdefault(int(fields[1]), []).append(int(entry))
    found, stack = [], [pid]
    while stack:
        for child in children.get(stack.pop(), []):
            found.append(child)
            stack.append(child)
    return found


def signal_group(pid: int, start: str | None, sig: int) -> bool:
    """Signal the process group a task process leads, after checking it is still the same process."""
    if not is_alive(pid, start):
        return False
    try:
        os.killpg(pid, sig)
    except ProcessLookupError:
        # The child may not have become a group leader yet; signal the process itself.
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, sig)
    except PermissionError:
        return False
    return True


def group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except (ProcessLookupError, PermissionError):
        return False
    return True
