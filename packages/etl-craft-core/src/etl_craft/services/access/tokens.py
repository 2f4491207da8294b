"""`etl-craft token create|list|revoke`, and the check of a presented token for the HTTP API.

A token is shown once, when created; the Engine DB keeps only its SHA-256 (so a copy of the Engine
DB holds no usable credential). The hash of a presented token is looked up by its unique index and
compared again in constant time, so the comparison leaks nothing through its timing.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from etl_craft.core.actor import MAX_ACTOR_LENGTH, Actor
from etl_craft.core.clock import utc_now
from etl_craft.core.enums import ActorKind, ApiRole
from etl_craft.core.errors import ExitCode, NameTakenError, ResourceNotFoundError, UsageError
from etl_craft.core.text import has_control
from etl_craft.engine.database import EngineDb
from etl_craft.engine.reads import api_tokens as token_reads
from etl_craft.engine.records import api_tokens as token_records
from etl_craft.engine.records.actions import record_request
from etl_craft.services.context import OperationContext

TOKEN_PREFIX = "ecft_"  # makes a leaked token easy to recognise (secret scanners, logs)
DURATION_PATTERN = r"([1-9][0-9]{0,4})([dhm])"  # the API states it in its description
_DURATION = re.compile(DURATION_PATTERN)
_UNITS = {"d": "days", "h": "hours", "m": "minutes"}


@dataclass(frozen=True)
class TokenView:
    """A token as `token list` shows it: never its value or hash."""

    token_id: int
    name: str
    role: str
    created_by: str
    created_at: datetime
    expires_at: datetime | None
    revoked_at: datetime | None
    last_used_at: datetime | None

    @classmethod
    def of(cls, row: token_reads.ApiTokenRow) -> TokenView:
        return cls(
            row.token_id,
            row.name,
            row.role,
            row.created_by,
            row.created_at,
            row.expires_at,
            row.revoked_at,
            row.last_used_at,
        )


@dataclass(frozen=True)
class CreatedToken:
    token: TokenView
    value: str  # shown this once
    message: str


@dataclass(frozen=True)
class TokenList:
    tokens: tuple[TokenView, ...]


@dataclass(frozen=True)
class RevokedToken:
    token_id: int
    name: str
    message: str
    exit_code: int = int(ExitCode.SUCCESS)


def digest(value: str) -> str:
    return hashlib.sha256(value.encode("utf-8")).hexdigest()


def check_name(name: str) -> str:
    if not name.strip() or len(name) > MAX_ACTOR_LENGTH or has_control(name):
        raise UsageError(
            "--name",
            found=repr(name[:40]),
            expected=f"a name of 1 to {MAX_ACTOR_LENGTH} printable characters, such as ci-bot",
            remedy="it becomes the actor of what the token does, so name who or what uses it",
        )
    return name


def parse_role(text: str) -> ApiRole:
    try:
        return ApiRole(text)
    except ValueError:
        raise UsageError("--role", found=repr(text), expected="one of " + ", ".join(r.value for r in ApiRole)) from None


def parse_expiry(text: str | None, now: datetime) -> datetime | None:
    """`90d`, `12h`, `30m` from now, or an ISO date or timestamp (UTC without an offset); None never expires."""
    if text is None:
        return None
    if match := _DURATION.fullmatch(text.strip()):
        return now + timedelta(**{_UNITS[match.group(2)]: int(match.group(1))})
    try:
        moment = datetime.fromisoformat(text.strip())
    except ValueError:
        moment = None
    if moment is not None:
        moment = moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)
    if moment is None or moment <= now:
        raise UsageError(
            "--expires",
            found=repr(text),
            expected="a duration such as 90d, 12h or 30m, or a future ISO date or timestamp",
            remedy="leave --expires out for a token that does not expire",
        )
    return moment


def create_token(ctx: OperationContext, name: str, role: str, expires: str | None) -> CreatedToken:
    now = utc_now()
    check_name(name)
    api_role = parse_role(role)
    expires_at = parse_expiry(expires, now)
    with ctx.db.read() as conn:
        live = [t for t in token_reads.api_tokens(conn) if t.name == name and t.revoked_at is None]
    if live:
        raise NameTakenError(
            f"API token {name!r}",
            found=f"a live token with this name (id {live[0].token_id})",
            expected="a name no live token has",
            remedy=f"revoke it first (etl-craft token revoke --token-id {live[0].token_id}) or choose another name",
        )
    value = TOKEN_PREFIX + secrets.token_urlsafe(32)
    token_id = token_records.insert_token(
        ctx.db,
        name=name,
        token_sha256=digest(value),
        role=api_role.value,
        actor=ctx.actor,
        now=now,
        expires_at=expires_at,
    )
    record_request(ctx.db, ctx.actor, "token create", {"name": name, "role": api_role.value, "expires": expires})
    view = TokenView(token_id, name, api_role.value, ctx.actor.name, now, expires_at, None, None)
    return CreatedToken(view, value, f"token {name} ({api_role.value}) created; it is shown this once")


def list_tokens(ctx: OperationContext) -> TokenList:
    with ctx.db.read() as conn:
        return TokenList(tuple(TokenView.of(row) for row in token_reads.api_tokens(conn)))


def revoke_token(ctx: OperationContext, token_id: int) -> RevokedToken:
    """Revoke one token, addressed by its id (rule 2: a name may have had several tokens over time)."""
    name = token_records.revoke_token(ctx.db, token_id, utc_now())
    if name is None:
        with ctx.db.read() as conn:
            row = token_reads.token_by_id(conn, token_id)
        raise ResourceNotFoundError(
            f"API token {token_id}",
            found="no token with this id" if row is None else f"token {row.name!r} already revoked at {row.revoked_at}",
            expected="the id of a live token",
            remedy="etl-craft token list shows every token's id and whether it is revoked",
        )
    record_request(ctx.db, ctx.actor, "token revoke", {"id": token_id, "name": name})  # "token_id" would be masked
    return RevokedToken(token_id, name, f"token {token_id} ({name}) revoked; requests with it are refused from now on")


@dataclass(frozen=True)
class Bearer:
    """The holder of an accepted token or user: the actor of what it does and the role it may use."""

    token_id: int | None  # None for a user
    actor: Actor
    role: ApiRole
    last_used_at: datetime | None


@dataclass(frozen=True)
class Refusal:
    """Why presented credentials are not accepted (never the credentials themselves). `guess`: a
    wrong password or unknown name, which the API counts towards its limit of failed sign-ins."""

    reason: str
    guess: bool = True


def authenticate(db: EngineDb, presented: str, now: datetime) -> Bearer | Refusal:
    """A presented token judged: unknown, revoked, expired, or accepted as its name and role.

    The name is the actor with kind HUMAN: S3.I lets a token replace only the actor's name."""
    with db.read() as conn:
        row = token_reads.token_by_hash(conn, digest(presented))
    if row is None or not hmac.compare_digest(row.token_sha256, digest(presented)):
        return Refusal("the token is not known")
    if row.revoked_at is not None:
        return Refusal("the token was revoked")
    expires_at = row.expires_at
    if expires_at is not None and (expires_at if expires_at.tzinfo else expires_at.replace(tzinfo=UTC)) <= now:
        return Refusal("the token expired")
    return Bearer(row.token_id, Actor(row.name, ActorKind.HUMAN), ApiRole(row.role), row.last_used_at)


def record_use(db: EngineDb, bearer: Bearer, now: datetime) -> None:
    if bearer.token_id is not None:
        token_records.record_use(db, bearer.token_id, now)
