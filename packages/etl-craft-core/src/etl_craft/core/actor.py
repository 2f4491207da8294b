"""Who is acting: resolved once per command and carried by every Engine DB connection.

The CLI resolves the human from ETL_CRAFT_ACTOR / ETL_CRAFT_ACTOR_KIND (else user@host, HUMAN) and
scopes it with `acting_as`; work outside any scope acts as SYSTEM.
"""

from __future__ import annotations

import contextvars
import getpass
import os
import socket
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass

from etl_craft.core.enums import ActorKind
from etl_craft.core.errors import ConfigurationError
from etl_craft.core.text import has_control

MAX_ACTOR_LENGTH = 128


@dataclass(frozen=True)
class Actor:
    name: str
    kind: ActorKind

    def to_json(self) -> dict[str, str]:
        return {"name": self.name, "kind": self.kind.value}


def host_name() -> str:
    return socket.gethostname()


def system_actor() -> Actor:
    return Actor(f"etl-craft@{host_name()}", ActorKind.SYSTEM)


_current: contextvars.ContextVar[Actor | None] = contextvars.ContextVar("etl_craft_actor", default=None)


def current_actor() -> Actor:
    """The actor of the innermost `acting_as` scope, else SYSTEM."""
    return _current.get() or system_actor()


@contextmanager
def acting_as(actor: Actor) -> Iterator[Actor]:
    token = _current.set(actor)
    try:
        yield actor
    finally:
        _current.reset(token)


def _check_name(name: str, variable: str) -> str:
    if not name.strip():
        raise ConfigurationError(
            f"environment variable {variable}",
            found="an empty value",
            expected="a name such as alice@laptop or github:alice",
            remedy=f"set {variable} to who is acting, or unset it to use user@host",
        )
    if len(name) > MAX_ACTOR_LENGTH:
        raise ConfigurationError(
            f"environment variable {variable}",
            found=f"{len(name)} characters",
            expected=f"at most {MAX_ACTOR_LENGTH}",
            remedy=f"shorten {variable}",
        )
    if has_control(name):  # C0 and C1 controls, bidi overrides, bytes that are not UTF-8
        raise ConfigurationError(
            f"environment variable {variable}",
            found=f"{name!r}, which holds control characters",
            expected="printable UTF-8 text",
            remedy=f"remove the control characters from {variable}",
        )
    return name


def resolve_actor(environ: Mapping[str, str] | None = None) -> Actor:
    """The acting identity of a command, from ETL_CRAFT_ACTOR and ETL_CRAFT_ACTOR_KIND."""
    env = os.environ if environ is None else environ
    raw_name = env.get("ETL_CRAFT_ACTOR")
    if raw_name is None:
        try:
            user = getpass.getuser()
        except (KeyError, OSError):
            user = str(os.getuid())
        name = f"{user}@{host_name()}"
    else:
        name = _check_name(raw_name, "ETL_CRAFT_ACTOR")
    raw_kind = env.get("ETL_CRAFT_ACTOR_KIND", ActorKind.HUMAN.value)
    try:
        kind = ActorKind(raw_kind.strip().upper())
    except ValueError:
        raise ConfigurationError(
            "environment variable ETL_CRAFT_ACTOR_KIND",
            found=repr(raw_kind),
            expected="one of " + ", ".join(k.value for k in ActorKind),
            remedy="set it to one of those kinds or unset it (HUMAN)",
        ) from None
    return Actor(name, kind)
