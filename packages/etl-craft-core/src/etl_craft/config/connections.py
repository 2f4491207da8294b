"""The Engine section, and the login rules every connection profile with a login follows.

The Engine DB and a warehouse with a login (PostgreSQL's, through its dialect) share the rules, kept
in one table so the connection code never has to check them again. Modes this release cannot verify
(oauth, sso, sts) are refused by name rather than half-supported. The Warehouse section is read in
`config.warehouses`, with its dialect.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from etl_craft.config.dialects import ENGINE_FORMS, EngineForm, engine_form
from etl_craft.config.layout import BlockSpec, open_section
from etl_craft.config.model import ConnectionProfile
from etl_craft.config.urls import shown_url
from etl_craft.config.values import Context, Reader, normalise_choice, show
from etl_craft.core.errors import ConfigurationError

AUTH_MODES = ("password", "key_file", "token")
UNSUPPORTED_AUTH_MODES = ("oauth", "sso", "sts")
LOGIN_KEYS = ("user", "auth_mode", "secret", "key_file", "cert_file")

# auth_mode -> (required keys, optional keys); None is trust or peer login (no password).
AUTH_FIELDS: dict[str | None, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "password": (("user", "secret"), ()),
    "key_file": (("user", "key_file"), ("cert_file", "secret")),
    "token": (("user", "secret"), ()),
    None: ((), ("user",)),
}

_AUTH_HINT = (
    "it belongs to auth_mode oauth, sso or sts, which this release does not support (supported: "
    + ", ".join(AUTH_MODES)
    + ")"
)
AUTH_HINTS = {key: _AUTH_HINT for key in ("client_id", "token_url", "scope", "issuer", "region", "role_arn")}

ENGINE_SPEC = BlockSpec(
    "Engine",
    ("Profile", "Name", "jdbc_url", "schema", *LOGIN_KEYS),
    hints=AUTH_HINTS,
)


def refuser(reader: Reader, key: str) -> Callable[..., ConfigurationError]:
    def refuse(what: str | None = None, **parts: str | None) -> ConfigurationError:
        return reader.error(key, what, **parts)

    return refuse


def _check_name(reader: Reader, form: EngineForm) -> str | None:
    """The optional Name, which must agree with the kind of database the URL names."""
    setting = reader.get("Name")
    if setting is None:
        return None
    text, variable = reader.resolve(setting)
    name = reader.choice("Name", tuple(f.display_name for f in ENGINE_FORMS.values()))
    if name != form.display_name:
        raise name_mismatch(reader, show(text, variable), form.display_name, form.display_name)
    return name


def name_mismatch(reader: Reader, found: str, database: str, expected: str) -> ConfigurationError:
    """A Name that names another database than jdbc_url does."""
    return reader.error(
        "Name",
        f"does not match jdbc_url, which names a {database} database",
        found=found,
        expected=f"Name: {expected} (or no Name)",
        remedy="correct Name or jdbc_url so they name the same database",
    )


def _auth_mode(reader: Reader) -> str | None:
    setting = reader.get("auth_mode")
    if setting is None:
        # A secret without a mode is a password; no secret means trust or peer login.
        return "password" if reader.has("secret") else None
    text, variable = reader.resolve(setting)
    if normalise_choice(text, UNSUPPORTED_AUTH_MODES):
        raise reader.error(
            "auth_mode",
            f"{text} is not supported in this release",
            found=show(text, variable),
            expected="auth_mode " + ", ".join(AUTH_MODES) + " (or none, for trust or peer login)",
            remedy="use a supported mode; oauth, sso and sts return in a later release",
        )
    return reader.choice("auth_mode", AUTH_MODES)


def with_login(reader: Reader, profile: ConnectionProfile) -> ConnectionProfile:
    """The profile with its PostgreSQL login fields, checked against its auth_mode."""
    mode = _auth_mode(reader)
    required, optional = AUTH_FIELDS[mode]
    label = f"auth_mode {mode}" if mode else "no auth_mode and no secret (trust or peer login)"
    for key in required:
        if not reader.has(key):
            raise reader.missing(key, expected=f"{', '.join(required)} for {label}")
    for key in ("user", "secret", "key_file", "cert_file"):
        if reader.has(key) and key not in required + optional:
            remedy = f"remove {key}" + (", or set auth_mode: key_file" if mode is None and key != "secret" else "")
            raise reader.error(
                key,
                f"is not used by {label}",
                expected=", ".join(required + optional) or "no login keys",
                remedy=remedy,
            )
    return replace(
        profile,
        auth_mode=mode,
        user=reader.text("user"),
        secret_var=reader.secret_var("secret"),
        key_file=reader.path("key_file"),
        cert_file=reader.path("cert_file"),
    )


def login_text(profile: ConnectionProfile) -> str:
    """A profile's login in one phrase, for doctor: its auth_mode and user."""
    mode = profile.auth_mode or "trust or peer (no secret)"
    return f"{mode}" + (f" as {profile.user}" if profile.user else "")


def refuse_keys(reader: Reader, keys: tuple[str, ...], why: str) -> None:
    for key in reader.present(keys):
        raise reader.error(key, why, remedy=f"remove {key}")


def _schema(reader: Reader, form: EngineForm) -> str:
    """A server needs an existing schema; a file has none, so `main` by convention."""
    if form.file:
        return reader.text("schema", "main") or "main"
    return reader.required_text(
        "schema", expected=f"the existing {form.title} schema that holds the Engine DB's tables"
    )


def _engine_form(reader: Reader, url: str) -> EngineForm:
    form = engine_form(url)
    if form is None:
        raise reader.error(
            "jdbc_url",
            found=shown_url(url),
            expected=" or ".join(f.url_form for f in ENGINE_FORMS.values()),
            remedy="use a SQLite file for one machine or PostgreSQL for several",
        )
    return form


def parse_engine(ctx: Context, body: object, default_profile: str | None) -> ConnectionProfile:
    reader = open_section(ctx, ENGINE_SPEC, body, default_profile)
    url = reader.required_text("jdbc_url", expected=" or ".join(f.url_form for f in ENGINE_FORMS.values()))
    form = _engine_form(reader, url)
    target = form.parse(url, ctx.resolve_path, refuser(reader, "jdbc_url"))
    profile = ConnectionProfile(
        section="Engine",
        profile=reader.profile_block,
        name=_check_name(reader, form),
        jdbc_url=target.url,
        schema=_schema(reader, form),
        url_files=target.url_files,
    )
    if form.file:
        refuse_keys(reader, LOGIN_KEYS, f"is not used: a {form.title} file has no login")
        return profile
    return with_login(reader, profile)
