"""`etl-craft user create|passwd|disable`, and the check of a user's password for the HTTP API.

Passwords are stored as scrypt hashes (hashlib.scrypt, a random salt per password) with their
parameters, so the cost can be raised later while older hashes still verify. A disabled user keeps
its row (the audit trail names it) and is refused at sign-in.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from etl_craft.core.actor import MAX_ACTOR_LENGTH, Actor
from etl_craft.core.clock import utc_now
from etl_craft.core.enums import ActorKind, ApiRole
from etl_craft.core.errors import NameTakenError, ResourceNotFoundError, UsageError
from etl_craft.core.text import has_control
from etl_craft.engine.database import EngineDb
from etl_craft.engine.reads.users import user_by_name
from etl_craft.engine.records import users as user_records
from etl_craft.engine.records.actions import record_request
from etl_craft.services.access.tokens import Bearer, Refusal, check_name, parse_role
from etl_craft.services.context import OperationContext

SCRYPT_N, SCRYPT_R, SCRYPT_P = 2**14, 8, 1  # about 16 MiB and tens of milliseconds per check
MIN_PASSWORD, MAX_PASSWORD = 12, 1024
LAST_LOGIN_STEP = timedelta(minutes=1)


@dataclass(frozen=True)
class UserChange:
    user_name: str
    role: str | None
    message: str


def hash_password(password: str) -> str:
    salt = secrets.token_bytes(16)
    digest = hashlib.scrypt(password.encode("utf-8"), salt=salt, n=SCRYPT_N, r=SCRYPT_R, p=SCRYPT_P, dklen=32)
    return f"scrypt${SCRYPT_N}${SCRYPT_R}${SCRYPT_P}${salt.hex()}${digest.hex()}"


def password_matches(encoded: str, password: str) -> bool:
    try:
        kind, n, r, p, salt, expected = encoded.split("$")
        if kind != "scrypt":
            return False
        digest = hashlib.scrypt(
            password.encode("utf-8"), salt=bytes.fromhex(salt), n=int(n), r=int(r), p=int(p), dklen=len(expected) // 2
        )
    except (ValueError, MemoryError):
        return False
    return hmac.compare_digest(digest.hex(), expected)


def check_password(password: str) -> str:
    if not MIN_PASSWORD <= len(password) <= MAX_PASSWORD:
        raise UsageError(
            "the password",
            found=f"{len(password)} characters",
            expected=f"{MIN_PASSWORD} to {MAX_PASSWORD} characters",
            remedy="choose a longer passphrase (it is never shown or logged)",
        )
    return password


def _unknown(name: str) -> ResourceNotFoundError:
    return ResourceNotFoundError(
        f"user {name!r}", found="no user with this name", remedy="create it with etl-craft user create"
    )


def create_user(ctx: OperationContext, name: str, role: str, password: str) -> UserChange:
    check_name(name)
    api_role = parse_role(role)
    check_password(password)
    with ctx.db.read() as conn:
        if user_by_name(conn, name) is not None:
            raise NameTakenError(
                f"user {name!r}",
                found="a user with this name",
                expected="a new name",
                remedy=f"change its password with etl-craft user passwd --name {name}",
            )
    user_records.insert_user(
        ctx.db, name=name, password_hash=hash_password(password), role=api_role.value, actor=ctx.actor, now=utc_now()
    )
    record_request(ctx.db, ctx.actor, "user create", {"name": name, "role": api_role.value})
    return UserChange(name, api_role.value, f"user {name} ({api_role.value}) created")


def set_password(ctx: OperationContext, name: str, password: str) -> UserChange:
    check_name(name)
    check_password(password)
    now = utc_now()
    if not user_records.update_user(ctx.db, name, password_hash=hash_password(password), password_changed_at=now):
        raise _unknown(name)
    record_request(ctx.db, ctx.actor, "user passwd", {"name": name})
    return UserChange(name, None, f"user {name}: password changed")


def disable_user(ctx: OperationContext, name: str) -> UserChange:
    check_name(name)
    if not user_records.update_user(ctx.db, name, disabled_at=utc_now()):
        raise _unknown(name)
    record_request(ctx.db, ctx.actor, "user disable", {"name": name})
    return UserChange(name, None, f"user {name} disabled; the API refuses it from now on")


def sign_in(db: EngineDb, name: str, password: str, now: datetime) -> Bearer | Refusal:
    """A user's name and password judged; an accepted sign-in is recorded (LAST_LOGIN_AT)."""
    if not name.strip() or len(name) > MAX_ACTOR_LENGTH or has_control(name) or len(password) > MAX_PASSWORD:
        return Refusal("the user name or password is not right")  # no such user can exist
    with db.read() as conn:
        user = user_by_name(conn, name)
    # An unknown name costs a hash too, so timing doesn't tell which names exist.
    matches = password_matches(user.password_hash if user else hash_password(""), password)
    if user is None or not matches:
        return Refusal("the user name or password is not right")
    if user.disabled_at is not None:
        return Refusal("the account is disabled", guess=False)
    last = user.last_login_at
    if last is None or (last if last.tzinfo else last.replace(tzinfo=UTC)) <= now - LAST_LOGIN_STEP:
        user_records.update_user(db, name, last_login_at=now)  # at most once a minute, as for tokens
    return Bearer(None, Actor(user.user_name, ActorKind.HUMAN), ApiRole(user.role), now)
